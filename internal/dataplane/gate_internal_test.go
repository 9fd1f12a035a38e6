package dataplane

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/plugin"
)

// replaceContent rewrites every choice's content and keeps the rest of the
// answer; an answer it cannot read is an error (the gate then withholds it
// rather than release it unchanged).
func TestReplaceContent(t *testing.T) {
	body := `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"bad","tool_calls":[{"id":"t"}]},"finish_reason":"tool_calls"},{"index":1,"message":null}],"usage":{"total_tokens":3}}`
	out, err := replaceContent([]byte(body), "[redacted] \"quoted\"\n")
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		ID      string
		Choices []struct {
			Message      map[string]any
			FinishReason string `json:"finish_reason"`
		}
		Usage map[string]int
	}
	if err := json.Unmarshal(out, &a); err != nil || a.ID != "c1" || a.Usage["total_tokens"] != 3 || len(a.Choices) != 2 {
		t.Fatalf("%s %v", out, err)
	}
	for _, c := range a.Choices {
		if c.Message["content"] != "[redacted] \"quoted\"\n" || c.Message["tool_calls"] != nil || c.FinishReason != "stop" || c.Message["role"] != "assistant" {
			t.Fatalf("choice %+v", c)
		}
	}
	for _, bad := range []string{`not json`, `{"choices":"x"}`, `[]`, `{"choices":[5]}`} {
		if _, err := replaceContent([]byte(bad), "x"); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// response_checks in routing_metadata carry only the checks' type, status
// and verdict values, escaped.
func TestAppendResponseChecks(t *testing.T) {
	b := appendResponseChecks([]byte(`{"a":1`), []plugin.Report{
		{Type: "response_jailbreak", Status: "applied", Module: &plugin.ModuleReport{Values: map[string]string{"verdict": "flagged", "score": "0.9", "other": "x"}}},
		{Type: "hallucination", Status: "failed"},
		{Type: "x\"<", Status: "applied", Module: &plugin.ModuleReport{Values: map[string]string{"unsupported_spans": "1-2\n"}}},
	})
	b = append(b, '}')
	var v struct {
		ResponseChecks []map[string]string `json:"response_checks"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.ResponseChecks) != 3 || v.ResponseChecks[0]["verdict"] != "flagged" || v.ResponseChecks[0]["other"] != "" ||
		v.ResponseChecks[2]["type"] != "x\"<" || !strings.HasSuffix(v.ResponseChecks[2]["unsupported_spans"], "\n") {
		t.Fatalf("%s %v", b, err)
	}
}
