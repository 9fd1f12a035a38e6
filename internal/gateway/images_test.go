package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

// pngBytes is a 1×1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// imageStore is the real embedded store with a vision image, a document and
// an image uploaded for another purpose.
func imageStore(t *testing.T) (st *sqlite.Store, img, doc, other storage.File) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	create := func(name, purpose, mt string, b []byte) storage.File {
		f, err := st.CreateFile(ctx, storage.NewFile{Filename: name, Purpose: purpose, MediaType: mt}, bytes.NewReader(b), 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	img = create("dot.png", "vision", "image/png", pngBytes)
	doc = create("notes.md", "assistants", "text/markdown", []byte("# notes"))
	other = create("dot2.png", "assistants", "image/png", pngBytes)
	return st, img, doc, other
}

func withFiles(f dataplane.Files) envOption { return func(c *envConfig) { c.files = f } }

func TestImageFileIDInlined(t *testing.T) {
	st, img, _, _ := imageStore(t)
	e := newEnv(t, withFiles(st))
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	for name, body := range map[string]string{
		"chat input_image": `{"model":"small","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},
			{"type":"input_image","file_id":"` + img.ID + `","detail":"low"}]}]}`,
		"chat image_url file_id": `{"model":"small","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},
			{"type":"image_url","image_url":{"file_id":"` + img.ID + `","detail":"low"}}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			resp, b := e.post("/v1/chat/completions", body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			got := e.ups["small"].last(t).Body
			part := got["messages"].([]any)[0].(map[string]any)["content"].([]any)[1].(map[string]any)
			iu, _ := part["image_url"].(map[string]any)
			if part["type"] != "image_url" || iu["url"] != want || iu["detail"] != "low" || iu["file_id"] != nil {
				t.Errorf("the upstream got %v, want an image_url part with the data URL", part)
			}
			text := got["messages"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
			if text["text"] != "what is this?" {
				t.Errorf("the text part changed: %v", text)
			}
		})
	}
	t.Run("responses", func(t *testing.T) {
		resp, b := e.post("/v1/responses", `{"model":"small","input":[{"role":"user","content":[
			{"type":"input_text","text":"describe"},{"type":"input_image","file_id":"`+img.ID+`"}]}]}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		got := e.ups["small"].last(t).Body
		part := got["messages"].([]any)[0].(map[string]any)["content"].([]any)[1].(map[string]any)
		if iu, _ := part["image_url"].(map[string]any); iu["url"] != want {
			t.Errorf("the upstream got %v", part)
		}
	})
	t.Run("same image twice", func(t *testing.T) {
		part := `{"type":"input_image","file_id":"` + img.ID + `"}`
		resp, b := e.post("/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":[`+part+`]},
			{"role":"assistant","content":"ok"},{"role":"user","content":[`+part+`,{"type":"text","text":"again"}]}]}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		msgs := e.ups["small"].last(t).Body["messages"].([]any)
		for _, i := range []int{0, 2} {
			p := msgs[i].(map[string]any)["content"].([]any)[0].(map[string]any)
			if iu, _ := p["image_url"].(map[string]any); iu["url"] != want {
				t.Errorf("message %d: %v", i, p)
			}
		}
		if msgs[1].(map[string]any)["content"] != "ok" {
			t.Errorf("the assistant message changed: %v", msgs[1])
		}
	})
}

func TestImageFileIDErrors(t *testing.T) {
	st, img, doc, other := imageStore(t)
	e := newEnv(t, withFiles(st))
	chatWith := func(id string) string {
		return `{"model":"small","messages":[{"role":"user","content":[{"type":"input_image","file_id":"` + id + `"}]}]}`
	}
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"unknown id", chatWith("file-nope"), 400, `file "file-nope" not found`},
		{"not vision", chatWith(other.ID), 400, `purpose "assistants"`},
		{"not an image", chatWith(doc.ID), 400, "is not an image (text/markdown)"},
		{"responses unknown id", `{"model":"small","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-x"}]}]}`, 400, `file "file-x" not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.ups["small"].count()
			path := "/v1/chat/completions"
			if strings.HasPrefix(tc.name, "responses") {
				path = "/v1/responses"
			}
			resp, b := e.post(path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, tc.status)
			}
			if eb := decodeError(t, b); !strings.Contains(eb.Error.Message, tc.want) || eb.Error.Type != dataplane.TypeInvalidRequest {
				t.Errorf("error %+v does not say %q", eb.Error, tc.want)
			}
			if e.ups["small"].count() != before {
				t.Error("the request went upstream")
			}
		})
	}
	t.Run("param", func(t *testing.T) {
		_, b := e.post("/v1/chat/completions", `{"model":"small","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"x"},{"type":"input_image","file_id":"file-nope"}]}]}`)
		if eb := decodeError(t, b); eb.Error.Param == nil || *eb.Error.Param != "messages[1].content[1].file_id" {
			t.Errorf("param %v", eb.Error.Param)
		}
	})
	t.Run("too large", func(t *testing.T) {
		// One image named 21 times adds up to more than 20 MiB once it is
		// over 1 MiB.
		big, err := st.CreateFile(context.Background(), storage.NewFile{Filename: "big.png", Purpose: "vision", MediaType: "image/png"},
			bytes.NewReader(bytes.Repeat([]byte{0x89}, 1<<20+1)), 0)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.TrimSuffix(strings.Repeat(`{"type":"input_image","file_id":"`+big.ID+`"},`, 20), ",")
		resp, b := e.post("/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":[`+parts+`]}]}`)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if eb := decodeError(t, b); !strings.Contains(eb.Error.Message, "20 MiB") {
			t.Errorf("%s", eb.Error.Message)
		}
	})
	t.Run("no file store", func(t *testing.T) {
		e := newEnv(t)
		resp, b := e.post("/v1/chat/completions", chatWith(img.ID))
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if eb := decodeError(t, b); !strings.Contains(eb.Error.Message, "keeps no files") {
			t.Errorf("%s", eb.Error.Message)
		}
	})
	t.Run("a file_id in text is text", func(t *testing.T) {
		body := `{"model":"small","messages":[{"role":"user","content":"what is \"file_id\" in the API?"}]}`
		resp, b := e.post("/v1/chat/completions", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if got := e.ups["small"].last(t).Body["messages"].([]any)[0].(map[string]any)["content"]; got != `what is "file_id" in the API?` {
			t.Errorf("content %v", got)
		}
	})
}
