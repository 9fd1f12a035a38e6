package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestResponsesThroughOpenAIClient(t *testing.T) {
	e := newEnv(t)
	params := responses.ResponseNewParams{
		Model:        "MoM",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hello there")},
	}
	resp, err := e.client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	want := `[demo:small] reasoning off (chat_template_kwargs.enable_thinking=false) — you said: "hello there"`
	if resp.OutputText() != want || resp.Status != "completed" || resp.Model != "small" || resp.Object != "response" {
		t.Fatalf("response %q %s %s", resp.OutputText(), resp.Status, resp.Model)
	}
	if resp.Usage.InputTokens == 0 || resp.Usage.TotalTokens != resp.Usage.InputTokens+resp.Usage.OutputTokens {
		t.Fatalf("usage %+v", resp.Usage)
	}
	up := e.ups["small"].last(t)
	msgs, _ := json.Marshal(up.Body["messages"])
	if string(msgs) != `[{"content":"Be brief.","role":"system"},{"content":"hello there","role":"user"}]` {
		t.Fatalf("upstream messages %s", msgs)
	}

	stream := e.client.Responses.NewStreaming(context.Background(), params)
	var text strings.Builder
	var types []string
	var done responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			done = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != want || done.OutputText() != want || done.Usage.OutputTokens == 0 {
		t.Fatalf("streamed %q, completed %q usage %+v; events %v", text.String(), done.OutputText(), done.Usage, types)
	}
	wantTypes := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	for i, w := range wantTypes {
		if types[i] != w {
			t.Fatalf("events %v", types)
		}
	}
	if types[len(types)-1] != "response.completed" {
		t.Fatalf("events %v", types)
	}
	if e.scalar("router_requests_total", map[string]string{"endpoint": "/v1/responses", "status": "200", "category": "general"}) != 2 {
		t.Fatal("responses requests are counted on their own endpoint label")
	}
}

func TestResponsesInputItemsAndTools(t *testing.T) {
	e := newEnv(t)
	call := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
	call.OfFunctionCallOutput.CallID = openai.String("call_1")
	resp, err := e.client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "big",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("weather in Paris?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfFunctionCall(`{"city":"Paris"}`, "call_1", "weather"),
			call,
		}},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name: "weather", Parameters: map[string]any{"type": "object"}, Strict: openai.Bool(false),
		}}},
		MaxOutputTokens: openai.Int(50),
		Reasoning:       responses.ReasoningParam{Effort: "high"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.OutputText(), "[demo:big]") || resp.MaxOutputTokens != 50 {
		t.Fatalf("%q %d", resp.OutputText(), resp.MaxOutputTokens)
	}
	up := e.ups["big"].last(t)
	msgs, _ := json.Marshal(up.Body["messages"])
	if string(msgs) != `[{"content":"weather in Paris?","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"weather"},"id":"call_1","type":"function"}]},{"content":"sunny","role":"tool","tool_call_id":"call_1"}]` {
		t.Fatalf("upstream messages %s", msgs)
	}
	tools, _ := json.Marshal(up.Body["tools"])
	if string(tools) != `[{"function":{"name":"weather","parameters":{"type":"object"},"strict":false},"type":"function"}]` ||
		up.Body["max_completion_tokens"] != float64(50) || up.Body["reasoning_effort"] != "high" {
		t.Fatalf("upstream body %v", up.Body)
	}
}

func TestResponsesAcrossTranslationsAndShortcuts(t *testing.T) {
	e := newEnv(t)
	// To an Anthropic-style backend: Responses → chat → Messages, and back.
	resp, err := e.client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "claude", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil || !strings.HasPrefix(resp.OutputText(), "[demo:claude anthropic]") {
		t.Fatalf("%v %q", err, resp.OutputText())
	}
	if got := e.ups["claude"].last(t); got.Path != "/v1/messages" {
		t.Fatalf("path %s", got.Path)
	}
	// A fast_response plugin answers without a backend, streamed or not.
	resp, err = e.client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "MoM", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("a canned one")},
	})
	if err != nil || resp.OutputText() != "a canned answer" {
		t.Fatalf("%v %q", err, resp.OutputText())
	}
	stream := e.client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "MoM", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("a canned one")},
	})
	var text strings.Builder
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	if stream.Err() != nil || text.String() != "a canned answer" {
		t.Fatalf("%v %q", stream.Err(), text.String())
	}
}

func TestResponsesErrors(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct{ body, param string }{
		{`{"model":"MoM","input":"hi","previous_response_id":"resp_1"}`, "previous_response_id"},
		{`{"model":"MoM","input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{`{"model":"MoM"}`, "input"},
		{`{"input":"hi"}`, "model"},
		{`{"model":"MoM","input":[{"type":"reasoning"}]}`, "input[0].type"},
		{`{"model":"MoM","input":"hi","text":{"format":{"type":"xml"}}}`, "text.format.type"},
	} {
		resp, b := e.post("/v1/responses", tt.body)
		eb := decodeError(t, b)
		if resp.StatusCode != 400 || eb.Error.Param == nil || *eb.Error.Param != tt.param {
			t.Errorf("%s: %d %s", tt.body, resp.StatusCode, b)
		}
	}
	// Routing errors keep their status and shape.
	resp, b := e.post("/v1/responses", `{"model":"nope","input":"hi"}`)
	if resp.StatusCode != 404 || decodeError(t, b).Error.Code == nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, b = e.post("/v1/responses", `{"model":"MoM","input":"write to jane@example.com"}`)
	if resp.StatusCode != 403 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	get, err := http.Get(e.gw.URL + "/v1/responses/resp_1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(get.Body)
	get.Body.Close()
	if get.StatusCode != 404 || get.Header.Get("x-should-retry") != "false" || *decodeError(t, b).Error.Code != "response_store_disabled" {
		t.Fatalf("stored responses without a store: %d %v %s", get.StatusCode, get.Header, b)
	}
}
