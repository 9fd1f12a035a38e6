package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The answer direction of the Responses pair: a chat-completion answer or
// chunk stream becomes the Responses API object or events the client asked
// for (responses_openai.go holds the request direction).

type chatAnswer struct {
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Message struct {
			// Content is a string, or a list of content parts: an omni
			// backend (vllm_omni) answers with image_url parts.
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage           *chatUsage      `json:"usage"`
	RoutingMetadata json.RawMessage `json:"routing_metadata"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) responses() map[string]any {
	if u == nil {
		return nil
	}
	var cached, reasoning int64
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		reasoning = u.CompletionTokensDetails.ReasoningTokens
	}
	return map[string]any{
		"input_tokens": u.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": cached},
		"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning},
		"total_tokens": u.PromptTokens + u.CompletionTokens,
	}
}

// response is the Responses API object for r in a given state.
func (r *ResponsesRequest) response(status string, created int64, model string, output []any, usage map[string]any, incomplete string) map[string]any {
	if model == "" {
		model = r.Model
	}
	var details any
	if incomplete != "" {
		details = map[string]any{"reason": incomplete}
	}
	text := r.Text
	if text == nil {
		text = json.RawMessage(`{"format":{"type":"text"}}`)
	}
	toolChoice := r.ToolChoice
	if toolChoice == nil {
		toolChoice = json.RawMessage(`"auto"`)
	}
	tools := r.Tools
	if tools == nil {
		tools = json.RawMessage(`[]`)
	}
	metadata := r.Metadata
	if metadata == nil {
		metadata = json.RawMessage(`{}`)
	}
	reasoning := r.Reasoning
	if reasoning == nil {
		reasoning = json.RawMessage(`{"effort":null,"summary":null}`)
	}
	if output == nil {
		output = []any{}
	}
	var previous any
	if r.PreviousResponseID != "" {
		previous = r.PreviousResponseID
	}
	return map[string]any{
		"id": r.ID, "object": "response", "created_at": created, "status": status, "model": model,
		"output": output, "usage": usage, "error": nil, "incomplete_details": details,
		"instructions": r.Instructions, "max_output_tokens": r.MaxOutputTokens,
		"temperature": r.Temperature, "top_p": r.TopP, "parallel_tool_calls": r.ParallelToolCalls,
		"tool_choice": toolChoice, "tools": tools, "text": text, "metadata": metadata, "reasoning": reasoning,
		"previous_response_id": previous, "store": r.Store, "truncation": "disabled",
	}
}

// incompleteReason maps a chat finish_reason to the response status and
// incomplete_details.reason.
func incompleteReason(finish string) (status, reason string) {
	switch finish {
	case "length":
		return "incomplete", "max_output_tokens"
	case "content_filter":
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

func messageItem(id, text, status string) map[string]any {
	return map[string]any{"id": id, "type": "message", "status": status, "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// imageGenerationItem is the output item of one image of the answer: result
// is the image in base64 (from a data URL), format its output_format. An
// image the backend gave by URL has no base64 the gateway could give
// without fetching it (it never does): result is empty and url says where
// it is (not an OpenAI field).
func imageGenerationItem(id string, img answerImage, status string) map[string]any {
	it := map[string]any{"id": id, "type": "image_generation_call", "status": status, "result": img.b64}
	if img.format != "" {
		it["output_format"] = img.format
	}
	if img.url != "" {
		it["url"] = img.url
	}
	return it
}

// answerImage is an image part of a chat answer.
type answerImage struct {
	b64, format string // a data URL's payload and image subtype
	url         string // an image given by reference instead
}

// answerContent reads a chat answer's content: a string, or content parts
// (text parts joined in order, image_url parts as images); null is empty.
func answerContent(raw json.RawMessage) (string, []answerImage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("the answer's content is neither a string nor a list of content parts")
	}
	var text strings.Builder
	var images []answerImage
	for i, p := range parts {
		switch p.Type {
		case "text", "output_text":
			text.WriteString(p.Text)
		case "image_url":
			img, err := readImage(p.ImageURL.URL)
			if err != nil {
				return "", nil, fmt.Errorf("content part %d: %w", i, err)
			}
			images = append(images, img)
		default:
			return "", nil, fmt.Errorf("content part %d has type %q, which has no Responses output item here (text and image_url do)", i, p.Type)
		}
	}
	return text.String(), images, nil
}

// readImage splits a data URL (data:image/png;base64,…) into its base64
// payload and format; any other URL is kept as a reference.
func readImage(u string) (answerImage, error) {
	if u == "" {
		return answerImage{}, fmt.Errorf("an image_url part has no url")
	}
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return answerImage{url: u}, nil
	}
	meta, payload, ok := strings.Cut(rest, ",")
	mime, enc, _ := strings.Cut(meta, ";")
	format, isImage := strings.CutPrefix(mime, "image/")
	if !ok || !isImage || enc != "base64" {
		return answerImage{}, fmt.Errorf("an image_url part's data URL is not a base64 image (data:image/<format>;base64,…)")
	}
	return answerImage{b64: payload, format: format}, nil
}

func functionCallItem(id, callID, name, args, status string) map[string]any {
	return map[string]any{"id": id, "type": "function_call", "status": status, "call_id": callID, "name": name, "arguments": args}
}

// ChatToResponse translates a chat.completion body into the Responses API
// object answering r. routing_metadata, when present, is kept.
func ChatToResponse(body []byte, r *ResponsesRequest) ([]byte, error) {
	var a chatAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("the chat answer is not a chat.completion: %w", err)
	}
	if len(a.Choices) == 0 {
		return nil, fmt.Errorf("the chat answer has no choices")
	}
	c := a.Choices[0]
	var output []any
	text, images, err := answerContent(c.Message.Content)
	if err != nil {
		return nil, err
	}
	if text != "" || len(c.Message.ToolCalls) == 0 && len(images) == 0 {
		output = append(output, messageItem(newID("msg_"), text, "completed"))
	}
	for _, img := range images {
		output = append(output, imageGenerationItem(newID("ig_"), img, "completed"))
	}
	for _, tc := range c.Message.ToolCalls {
		output = append(output, functionCallItem(newID("fc_"), tc.ID, tc.Function.Name, tc.Function.Arguments, "completed"))
	}
	status, reason := incompleteReason(c.FinishReason)
	resp := r.response(status, a.Created, a.Model, output, a.Usage.responses(), reason)
	if len(a.RoutingMetadata) > 0 {
		resp["routing_metadata"] = a.RoutingMetadata
	}
	return json.Marshal(resp)
}

// ResponseEvent is one server-sent event of a streamed response.
type ResponseEvent struct {
	Name string
	Data []byte
}

// ResponsesStream translates chat.completion.chunk data into the Responses
// API's streaming events. It is not safe for concurrent use.
type ResponsesStream struct {
	r       *ResponsesRequest
	seq     int
	created int64
	model   string
	started bool
	// text is the message item, when one is open.
	textID  string
	text    strings.Builder
	textIdx int
	calls   []*streamCall
	// byIndex maps a chat tool_calls index to its call.
	byIndex map[int]*streamCall
	output  []any
	finish  string
	usage   map[string]any
	ended   bool
	final   []byte // the response of response.completed (or .incomplete)
}

type streamCall struct {
	id, callID, name string
	args             strings.Builder
	outputIndex      int
}

// NewResponsesStream starts translating the stream answering r; created is
// the response's Unix time.
func NewResponsesStream(r *ResponsesRequest, created int64) *ResponsesStream {
	return &ResponsesStream{r: r, created: created, byIndex: map[int]*streamCall{}}
}

func (s *ResponsesStream) emit(out []ResponseEvent, name string, fields map[string]any) []ResponseEvent {
	fields["type"] = name
	fields["sequence_number"] = s.seq
	s.seq++
	b, _ := json.Marshal(fields)
	return append(out, ResponseEvent{Name: name, Data: b})
}

type streamChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			// Content is a string, or content parts (an omni backend
			// streams its images as image_url parts).
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// Chunk translates one chunk's data (or [DONE]) into events. [DONE] gives
// the closing events of every open item and response.completed (or
// response.incomplete); an error chunk gives an error event.
func (s *ResponsesStream) Chunk(data []byte) ([]ResponseEvent, error) {
	if s.ended {
		return nil, nil
	}
	var out []ResponseEvent
	if !s.started {
		s.started = true
		initial := s.r.response("in_progress", s.created, s.model, nil, nil, "")
		out = s.emit(out, "response.created", map[string]any{"response": initial})
		out = s.emit(out, "response.in_progress", map[string]any{"response": initial})
	}
	if string(data) == "[DONE]" {
		return s.finishAll(out), nil
	}
	var c streamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("a chat chunk is not JSON: %w", err)
	}
	if c.Error != nil {
		s.ended = true
		code := c.Error.Type
		if c.Error.Code != nil {
			code = *c.Error.Code
		}
		return s.emit(out, "error", map[string]any{"code": code, "message": c.Error.Message, "param": nil}), nil
	}
	if c.Model != "" {
		s.model = c.Model
	}
	if c.Usage != nil {
		s.usage = c.Usage.responses()
	}
	for _, ch := range c.Choices {
		d, images, err := answerContent(ch.Delta.Content)
		if err != nil {
			return nil, err
		}
		if d != "" {
			if s.textID == "" {
				s.textID = newID("msg_")
				s.textIdx = len(s.output)
				s.output = append(s.output, nil)
				out = s.emit(out, "response.output_item.added", map[string]any{"output_index": s.textIdx,
					"item": map[string]any{"id": s.textID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
				out = s.emit(out, "response.content_part.added", map[string]any{"item_id": s.textID, "output_index": s.textIdx,
					"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			}
			s.text.WriteString(d)
			out = s.emit(out, "response.output_text.delta", map[string]any{"item_id": s.textID, "output_index": s.textIdx,
				"content_index": 0, "delta": d})
		}
		for _, img := range images {
			// An image arrives whole: its item opens, generates and
			// completes at once.
			id, idx := newID("ig_"), len(s.output)
			s.output = append(s.output, nil)
			out = s.emit(out, "response.output_item.added", map[string]any{"output_index": idx,
				"item": imageGenerationItem(id, answerImage{format: img.format}, "in_progress")})
			for _, ev := range []string{"response.image_generation_call.in_progress", "response.image_generation_call.generating", "response.image_generation_call.completed"} {
				out = s.emit(out, ev, map[string]any{"item_id": id, "output_index": idx})
			}
			item := imageGenerationItem(id, img, "completed")
			s.output[idx] = item
			out = s.emit(out, "response.output_item.done", map[string]any{"output_index": idx, "item": item})
		}
		for _, tc := range ch.Delta.ToolCalls {
			call, ok := s.byIndex[tc.Index]
			if !ok {
				call = &streamCall{id: newID("fc_"), callID: tc.ID, name: tc.Function.Name, outputIndex: len(s.output)}
				s.output = append(s.output, nil)
				s.byIndex[tc.Index] = call
				s.calls = append(s.calls, call)
				out = s.emit(out, "response.output_item.added", map[string]any{"output_index": call.outputIndex,
					"item": functionCallItem(call.id, call.callID, call.name, "", "in_progress")})
			}
			if tc.Function.Arguments != "" {
				call.args.WriteString(tc.Function.Arguments)
				out = s.emit(out, "response.function_call_arguments.delta", map[string]any{"item_id": call.id,
					"output_index": call.outputIndex, "delta": tc.Function.Arguments})
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
		}
	}
	return out, nil
}

func (s *ResponsesStream) finishAll(out []ResponseEvent) []ResponseEvent {
	s.ended = true
	if s.textID != "" {
		text := s.text.String()
		out = s.emit(out, "response.output_text.done", map[string]any{"item_id": s.textID, "output_index": s.textIdx, "content_index": 0, "text": text})
		out = s.emit(out, "response.content_part.done", map[string]any{"item_id": s.textID, "output_index": s.textIdx, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		item := messageItem(s.textID, text, "completed")
		s.output[s.textIdx] = item
		out = s.emit(out, "response.output_item.done", map[string]any{"output_index": s.textIdx, "item": item})
	}
	for _, c := range s.calls {
		args := c.args.String()
		out = s.emit(out, "response.function_call_arguments.done", map[string]any{"item_id": c.id, "output_index": c.outputIndex, "arguments": args})
		item := functionCallItem(c.id, c.callID, c.name, args, "completed")
		s.output[c.outputIndex] = item
		out = s.emit(out, "response.output_item.done", map[string]any{"output_index": c.outputIndex, "item": item})
	}
	if s.output == nil {
		// An empty answer still has its (empty) message, as the whole answer does.
		id := newID("msg_")
		s.output = []any{messageItem(id, "", "completed")}
	}
	status, reason := incompleteReason(s.finish)
	name := "response.completed"
	if status == "incomplete" {
		name = "response.incomplete"
	}
	resp := s.r.response(status, s.created, s.model, s.output, s.usage, reason)
	s.final, _ = json.Marshal(resp)
	return s.emit(out, name, map[string]any{"response": resp})
}

// Ended reports whether the stream is over ([DONE] or an error seen).
func (s *ResponsesStream) Ended() bool { return s.ended }

// Final is the response object of a stream that ended complete (its
// response.completed or response.incomplete event); nil otherwise (not
// over yet, or ended by an error).
func (s *ResponsesStream) Final() []byte { return s.final }

// StoredInput is what the response store keeps of this turn's input: its
// input items (each with an id), a JSON array. The earlier turns are their
// own stored responses, linked by PreviousResponseID.
func (r *ResponsesRequest) StoredInput() ([]byte, error) {
	in := r.Input
	if in == nil {
		in = []json.RawMessage{}
	}
	return json.Marshal(in)
}

// TurnItems are the items one stored turn adds to its conversation: its
// input items (a JSON array, StoredInput) and, with withOutput, the output
// items of its response object.
func TurnItems(input, response []byte, withOutput bool) ([]json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, fmt.Errorf("the stored input items are not a list: %w", err)
	}
	if !withOutput {
		return items, nil
	}
	var resp struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(response, &resp); err != nil {
		return nil, fmt.Errorf("the stored response is not a response object: %w", err)
	}
	return append(items, resp.Output...), nil
}

// ResponsesBody translates a complete chat answer, a chat.completion or (with
// stream) a whole chat event stream, into the Responses API: for answers a
// front end holds whole, such as fast responses. created is the response's
// Unix time for a stream. final is the response object (for the response
// store), nil when the stream ended in an error.
func ResponsesBody(body []byte, stream bool, r *ResponsesRequest, created int64) (out, final []byte, err error) {
	if !stream {
		out, err = ChatToResponse(body, r)
		return out, out, err
	}
	s := NewResponsesStream(r, created)
	for _, ev := range strings.Split(string(body), "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			data, ok := strings.CutPrefix(line, "data:")
			if !ok {
				continue
			}
			events, err := s.Chunk([]byte(strings.TrimPrefix(data, " ")))
			if err != nil {
				return nil, nil, err
			}
			out = AppendEvents(out, events)
		}
	}
	if !s.Ended() {
		out = AppendEvents(out, s.finishAll(nil))
	}
	return out, s.Final(), nil
}

// AppendEvents appends events in server-sent-event form to dst.
func AppendEvents(dst []byte, events []ResponseEvent) []byte {
	for _, ev := range events {
		dst = fmt.Appendf(dst, "event: %s\ndata: %s\n\n", ev.Name, ev.Data)
	}
	return dst
}
