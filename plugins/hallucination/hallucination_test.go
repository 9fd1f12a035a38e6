package hallucination_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/builtintest"
	"github.com/junction-router/junction/plugins/hallucination"
	"github.com/junction-router/junction/recipes"
)

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"detector":"nli"}`:                          "configuration.detector",
		`{"detector":"lexical","external_model":"j"}`: "configuration.external_model",
		`{"external_model":"a:b"}`:                    "configuration.external_model",
		`{"action":"explode"}`:                        "configuration.action",
		`{"max_claims":33}`:                           "configuration.max_claims",
		`{"max_claims":2,"min_unsupported":3}`:        "configuration.min_unsupported",
		`{"min_overlap":1.5}`:                         "configuration.min_overlap",
		`{"max_context_chars":10}`:                    "configuration.max_context_chars",
		`{"block_status":302}`:                        "configuration.block_status",
		`{"header":"Bad Header"}`:                     "configuration.header",
		`{"min_claim_words":0.5}`:                     "configuration.min_claim_words",
	} {
		if _, err := hallucination.ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", cfg, err, want)
		}
	}
	c, err := hallucination.ParseConfig(nil)
	if err != nil || c.Detector != "judge" || c.Action != "warn" || c.Binding() != "nli" || c.MaxClaims != 8 {
		t.Fatalf("defaults %+v %v", c, err)
	}
}

func TestEvaluate(t *testing.T) {
	c, _ := hallucination.ParseConfig([]byte(`{"min_unsupported":2}`))
	ctx := []string{"Refunds are accepted within 30 days of purchase."}
	answer := "Refunds are accepted within 30 days of purchase. Members also get free shipping worldwide."
	var asked []string
	judge := func(premise, hypothesis string) (string, error) {
		asked = append(asked, hypothesis)
		if strings.Contains(hypothesis, "shipping") {
			return hallucination.LabelContradiction, nil
		}
		return hallucination.LabelEntailment, nil
	}
	ch, err := c.Evaluate(answer, ctx, judge)
	if err != nil || len(ch.Claims) != 2 || len(ch.Unsupported) != 1 || ch.Flagged || len(asked) != 2 {
		t.Fatalf("%+v %v", ch, err)
	}
	if v := c.HeaderValue(ch, "judge"); v != "supported; claims=2; unsupported=1; detector=judge; spans=49-90" {
		t.Fatalf("header %q", v)
	}
	// Lexical: no judge.
	ch, _ = c.Evaluate(answer, ctx, nil)
	if len(ch.Unsupported) != 1 || ch.Unsupported[0].Start != 49 {
		t.Fatalf("lexical %+v", ch)
	}
	// A judge that fails fails the check.
	if _, err := c.Evaluate(answer, ctx, func(string, string) (string, error) { return "", errors.New("down") }); err == nil {
		t.Fatal("no error")
	}
	// The premise is bounded.
	c, _ = hallucination.ParseConfig([]byte(`{"max_context_chars":100}`))
	var premiseLen int
	ch, _ = c.Evaluate(answer, []string{strings.Repeat("context words ", 1000)}, func(p, h string) (string, error) {
		premiseLen = len(p)
		return hallucination.LabelNeutral, nil
	})
	if premiseLen > 100 || !ch.ContextCut {
		t.Fatalf("premise of %d bytes", premiseLen)
	}
}

func TestNLIInputEscapes(t *testing.T) {
	in := hallucination.NLIInput("a \"quoted\"\npremise}", "h\u0000")
	var v struct{ Premise, Hypothesis string }
	if err := json.Unmarshal([]byte(in), &v); err != nil || v.Premise != "a \"quoted\"\npremise}" || v.Hypothesis != "h\u0000" {
		t.Fatalf("%s %v", in, err)
	}
}

func TestGrounding(t *testing.T) {
	c, _ := chat.Parse([]byte(`{"model":"m","messages":[{"role":"system","content":"instructions"},{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"tool says 42"},{"role":"system","content":"retrieved passage"}]}`))
	st := builtintest.NativeRunner(t).(*plugin.Stage)
	refs := []recipes.PluginRef{{Type: hallucination.Type, Configuration: []byte(`{"detector":"lexical","min_claim_words":1}`)}}
	req := &plugin.Request{Chat: c, Mode: plugin.ModeLive}
	ro, err := st.Response(context.Background(), refs, &plugin.Response{Request: req, Status: 200,
		Body: []byte(`{"choices":[{"message":{"content":"The tool says 42. The instructions say otherwise."}}]}`)})
	if err != nil || len(ro.Reports) != 1 {
		t.Fatalf("%+v %v", ro, err)
	}
	v := ro.Reports[0].Module.Values
	// "instructions" is in the system prompt, which is not evidence.
	if v["claims"] != "2" || v["unsupported"] != "1" || v["labels"] != "entailment,neutral" {
		t.Fatalf("%+v", v)
	}
}

// Preview checks a supplied answer and context by word overlap and calls
// nothing; hostile supplied fields fail the step.
func TestPreview(t *testing.T) {
	st := builtintest.NativeRunner(t).(*plugin.Stage)
	refs := []recipes.PluginRef{{Type: hallucination.Type, Configuration: []byte(`{"action":"block"}`)}}
	run := func(extra string) plugin.Outcome {
		c, err := chat.Parse([]byte(`{"model":"m",` + extra + `"messages":[{"role":"user","content":"q"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		out, err := st.Request(context.Background(), refs, &plugin.Request{Chat: c, Mode: plugin.ModePreview})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := run(`"supplied_answer":"Paris is the capital of Germany today.","supplied_context":["Berlin is the capital of Germany."],`)
	if out.Immediate == nil || out.Immediate.Status != 422 || out.Reports[0].Module.BackendCalls != 0 || out.Reports[0].Module.Values["detector"] != "lexical" {
		t.Fatalf("%+v %+v", out.Immediate, out.Reports)
	}
	for _, bad := range []string{`"supplied_answer":5,`, `"supplied_answer":"x","supplied_context":{"a":1},`} {
		if out := run(bad); out.Reports[0].Status != plugin.StatusFailed {
			t.Errorf("%s: %+v", bad, out.Reports)
		}
	}
	if out := run(``); out.Reports[0].Status != plugin.StatusSkipped {
		t.Errorf("nothing supplied: %+v", out.Reports)
	}
}
