// Package demobackend is an in-process OpenAI-compatible chat backend for demos
// (`make run`) and tests. Its answer says which model answered and which
// reasoning settings it received, so that a user can see routing work without
// any real model:
//
//	[demo:big] reasoning on (chat_template_kwargs.thinking=true) — you said: "prove that ..."
//
// Answers are deterministic for a given request; token usage is estimated from
// the text. Options inject latency, error statuses and broken streams for tests.
//
// It must stay dependency-free of the engine: it stands in for a backend and
// knows nothing about routing.
package demobackend

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Options tune the responder. The zero value answers promptly and correctly.
type Options struct {
	// Latency is waited before the answer (before the first chunk when streaming).
	Latency time.Duration
	// ChunkDelay is waited between streamed chunks.
	ChunkDelay time.Duration
	// Status, when set and not 200, makes every chat request fail with this
	// status and an OpenAI-style error body.
	Status int
	// FailAfterChunks, when > 0, breaks a streamed answer after that many chunks
	// (the connection is aborted without [DONE]).
	FailAfterChunks int
	// Models are listed by GET /v1/models; default ["demo"].
	Models []string
	// Now gives the created timestamp; default time.Now.
	Now func() time.Time
}

// echoLimit bounds how much of the user's text the answer repeats.
const echoLimit = 200

// maxBody bounds a request body; the demo has no use for more.
const maxBody = 16 << 20

type server struct {
	opts Options
}

// New returns the responder: POST /v1/chat/completions and /chat/completions
// (OpenAI style), POST /v1/messages and /messages (Anthropic Messages API
// style), GET /v1/models and /models.
func New(opts Options) http.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(opts.Models) == 0 {
		opts.Models = []string{"demo"}
	}
	return &server{opts: opts}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch path {
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
			return
		}
		s.chat(w, r)
	case "/v1/messages", "/messages":
		if r.Method != http.MethodPost {
			writeAnthropicError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
			return
		}
		s.messages(w, r)
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use GET")
			return
		}
		s.models(w)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "no route "+r.Method+" "+r.URL.Path)
	}
}

func (s *server) models(w http.ResponseWriter) {
	type entry struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []entry `json:"data"`
	}{Object: "list"}
	for _, m := range s.opts.Models {
		out.Data = append(out.Data, entry{ID: m, Object: "model", Created: s.opts.Now().Unix(), OwnedBy: "demo"})
	}
	writeJSON(w, http.StatusOK, out)
}

// request is what the demo reads of a chat request.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort    string                     `json:"reasoning_effort"`
}

func (s *server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "could not read the body")
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a chat completion request: "+err.Error())
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "messages must not be empty")
		return
	}
	if !sleep(r, s.opts.Latency) {
		return
	}
	if s.opts.Status != 0 && s.opts.Status != http.StatusOK {
		writeError(w, s.opts.Status, "demo_error", fmt.Sprintf("the demo backend was configured to answer %d", s.opts.Status))
		return
	}
	a := answer(&req)
	id := "chatcmpl-demo-" + digest(body)
	created := s.opts.Now().Unix()
	if req.Stream {
		s.stream(w, r, &req, a, id, created)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": created,
		"model":   a.model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": a.text},
			"finish_reason": "stop",
		}},
		"usage": a.usage(),
	})
}

// stream writes the answer as chat.completion.chunk events: a role chunk, the
// text in several pieces, a finish chunk, the usage chunk when asked, [DONE].
func (s *server) stream(w http.ResponseWriter, r *http.Request, req *request, a reply, id string, created int64) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	events := []any{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, piece := range split(a.text, 5) {
		events = append(events, chunk(map[string]any{"content": piece}, nil))
	}
	events = append(events, chunk(map[string]any{}, "stop"))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		events = append(events, map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": a.model,
			"choices": []any{}, "usage": a.usage(),
		})
	}
	for i, ev := range events {
		if s.opts.FailAfterChunks > 0 && i >= s.opts.FailAfterChunks {
			// ErrAbortHandler makes net/http cut the connection without a clean
			// end, which is what a crashed backend looks like to a client.
			panic(http.ErrAbortHandler)
		}
		if i > 0 && !sleep(r, s.opts.ChunkDelay) {
			return
		}
		b, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// sleep waits d unless the request is cancelled first; it reports whether to go on.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

type reply struct {
	model            string
	text             string
	promptTokens     int
	completionTokens int
}

func (a reply) usage() map[string]int {
	return map[string]int{
		"prompt_tokens":     a.promptTokens,
		"completion_tokens": a.completionTokens,
		"total_tokens":      a.promptTokens + a.completionTokens,
	}
}

// answer builds the deterministic reply to req.
func answer(req *request) reply {
	var lastUser string
	prompt := 0
	for _, m := range req.Messages {
		text := contentText(m.Content)
		// About four characters per token, plus the per-message overhead chat
		// templates add.
		prompt += EstimateTokens(text) + 4
		if m.Role == "user" {
			lastUser = text
		}
	}
	model := req.Model
	if model == "" {
		model = "demo"
	}
	text := fmt.Sprintf("[demo:%s] %s — you said: %q", model, describeReasoning(req), truncate(lastUser, echoLimit))
	return reply{model: model, text: text, promptTokens: prompt, completionTokens: EstimateTokens(text)}
}

// describeReasoning says which reasoning settings the request carried.
func describeReasoning(req *request) string {
	var on, off []string
	keys := make([]string, 0, len(req.ChatTemplateKwargs))
	for k := range req.ChatTemplateKwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var b bool
		if json.Unmarshal(req.ChatTemplateKwargs[k], &b) != nil {
			continue
		}
		s := fmt.Sprintf("chat_template_kwargs.%s=%t", k, b)
		if b {
			on = append(on, s)
		} else {
			off = append(off, s)
		}
	}
	if req.ReasoningEffort != "" {
		on = append(on, "reasoning_effort="+req.ReasoningEffort)
	}
	switch {
	case len(on) > 0:
		return "reasoning on (" + strings.Join(append(on, off...), ", ") + ")"
	case len(off) > 0:
		return "reasoning off (" + strings.Join(off, ", ") + ")"
	}
	return "reasoning not set"
}

// contentText flattens a message content (string or array of parts).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// EstimateTokens approximates a token count as one token per four bytes,
// rounded up, which is close enough for English text and costs nothing.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// split cuts s into about n pieces at rune boundaries, so streaming has
// several content chunks.
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	size := (len(r) + n - 1) / n
	var out []string
	for i := 0; i < len(r); i += size {
		j := min(i+size, len(r))
		out = append(out, string(r[i:j]))
	}
	return out
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}
