package translate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/junction-router/junction/internal/translate"
)

func TestChatToResponseIncompleteWithToolCalls(t *testing.T) {
	_, r, err := translate.ResponsesToChat([]byte(`{"model":"MoM","input":"hi","max_output_tokens":5}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := translate.ChatToResponse([]byte(`{"id":"c","object":"chat.completion","created":7,"model":"small",
	  "choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"part",
	    "tool_calls":[{"id":"call_9","type":"function","function":{"name":"f","arguments":"{}"}}]}}],
	  "usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8},"routing_metadata":{"selected_model":"small"}}`), r)
	if err != nil {
		t.Fatal(err)
	}
	var resp responses.Response
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != "incomplete" || resp.IncompleteDetails.Reason != "max_output_tokens" || resp.OutputText() != "part" ||
		len(resp.Output) != 2 || resp.Output[1].Type != "function_call" || resp.Output[1].CallID != "call_9" ||
		resp.Usage.OutputTokens != 5 || resp.CreatedAt != 7 || resp.Model != "small" {
		t.Fatalf("%s", out)
	}
	if !strings.Contains(string(out), `"routing_metadata":{"selected_model":"small"}`) {
		t.Fatalf("routing_metadata is kept: %s", out)
	}
	if _, err := translate.ChatToResponse([]byte(`{"choices":[]}`), r); err == nil {
		t.Fatal("an answer without choices cannot be a response")
	}
}

func TestResponsesStreamToolCallsAndError(t *testing.T) {
	_, r, _ := translate.ResponsesToChat([]byte(`{"model":"m","input":"hi","stream":true}`))
	s := translate.NewResponsesStream(r, 1)
	var names []string
	var completed responses.Response
	for _, c := range []string{
		`{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":4,"total_tokens":6}}`,
		`[DONE]`,
	} {
		evs, err := s.Chunk([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			names = append(names, ev.Name)
			if ev.Name == "response.completed" {
				var e responses.ResponseCompletedEvent
				if err := json.Unmarshal(ev.Data, &e); err != nil {
					t.Fatal(err)
				}
				completed = e.Response
			}
		}
	}
	want := "response.created response.in_progress response.output_item.added response.function_call_arguments.delta " +
		"response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done response.completed"
	if strings.Join(names, " ") != want {
		t.Fatalf("events %v", names)
	}
	if len(completed.Output) != 1 || completed.Output[0].Arguments.OfString != `{"a":1}` || completed.Usage.TotalTokens != 6 {
		t.Fatalf("completed %+v", completed)
	}
	if !s.Ended() {
		t.Fatal("[DONE] ends the stream")
	}

	s = translate.NewResponsesStream(r, 1)
	evs, err := s.Chunk([]byte(`{"error":{"message":"boom","type":"upstream_error","code":null}}`))
	if err != nil || evs[len(evs)-1].Name != "error" || !s.Ended() {
		t.Fatalf("%v %v", evs, err)
	}
}

// TestChatToResponseImages: an omni backend's content parts become a
// message and image_generation_call items; an image by URL keeps its URL;
// parts that cannot be output items are refused, saying which.
func TestChatToResponseImages(t *testing.T) {
	_, r, err := translate.ResponsesToChat([]byte(`{"model":"MoM","input":"draw"}`))
	if err != nil {
		t.Fatal(err)
	}
	answer := func(content string) []byte {
		return []byte(`{"model":"img","created":1,"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":` + content + `}}]}`)
	}
	out, err := translate.ChatToResponse(answer(`[{"type":"image_url","image_url":{"url":"data:image/webp;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://img.example/cat.png"}}]`), r)
	if err != nil {
		t.Fatal(err)
	}
	var resp responses.Response
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.OutputText() != "" {
		t.Fatalf("images only make no message item: %s", out)
	}
	if a := resp.Output[0].AsImageGenerationCall(); a.Result != "AAAA" || a.OutputFormat != "webp" {
		t.Fatalf("data URL image %+v", a)
	}
	if b := resp.Output[1].AsImageGenerationCall(); b.Result != "" || !strings.Contains(string(out), `"url":"https://img.example/cat.png"`) {
		t.Fatalf("URL image %s", out)
	}
	for content, want := range map[string]string{
		`[{"type":"image_url","image_url":{"url":"data:text/plain,hi"}}]`: "not a base64 image",
		`[{"type":"image_url","image_url":{}}]`:                           "has no url",
		`[{"type":"input_audio","input_audio":{}}]`:                       `type "input_audio"`,
		`{"text":"x"}`: "neither a string nor a list",
	} {
		if _, err := translate.ChatToResponse(answer(content), r); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", content, err, want)
		}
	}
}

// TestImageItemsInHistory: an earlier turn's image_generation_call goes
// back to the backend as a note in an assistant message (any model may
// answer the next turn), and a client may send one as input.
func TestImageItemsInHistory(t *testing.T) {
	chat, _, err := translate.ResponsesToChat([]byte(`{"model":"MoM","input":[
	  {"role":"user","content":"draw a cat"},
	  {"type":"image_generation_call","id":"ig_1","status":"completed","result":"AAAA","output_format":"png"},
	  {"role":"user","content":"now a dog"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(chat, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 3 || req.Messages[1]["role"] != "assistant" || req.Messages[1]["content"] != "[image generated: ig_1, png]" {
		t.Fatalf("messages %v", req.Messages)
	}
}
