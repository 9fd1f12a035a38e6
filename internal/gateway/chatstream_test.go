package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// readAnswer reads one answer of the chat stream: its messages up to [DONE].
func readAnswer(t *testing.T, ctx context.Context, conn *websocket.Conn) []map[string]any {
	t.Helper()
	var out []map[string]any
	for {
		typ, msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if typ != websocket.MessageText {
			t.Fatalf("a %v message", typ)
		}
		if string(msg) == streamDone {
			return out
		}
		var v map[string]any
		if err := json.Unmarshal(msg, &v); err != nil {
			t.Fatalf("message %q is not JSON: %v", msg, err)
		}
		out = append(out, v)
	}
}

// TestChatStreamWebSocket: the earlier revision's WebSocket stream at
// /v1/chat/stream answers each chat completion request message with the
// chunks an SSE stream carries and [DONE], on one connection; refusals come
// as the error body with the status; the upgrade needs the listener's key.
func TestChatStreamWebSocket(t *testing.T) {
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, "    timeout: 5s\n", "    timeout: 5s\n    api_keys: [client-key]\n", 1)
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.gw.URL, "http") + "/v1/chat/stream"
	if _, resp, err := websocket.Dial(ctx, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("upgrade without a key: %v %v", resp, err)
	}
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer client-key"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	for i, text := range []string{"hello there", "and again"} {
		req := `{"model": "MoM", "messages": [{"role": "user", "content": "` + text + `"}]}`
		if err := conn.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatal(err)
		}
		chunks := readAnswer(t, ctx, conn)
		var content strings.Builder
		for _, c := range chunks {
			if c["object"] != "chat.completion.chunk" {
				t.Fatalf("request %d: message %v is not a chunk", i, c)
			}
			for _, ch := range c["choices"].([]any) {
				if d, ok := ch.(map[string]any)["delta"].(map[string]any); ok {
					s, _ := d["content"].(string)
					content.WriteString(s)
				}
			}
		}
		if len(chunks) < 2 || content.Len() == 0 {
			t.Fatalf("request %d: %d chunks, content %q", i, len(chunks), content.String())
		}
	}
	if got := e.ups["small"].count(); got != 2 {
		t.Errorf("the small backend got %d requests, want 2", got)
	}
	if b := e.ups["small"].last(t).Body; b["stream"] != true {
		t.Errorf("the backend request is not a stream: %v", b)
	}
	// A message that is not a request is answered with an error; the
	// connection stays usable.
	if err := conn.Write(ctx, websocket.MessageText, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if ans := readAnswer(t, ctx, conn); len(ans) != 1 || ans[0]["status"] != 400.0 || ans[0]["error"].(map[string]any)["type"] != "invalid_request_error" {
		t.Fatalf("not JSON: %v", ans)
	}
	// A request the gateway refuses (personal data under a block rule).
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"model": "MoM", "messages": [{"role": "user", "content": "mail me at a@b.co"}]}`)); err != nil {
		t.Fatal(err)
	}
	if ans := readAnswer(t, ctx, conn); len(ans) != 1 || ans[0]["error"] == nil || ans[0]["status"] == 200.0 {
		t.Fatalf("blocked request: %v", ans)
	}
	// A binary message closes the connection with 1003.
	if err := conn.Write(ctx, websocket.MessageBinary, []byte{1}); err != nil {
		t.Fatal(err)
	}
	_, _, err = conn.Read(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusUnsupportedData {
		t.Errorf("after a binary message: %v (status %v)", err, st)
	}
	// A plain GET is told to upgrade.
	req, _ := http.NewRequest(http.MethodGet, e.gw.URL+"/v1/chat/stream", nil)
	req.Header.Set("Authorization", "Bearer client-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain GET: %d", resp.StatusCode)
	}
}
