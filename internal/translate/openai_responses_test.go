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
