//go:build !race

package extproc_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/extmodel/extmodeltest"
	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/pluginsys"
)

// guardJudgeEnv is an ext_proc server whose plugins run in serve's plugin
// system, with decisions (keyword = decision) checking answers with the
// fake judge as the guardrail external model.
func guardJudgeEnv(t *testing.T, judge *extmodeltest.Judge) *env {
	t.Helper()
	ctx := context.Background()
	sys, err := pluginsys.New(ctx, pluginsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	g := judge.ExternalModel("guard", "guardrail", 2)
	decisions := map[string]string{
		"guardheld":  `{type: response_jailbreak, configuration: {detector: guardrail, action: block, hold_stream: true}}`,
		"guardplain": `{type: response_jailbreak, configuration: {detector: guardrail, action: block}}`,
		"groundwarn": `{type: hallucination, configuration: {action: warn, external_model: guard}}`,
	}
	e := newEnv(t, func(o *envOptions) {
		o.opts.Plugins = sys
		o.edit = func(y string) string {
			var kw, dec strings.Builder
			for name, plugin := range decisions {
				fmt.Fprintf(&kw, "        - {name: %s, keywords: [%q]}\n", name, name)
				fmt.Fprintf(&dec, "      - name: d_%s\n        priority: 190\n        rules: {operator: OR, conditions: [{type: keyword, name: %s}]}\n        modelRefs: [{model: small}]\n        plugins: [%s]\n", name, name, plugin)
			}
			y = strings.Replace(y, "        - {name: proof, keywords: [\"prove\"]}\n", "        - {name: proof, keywords: [\"prove\"]}\n"+kw.String(), 1)
			y = strings.Replace(y, "      - name: gated\n", dec.String()+"      - name: gated\n", 1)
			return y + fmt.Sprintf("global:\n  external_models:\n    - {name: guard, model_role: guardrail, llm_model_name: fake-judge, llm_endpoint: {address: %q, port: %d, protocol: http}, llm_timeout_seconds: 2}\n",
				g.LLMEndpoint.Address, g.LLMEndpoint.Port)
		}
	})
	if err := sys.Prepare(ctx, e.runtime.Current().Document()); err != nil {
		t.Fatal(err)
	}
	return e
}

// Behind Envoy, a stream whose response_jailbreak holds it releases nothing
// before the verdict: with the mode override Envoy buffers it and the
// client gets the block's error with its status and the verdict header, or
// the stream as the backend sent it; an Envoy that does not allow the
// override gets every piece cleared and the verdict in the last; in full
// duplex the pieces are held unanswered. A non-streamed answer read whole
// gets the verdict header and a block's status.
func TestHeldStreamBehindEnvoy(t *testing.T) {
	judge := extmodeltest.New(t, extmodeltest.Answer{Content: "jailbreak"})
	e := guardJudgeEnv(t, judge)
	const guardHeader = "x-junction-response-guard"
	run := func(cfg envoytest.Config, prompt string, stream bool) *envoytest.ResponseOutcome {
		t.Helper()
		s := e.open(cfg)
		defer s.Close()
		body := userBody(prompt)
		if stream {
			body = strings.Replace(body, `"messages"`, `"stream":true,"messages"`, 1)
		}
		out, err := s.SendRequest(chat(body))
		if err != nil || out.Upstream == nil {
			t.Fatalf("%v %+v", err, out)
		}
		resp, err := s.SendResponse(e.answer(out.Upstream, 48))
		if err != nil || resp.Downstream == nil {
			t.Fatalf("%v %+v", err, resp)
		}
		return resp
	}

	// Streamed filter, override allowed: Envoy buffers the held stream.
	resp := run(answerModes["streamed"], "guardheld tell me", true)
	d := resp.Downstream
	if d.Headers.Get(":status") != "403" || !strings.HasPrefix(d.Headers.Get(guardHeader), "flagged; score=1.000; detector=guardrail; action=block") ||
		d.Headers.Get("content-type") != "application/json" || !strings.Contains(string(d.Body), "response guard flagged") || strings.Contains(string(d.Body), "tell me") {
		t.Fatalf("held stream, block: headers %v: %s", d.Headers, d.Body)
	}
	if resp.Override == nil || resp.Override.GetResponseBodyMode() != envoytest.Buffered {
		t.Fatalf("held stream: override %v", resp.Override)
	}
	asked := len(judge.Requests())

	judge.Script(extmodeltest.Answer{Content: "benign"})
	d = run(answerModes["streamed"], "guardheld tell me", true).Downstream
	if acc, done := chunksOf(t, d.Body); d.Headers.Get(":status") != "200" || !done || !strings.Contains(acc.Choices[0].Message.Content, "tell me") ||
		!strings.HasPrefix(d.Headers.Get(guardHeader), "pass") {
		t.Fatalf("held stream, pass: headers %v: %s", d.Headers, d.Body)
	}
	if len(judge.Requests()) != asked+1 {
		t.Fatalf("the guard was asked %d times for one answer", len(judge.Requests())-asked)
	}

	// No override allowed: every piece but the last goes out empty.
	judge.Script(extmodeltest.Answer{Content: "jailbreak"})
	noOverride := envoytest.Config{RequestBody: envoytest.Buffered, ResponseBody: envoytest.Streamed}
	d = run(noOverride, "guardheld tell me", true).Downstream
	if len(d.Pieces) < 2 || slices.ContainsFunc(d.Pieces[:len(d.Pieces)-1], func(p []byte) bool { return len(p) > 0 }) {
		t.Fatalf("held stream without override: pieces released before the verdict: %q", d.Pieces)
	}
	if b := string(d.Body); !strings.Contains(b, "response guard flagged") || strings.Contains(b, "tell me") || !strings.HasSuffix(b, "data: [DONE]\n\n") {
		t.Fatalf("held stream without override, block: %s", b)
	}
	judge.Script(extmodeltest.Answer{Content: "benign"})
	d = run(noOverride, "guardheld tell me", true).Downstream
	if acc, done := chunksOf(t, d.Body); !done || !strings.Contains(acc.Choices[0].Message.Content, "tell me") || len(d.Pieces[0]) != 0 {
		t.Fatalf("held stream without override, pass: %q", d.Pieces)
	}

	// Full duplex: one answer at the end.
	judge.Script(extmodeltest.Answer{Content: "jailbreak"})
	d = run(answerModes["full duplex"], "guardheld tell me", true).Downstream
	if len(d.Pieces) != 1 || !strings.Contains(string(d.Body), "response guard flagged") || strings.Contains(string(d.Body), "tell me") {
		t.Fatalf("held stream in full duplex: %q", d.Pieces)
	}

	// A non-streamed answer read whole: the verdict header and the block's
	// status go with the headers Envoy holds.
	d = run(answerModes["buffered"], "guardplain tell me", false).Downstream
	if d.Headers.Get(":status") != "403" || !strings.HasPrefix(d.Headers.Get(guardHeader), "flagged") || strings.Contains(string(d.Body), "tell me") {
		t.Fatalf("buffered answer, block: headers %v: %s", d.Headers, d.Body)
	}
	judge.Script(extmodeltest.Answer{Content: "benign"})
	d = run(answerModes["buffered"], "guardplain tell me", false).Downstream
	if d.Headers.Get(":status") != "200" || !strings.HasPrefix(d.Headers.Get(guardHeader), "pass") || !strings.Contains(string(d.Body), "tell me") {
		t.Fatalf("buffered answer, pass: headers %v: %s", d.Headers, d.Body)
	}

	// hallucination's warning header, on a grounded request.
	judge.Script(extmodeltest.Answer{Content: "neutral"})
	s := e.open(answerModes["buffered"])
	defer s.Close()
	out, err := s.SendRequest(chat(`{"model":"MoM","messages":[{"role":"system","content":"You are a support agent."},{"role":"system","content":"Context: refunds take thirty days."},{"role":"user","content":"groundwarn please repeat these words back to me"}]}`))
	if err != nil || out.Upstream == nil {
		t.Fatalf("%v %+v", err, out)
	}
	resp, err = s.SendResponse(e.answer(out.Upstream, 0))
	if err != nil || resp.Downstream == nil {
		t.Fatalf("%v %+v", err, resp)
	}
	if h := resp.Downstream.Headers.Get("x-junction-hallucination"); !strings.HasPrefix(h, "unsupported; claims=") {
		t.Fatalf("hallucination behind Envoy: header %q: %s", h, resp.Downstream.Body)
	}
}
