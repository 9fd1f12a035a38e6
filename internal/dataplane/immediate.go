package dataplane

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
)

// DoneEvent ends every chat-completion event stream.
var DoneEvent = []byte("data: [DONE]\n\n")

// ImmediateAnswer is a plugin's answer (fast_response, a cache hit) in the
// shape the client asked for: a chat.completion, or chunk events ending with
// [DONE] when it streams. No model ran, so usage is zero. A status of 400 or
// more is written as an OpenAI-style error carrying the content as its
// message, since clients read the message of an error body, not its choices.
// h (which may be nil) gets the routing headers and the content type.
func ImmediateAnswer(rt *Routing, req *chat.Request, imm *plugin.Immediate, id string, start time.Time, h http.Header) *Answer {
	rt.Processing = time.Since(start)
	rt.Tools = CountTools(req.Fields["tools"])
	status := imm.Status
	if status == 0 {
		status = http.StatusOK
	}
	model := imm.Model
	if model == "" {
		model = rt.Result.Model
	}
	if model == "" {
		model = req.Model
	}
	if h == nil {
		h = make(http.Header, 12)
	}
	rt.SetClientHeaders(h)
	if status >= 400 {
		return ErrorAnswer(NewError(status, TypePluginResponse, imm.Content), h)
	}
	cid := "chatcmpl-" + id
	created := time.Now().Unix()
	usage := map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
	// An answer that calls tools (a cached one) carries them as the model
	// sent them and finishes with tool_calls; its content is null when empty.
	var content any = imm.Content
	finish := "stop"
	if len(imm.ToolCalls) > 0 {
		finish = "tool_calls"
		if imm.Content == "" {
			content = nil
		}
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": content}
		if len(imm.ToolCalls) > 0 {
			msg["tool_calls"] = imm.ToolCalls
		}
		b, _ := json.Marshal(map[string]any{
			"id": cid, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       msg,
				"finish_reason": finish,
			}},
			"usage":            usage,
			"routing_metadata": rt.Metadata(),
		})
		h.Set("Content-Type", "application/json")
		return &Answer{Status: status, Header: h, Body: append(b, '\n')}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	events := []any{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	if imm.Content != "" || len(imm.ToolCalls) == 0 {
		events = append(events, chunk(map[string]any{"content": imm.Content}, nil))
	}
	if len(imm.ToolCalls) > 0 {
		events = append(events, chunk(map[string]any{"tool_calls": indexedToolCalls(imm.ToolCalls)}, nil))
	}
	events = append(events, chunk(map[string]any{}, finish))
	if req.IncludeUsage {
		events = append(events, map[string]any{
			"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": usage,
		})
	}
	var body []byte
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		body = append(body, "data: "...)
		body = append(body, b...)
		body = append(body, "\n\n"...)
	}
	body = append(body, DoneEvent...)
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	return &Answer{Status: status, Header: h, Body: body}
}

// indexedToolCalls are tool calls as one stream delta carries them: each
// with its index in the message's list.
func indexedToolCalls(raw json.RawMessage) []map[string]json.RawMessage {
	var calls []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &calls) // checked by the plugin stage
	for i, c := range calls {
		c["index"] = json.RawMessage(strconv.Itoa(i))
	}
	return calls
}

// ModelEntry is one entry of GET /v1/models.
type ModelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList answers GET /v1/models: MoM first (it is what most clients
// should ask for), then every configured model with its provider as owner.
// auto is an accepted alias of MoM but is not listed, so a model picker shows
// one routing entry. created is when the front end started: the
// configuration has no dates. h (which may be nil) gets the content type.
func ModelList(gen *engine.Generation, created time.Time, h http.Header) *Answer {
	if gen == nil {
		return ErrorAnswer(NoGeneration(), h)
	}
	out := struct {
		Object string       `json:"object"`
		Data   []ModelEntry `json:"data"`
	}{Object: "list", Data: modelEntries(gen, created)}
	b, err := json.Marshal(out)
	if err != nil {
		return ErrorAnswer(NewError(http.StatusInternalServerError, TypeServer, "could not encode the model list"), h)
	}
	if h == nil {
		h = make(http.Header, 2)
	}
	h.Set("Content-Type", "application/json")
	return &Answer{Status: http.StatusOK, Header: h, Body: append(b, '\n')}
}

// modelEntries is the model list: MoM, then the configured models.
func modelEntries(gen *engine.Generation, created time.Time) []ModelEntry {
	ts := created.Unix()
	out := []ModelEntry{{ID: engine.ModelMoM, Object: "model", Created: ts, OwnedBy: "junction"}}
	for _, m := range gen.Document().Providers.Models {
		owner := "junction"
		if len(m.BackendRefs) > 0 && m.BackendRefs[0].Provider != "" {
			owner = m.BackendRefs[0].Provider
		}
		out = append(out, ModelEntry{ID: m.Name, Object: "model", Created: ts, OwnedBy: owner})
	}
	return out
}

// Model answers GET /v1/models/{id}: the model list's entry for id (MoM or
// a configured model), or OpenAI's 404 for a model that is not there.
func Model(gen *engine.Generation, id string, created time.Time, h http.Header) *Answer {
	if gen == nil {
		return ErrorAnswer(NoGeneration(), h)
	}
	for _, m := range modelEntries(gen, created) {
		if m.ID == id {
			return jsonAnswer(m, h)
		}
	}
	return noRetry(ErrorAnswer(NewError(http.StatusNotFound, TypeInvalidRequest,
		"The model '"+id+"' does not exist; GET /v1/models lists the models served here").WithParam("model").WithCode("model_not_found"), h))
}
