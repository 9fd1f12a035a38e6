package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/junction-router/junction/internal/dataplane"
)

// The earlier revision's optional WebSocket stream at /v1/chat/stream. The
// spec names the path only; the message shapes are ours and follow the SSE
// stream of /v1/chat/completions, so a client reads the same objects:
//
//   - each text message the client sends is one chat completion request body
//     (stream is forced on); requests on one connection are answered in turn;
//   - the answer is one text message per streamed event: each
//     chat.completion.chunk object as the SSE data lines carry it, then the
//     text [DONE];
//   - a request the gateway refuses (or an upstream error) is answered with
//     its error body, {"error": {...}} plus "status" (the HTTP status the
//     same POST would have had), then [DONE]; the connection stays open;
//   - a binary message closes the connection with 1003 (unsupported data).
//
// Each request runs through the whole chat completions path (the listener's
// api_keys, rate limits, routing, plugins, metrics under
// /v1/chat/completions), with the upgrade request's headers: a key sent at
// the upgrade authorises every request of the connection. The upgrade is
// refused with 401 without a valid key, as the POST would be.

const (
	endpointChatStream = "/v1/chat/stream"
	// streamDone ends each answer, as data: [DONE] ends an SSE stream.
	streamDone = "[DONE]"
)

// chatStream serves GET /v1/chat/stream.
func (s *Server) chatStream(w http.ResponseWriter, r *http.Request) {
	listener := s.opts.Listener
	if rt := s.opts.Runtime; rt != nil {
		listener = s.listenerFor(rt.Current())
	}
	if keys := listener.APIKeys; len(keys) > 0 {
		got, ok := bearer(r.Header.Get("Authorization"))
		match := 0
		for _, k := range keys {
			match |= subtle.ConstantTimeCompare([]byte(got), []byte(k))
		}
		if !ok || match != 1 {
			writeError(w, dataplane.NewError(http.StatusUnauthorized, dataplane.TypeAuthentication,
				"missing or incorrect API key: send it as 'Authorization: Bearer <key>' with the upgrade request").WithCode("invalid_api_key"))
			return
		}
	}
	if r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, dataplane.NewError(http.StatusBadRequest, dataplane.TypeInvalidRequest,
			"/v1/chat/stream is a WebSocket: send GET with Upgrade: websocket (or POST /v1/chat/completions with stream: true for SSE)"))
		return
	}
	conn, err := websocket.Accept(w, r, nil) // same-origin only: browsers elsewhere cannot ride a user's key
	if err != nil {
		return // Accept answered the handshake's error
	}
	conn.SetReadLimit(listener.BodyLimit())
	defer conn.CloseNow()
	// The connection's context: r.Context() is not to be used after Accept.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hdr := r.Header.Clone()
	for _, h := range []string{"Connection", "Upgrade", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", "Sec-Websocket-Protocol"} {
		hdr.Del(h)
	}
	hdr.Set("Content-Type", "application/json")
	for {
		typ, msg, err := conn.Read(ctx)
		if err != nil {
			return // closed by the client, or over the read limit (closed with 1009)
		}
		if typ != websocket.MessageText {
			conn.Close(websocket.StatusUnsupportedData, "send each chat completion request as a text message")
			return
		}
		if err := s.streamOne(ctx, conn, r, hdr, msg); err != nil {
			return
		}
	}
}

// streamOne answers one request message on conn.
func (s *Server) streamOne(ctx context.Context, conn *websocket.Conn, up *http.Request, hdr http.Header, msg []byte) error {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(msg, &body); err != nil {
		return sendError(ctx, conn, http.StatusBadRequest, dataplane.NewError(http.StatusBadRequest, dataplane.TypeInvalidRequest,
			"each message must be a chat completion request as a JSON object: "+err.Error()))
	}
	body["stream"] = json.RawMessage("true")
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpointChat, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header = hdr.Clone()
	req.RemoteAddr, req.Host = up.RemoteAddr, up.Host
	sw := &wsWriter{ctx: ctx, conn: conn, header: http.Header{}}
	s.ServeHTTP(sw, req)
	if sw.err != nil {
		return sw.err
	}
	if !sw.sse {
		// A JSON answer: the error the POST would have had.
		var v map[string]any
		if json.Unmarshal(sw.buf.Bytes(), &v) != nil {
			v = map[string]any{"error": map[string]any{"message": strings.TrimSpace(sw.buf.String()), "type": dataplane.TypeServer}}
		}
		v["status"] = sw.status
		b, _ := json.Marshal(v)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			return err
		}
	} else if err := sw.flushEvents(true); err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, []byte(streamDone))
}

func sendError(ctx context.Context, conn *websocket.Conn, status int, e *dataplane.Error) error {
	var v map[string]any
	_ = json.Unmarshal(e.Body(), &v)
	v["status"] = status
	b, _ := json.Marshal(v)
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, []byte(streamDone))
}

// wsWriter is the ResponseWriter one request message is served into: an
// SSE answer goes out event by event (each data payload one message, the
// [DONE] event left to streamOne), anything else is kept for streamOne.
type wsWriter struct {
	ctx    context.Context
	conn   *websocket.Conn
	header http.Header
	status int
	sse    bool
	buf    bytes.Buffer
	err    error
}

func (w *wsWriter) Header() http.Header { return w.header }

func (w *wsWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	w.sse = code == http.StatusOK && strings.HasPrefix(w.header.Get("Content-Type"), "text/event-stream")
}

func (w *wsWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	w.buf.Write(b)
	if w.sse {
		if err := w.flushEvents(false); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// Flush: events go out as they complete, in Write.
func (w *wsWriter) Flush() {}

// flushEvents sends each complete SSE event's data (the rest when final).
func (w *wsWriter) flushEvents(final bool) error {
	for {
		data := w.buf.Bytes()
		i := bytes.Index(data, []byte("\n\n"))
		if i < 0 {
			if !final || len(bytes.TrimSpace(data)) == 0 {
				return nil
			}
			i = len(data)
		}
		ev := data[:i]
		var payload []byte
		for _, line := range bytes.Split(ev, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(payload) > 0 {
					payload = append(payload, '\n')
				}
				payload = append(payload, bytes.TrimPrefix(d, []byte(" "))...)
			}
		}
		w.buf.Next(min(i+2, len(data)))
		if len(payload) == 0 || string(payload) == streamDone {
			continue // a comment, or the stream's own end (streamOne sends it)
		}
		if err := w.conn.Write(w.ctx, websocket.MessageText, payload); err != nil {
			w.err = err
			return err
		}
	}
}

var (
	_ http.ResponseWriter = (*wsWriter)(nil)
	_ http.Flusher        = (*wsWriter)(nil)
)
