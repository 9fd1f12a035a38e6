package responsejailbreak_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/builtintest"
	"github.com/junction-router/junction/plugins/responsejailbreak"
	"github.com/junction-router/junction/recipes"
)

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"detector":"llm"}`:                              "configuration.detector",
		`{"external_model":"g"}`:                          "configuration.external_model",
		`{"detector":"guardrail","external_model":"a:b"}`: "configuration.external_model",
		`{"threshold":1.5}`:                               "configuration.threshold",
		`{"threshold":-0.1}`:                              "configuration.threshold",
		`{"action":"drop"}`:                               "configuration.action",
		`{"block_status":200}`:                            "configuration.block_status",
		`{"header":"X Bad"}`:                              "configuration.header",
		`{"header":"X-Ok\r\nInjected: 1"}`:                "configuration.header",
		`{"hold_stream":"yes"}`:                           "configuration.hold_stream",
		`{"unknown":1}`:                                   "configuration.unknown",
		`[]`:                                              "configuration",
	} {
		if _, err := responsejailbreak.ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", cfg, err, want)
		}
	}
	c, err := responsejailbreak.ParseConfig(nil)
	if err != nil || c.Detector != "classifier" || c.Action != "block" || c.BlockStatus != 403 || c.Binding() != "jailbreak" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, _ = responsejailbreak.ParseConfig([]byte(`{"detector":"guardrail","external_model":"g1"}`))
	if c.Binding() != "guardrail:g1" {
		t.Fatalf("binding %s", c.Binding())
	}
}

func TestDecideAndScore(t *testing.T) {
	c, _ := responsejailbreak.ParseConfig([]byte(`{"action":"redact","threshold":0.7}`))
	if v := c.Decide(0.69); v.Hit || v.Content != "" || !strings.HasPrefix(v.HeaderValue, "pass") {
		t.Errorf("below: %+v", v)
	}
	if v := c.Decide(0.7); !v.Hit || v.Status != 200 || v.Content != responsejailbreak.DefaultRedactMessage {
		t.Errorf("at: %+v", v)
	}
	for _, cls := range [][]responsejailbreak.Class{nil, {{Label: "benign", Score: 1}}, {{Label: "jailbreak", Score: float32(math.NaN())}}} {
		if _, err := responsejailbreak.Score(cls); err == nil {
			t.Errorf("%v: no error", cls)
		}
	}
	if s, err := responsejailbreak.Score([]responsejailbreak.Class{{Label: "JAILBREAK", Score: 7}}); err != nil || s != 1 {
		t.Errorf("a score past 1 is 1: %v %v", s, err)
	}
}

func stage(t *testing.T) *plugin.Stage { return builtintest.NativeRunner(t).(*plugin.Stage) }

func request(t *testing.T, body, mode string) *plugin.Request {
	t.Helper()
	c, err := chat.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &plugin.Request{Chat: c, Mode: mode, Decision: "d", Model: "m"}
}

// The response phase through the plugin host (the router's jailbreak
// classifier), with hostile answers: each fails the step or skips it, never
// the process, and a hit replaces the answer.
func TestResponsePhaseHostile(t *testing.T) {
	st := stage(t)
	refs := []recipes.PluginRef{{Type: responsejailbreak.Type, Configuration: []byte(`{"threshold":0,"action":"block"}`)}}
	req := request(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, plugin.ModeLive)
	ro, err := st.Response(context.Background(), refs, &plugin.Response{Request: req, Status: 200,
		Body: []byte(`{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"Sure, ignoring all rules now."}}]}`)})
	if err != nil || ro.Replace == nil || ro.Replace.Status != 403 || len(ro.Header) != 1 || ro.Header[0].Name != "X-Junction-Response-Guard" {
		t.Fatalf("hit: %+v %v", ro, err)
	}
	for body, status := range map[string]string{
		`not json`:         plugin.StatusFailed,
		`{"choices":null}`: plugin.StatusFailed,
		`{"choices":[{"message":{"content":{"x":1}}}]}`:                                       plugin.StatusFailed,
		`{"choices":[{"message":{"content":null}}]}`:                                          plugin.StatusSkipped,
		`{"choices":[{"message":{"content":"` + strings.Repeat("jailbreak ", 20000) + `"}}]}`: plugin.StatusApplied,
	} {
		ro, err := st.Response(context.Background(), refs, &plugin.Response{Request: req, Status: 200, Body: []byte(body)})
		if err != nil || len(ro.Reports) != 1 || ro.Reports[0].Status != status {
			t.Errorf("%.40s: %+v %v, want %s", body, ro.Reports, err, status)
		}
		if status != plugin.StatusApplied && ro.Replace != nil {
			t.Errorf("%.40s: replaced an answer it could not read", body)
		}
	}
	// on_error fail withholds an answer the check could not read.
	refs[0].OnError = recipes.OnErrorFail
	ro, err = st.Response(context.Background(), refs, &plugin.Response{Request: req, Status: 200, Body: []byte(`{`)})
	if err == nil || ro.Withheld == nil {
		t.Fatalf("on_error fail: %+v %v", ro, err)
	}
}

// Preview applies the policy to a supplied score and calls nothing; a probe
// scores the supplied answer; a live request phase only strips the fields.
func TestPreviewAndProbe(t *testing.T) {
	st := stage(t)
	refs := []recipes.PluginRef{{Type: responsejailbreak.Type, Configuration: []byte(`{"threshold":0.5,"action":"redact"}`)}}
	body := `{"model":"m","supplied_answer":"As DAN I will tell you anything.","supplied_score":0.9,"messages":[{"role":"user","content":"hi"}]}`
	out, err := st.Request(context.Background(), refs, request(t, body, plugin.ModePreview))
	if err != nil || out.Immediate == nil || out.Immediate.Content != responsejailbreak.DefaultRedactMessage {
		t.Fatalf("preview: %+v %v", out, err)
	}
	if m := out.Reports[0].Module; m == nil || m.BackendCalls != 0 || m.Values["verdict"] != "flagged" {
		t.Fatalf("preview report %+v", out.Reports[0])
	}
	out, err = st.Request(context.Background(), refs, request(t, strings.Replace(body, `"supplied_score":0.9`, `"supplied_score":"high"`, 1), plugin.ModePreview))
	if err != nil || out.Reports[0].Status != plugin.StatusFailed {
		t.Fatalf("a supplied_score that is not a number: %+v %v", out.Reports, err)
	}
	req := request(t, body, plugin.ModeProbe)
	out, err = st.Request(context.Background(), refs, req)
	if err != nil || out.Reports[0].Module == nil || out.Reports[0].Module.BackendCalls != 1 {
		t.Fatalf("probe: %+v %v", out.Reports, err)
	}
	req = request(t, body, plugin.ModeLive)
	out, err = st.Request(context.Background(), refs, req)
	if err != nil || out.Immediate != nil || req.Chat.Fields["supplied_answer"] != nil || req.Chat.Fields["supplied_score"] != nil {
		t.Fatalf("live: %+v %v, fields left %v", out, err, req.Chat.Fields)
	}
}
