package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/junction-router/junction/engine/chat"
	"github.com/junction-router/junction/engine/plugin"
)

// immediate writes a plugin's answer (fast_response, a cache hit) in the shape
// the client asked for: a chat.completion, or chunk events when it streams. No
// model ran, so usage is zero. A status of 400 or more is written as an
// OpenAI-style error carrying the content as its message, since clients read
// the message of an error body, not its choices.
func (x *exchange) immediate(rt *routing, req *chat.Request, imm *plugin.Immediate) {
	rt.processing = time.Since(x.start)
	rt.tools = countTools(req.Fields["tools"])
	status := imm.Status
	if status == 0 {
		status = http.StatusOK
	}
	model := imm.Model
	if model == "" {
		model = rt.res.Model
	}
	if model == "" {
		model = req.Model
	}
	rt.set(x.w.Header())
	if status >= 400 {
		writeError(x.w, newError(status, "plugin_response", imm.Content))
		return
	}
	id := "chatcmpl-" + x.id
	created := time.Now().Unix()
	usage := map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
	if !req.Stream {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": imm.Content},
				"finish_reason": "stop",
			}},
			"usage":            usage,
			"routing_metadata": routingMetadata(rt),
		})
		x.w.Header().Set("Content-Type", "application/json")
		x.w.WriteHeader(status)
		_, _ = x.w.Write(append(b, '\n'))
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	events := []any{
		chunk(map[string]any{"role": "assistant", "content": ""}, nil),
		chunk(map[string]any{"content": imm.Content}, nil),
		chunk(map[string]any{}, "stop"),
	}
	if req.IncludeUsage {
		events = append(events, map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": usage,
		})
	}
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(status)
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(x.w, "data: %s\n\n", b); err != nil {
			x.clientGone()
			return
		}
	}
	_, _ = x.w.Write(doneEvent)
	x.w.Flush()
}
