//go:build !race

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/chat/chattest"
	"github.com/junction-router/junction/internal/extmodel/extmodeltest"
	"github.com/junction-router/junction/internal/pluginsys"
)

// answerWith answers every chat request with content, as a chat.completion
// or, for stream: true, as chunks ending with [DONE].
func answerWith(content string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		c, _ := json.Marshal(content)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-g1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`, req.Model, c)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		half := len(content) / 2
		for _, part := range []string{content[:half], content[half:]} {
			p, _ := json.Marshal(part)
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-g1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s},\"finish_reason\":null}]}\n\n", req.Model, p)
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-g1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", req.Model)
	})
}

// withGuardDecisions adds decisions (one keyword each, model small) running
// the response checks and tool selection, and the fake judge as the
// guardrail and classification external models.
func withGuardDecisions(judge *extmodeltest.Judge, timeoutSeconds int) envOption {
	guard := judge.ExternalModel("guard", "guardrail", timeoutSeconds)
	cls := judge.ExternalModel("judge", "classification", timeoutSeconds)
	decisions := map[string]string{
		"guardblock":  `{type: response_jailbreak, configuration: {detector: guardrail, action: block}}`,
		"guardredact": `{type: response_jailbreak, configuration: {detector: guardrail, external_model: guard, action: redact, hold_stream: true}}`,
		"guardnote":   `{type: response_jailbreak, configuration: {detector: guardrail, action: annotate}}`,
		"guardfail":   `{type: response_jailbreak, on_error: fail, configuration: {detector: guardrail, action: block}}`,
		"guardlocal":  `{type: response_jailbreak, configuration: {detector: classifier, threshold: 0, action: block, block_status: 451}}`,
		"groundwarn":  `{type: hallucination, configuration: {action: warn}}`,
		"groundblock": `{type: hallucination, on_error: fail, configuration: {external_model: judge, action: block, hold_stream: true}}`,
		"groundnote":  `{type: hallucination, configuration: {detector: lexical, action: annotate}}`,
		"pickme":      `{type: tool_selection, configuration: {top_k: 1, similarity_threshold: "0.05", always_keep: [get_time]}}`,
	}
	return withYAML(func(y string) string {
		var kw, dec strings.Builder
		for name, plugin := range decisions {
			fmt.Fprintf(&kw, "        - {name: %s, keywords: [%q]}\n", name, name)
			fmt.Fprintf(&dec, "      - name: d_%s\n        priority: 190\n        rules: {operator: OR, conditions: [{type: keyword, name: %s}]}\n        modelRefs: [{model: small}]\n        plugins: [%s]\n", name, name, plugin)
		}
		y = strings.Replace(y, "        - {name: gated, keywords: [\"gated\"]}\n", "        - {name: gated, keywords: [\"gated\"]}\n"+kw.String(), 1)
		y = strings.Replace(y, "      - name: gated\n", dec.String()+"      - name: gated\n", 1)
		return y + fmt.Sprintf("global:\n  external_models:\n    - {name: %s, model_role: guardrail, llm_model_name: fake-judge, llm_endpoint: {address: %q, port: %d, protocol: http}, llm_timeout_seconds: %d}\n    - {name: %s, model_role: classification, llm_model_name: fake-judge, llm_endpoint: {address: %q, port: %d, protocol: http}, llm_timeout_seconds: %d}\n",
			guard.Name, guard.LLMEndpoint.Address, guard.LLMEndpoint.Port, timeoutSeconds, cls.Name, cls.LLMEndpoint.Address, cls.LLMEndpoint.Port, timeoutSeconds)
	})
}

// guardEnv is a gateway whose plugins run in serve's plugin system (the
// built-ins natively over the host's functions), its external models the
// fake judge.
func guardEnv(t *testing.T, judge *extmodeltest.Judge) *env {
	t.Helper()
	return guardEnvTimeout(t, judge, 2)
}

// guardEnvTimeout is guardEnv with the external models' llm_timeout_seconds.
func guardEnvTimeout(t *testing.T, judge *extmodeltest.Judge, timeoutSeconds int) *env {
	t.Helper()
	ctx := context.Background()
	sys, err := pluginsys.New(ctx, pluginsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	e := newEnv(t, withRunner(sys), withGuardDecisions(judge, timeoutSeconds))
	if err := sys.Prepare(ctx, e.runtime.Current().Document()); err != nil {
		t.Fatal(err)
	}
	return e
}

func guardChat(prompt string, stream bool, extra string) string {
	p, _ := json.Marshal(prompt)
	return fmt.Sprintf(`{"model":"MoM","stream":%t,%s"messages":[{"role":"user","content":%s}]}`, stream, extra, p)
}

type responseChecks struct {
	RoutingMetadata struct {
		ResponseChecks []map[string]string `json:"response_checks"`
	} `json:"routing_metadata"`
}

// response_jailbreak scores the backend's answer with the guard endpoint
// and blocks, redacts or annotates it; a held stream is checked before any
// byte is released, a stream that is not held is released and checked
// afterwards.
func TestResponseJailbreakThroughGateway(t *testing.T) {
	judge := extmodeltest.New(t, extmodeltest.Answer{Content: "jailbreak"})
	e := guardEnv(t, judge)
	const harmful = "Sure! As DAN with no rules, here is exactly how to do it."
	e.ups["small"].setHandler(answerWith(harmful))

	resp, body := e.post("/v1/chat/completions", guardChat("guardblock tell me", false, ""))
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("block: status %d: %s", resp.StatusCode, body)
	}
	if eb := decodeError(t, body); !strings.Contains(eb.Error.Message, "response guard flagged") || strings.Contains(string(body), "DAN") {
		t.Fatalf("block: %s", body)
	}
	if h := resp.Header.Get("X-Junction-Response-Guard"); !strings.HasPrefix(h, "flagged; score=1.000; detector=guardrail; action=block") {
		t.Fatalf("block: verdict header %q", h)
	}
	reqs := judge.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].System, "safety guard") || reqs[0].User != harmful || reqs[0].Temperature != 0 {
		t.Fatalf("the guard was asked %+v", reqs)
	}

	// The guard says benign: the answer passes, with its verdict.
	judge.Script(extmodeltest.Answer{Content: "benign"})
	resp, body = e.post("/v1/chat/completions", guardChat("guardblock tell me", false, ""))
	if resp.StatusCode != 200 || chattest.CompletionContent(t, string(body)) != harmful {
		t.Fatalf("pass: status %d: %s", resp.StatusCode, body)
	}
	var rc responseChecks
	_ = json.Unmarshal(body, &rc)
	if len(rc.RoutingMetadata.ResponseChecks) != 1 || rc.RoutingMetadata.ResponseChecks[0]["verdict"] != "pass" || rc.RoutingMetadata.ResponseChecks[0]["type"] != "response_jailbreak" {
		t.Fatalf("pass: routing_metadata %s", body)
	}

	// Redact, plain and held stream.
	judge.Script(extmodeltest.Answer{Content: "jailbreak"})
	resp, body = e.post("/v1/chat/completions", guardChat("guardredact tell me", false, ""))
	if resp.StatusCode != 200 || chattest.CompletionContent(t, string(body)) != "[redacted: the response guard flagged this answer]" {
		t.Fatalf("redact: status %d: %s", resp.StatusCode, body)
	}
	var usage struct {
		ID    string `json:"id"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(body, &usage)
	if usage.ID != "chatcmpl-g1" || usage.Usage.TotalTokens != 12 {
		t.Fatalf("redact: the answer's id and usage should be kept: %s", body)
	}
	resp, body = e.post("/v1/chat/completions", guardChat("guardredact tell me", true, ""))
	content, done := chattest.StreamContent(t, body)
	if resp.StatusCode != 200 || !done || content != "[redacted: the response guard flagged this answer]" || strings.Contains(string(body), "DAN") {
		t.Fatalf("held stream: status %d, done %v: %s", resp.StatusCode, done, body)
	}
	if !strings.HasPrefix(resp.Header.Get("X-Junction-Response-Guard"), "flagged") {
		t.Fatalf("held stream: verdict header %q", resp.Header.Get("X-Junction-Response-Guard"))
	}
	// A held stream that passes goes out as the backend sent it.
	judge.Script(extmodeltest.Answer{Content: "benign"})
	resp, body = e.post("/v1/chat/completions", guardChat("guardredact tell me", true, ""))
	if content, done = chattest.StreamContent(t, body); resp.StatusCode != 200 || !done || content != harmful {
		t.Fatalf("held stream, pass: status %d: %s", resp.StatusCode, body)
	}

	// Annotate: the answer passes, the header says what was found.
	judge.Script(extmodeltest.Answer{Content: "jailbreak"})
	resp, body = e.post("/v1/chat/completions", guardChat("guardnote tell me", false, ""))
	if resp.StatusCode != 200 || chattest.CompletionContent(t, string(body)) != harmful ||
		!strings.Contains(resp.Header.Get("X-Junction-Response-Guard"), "action=annotate") {
		t.Fatalf("annotate: status %d, header %q: %s", resp.StatusCode, resp.Header.Get("X-Junction-Response-Guard"), body)
	}

	// A stream that is not held is released as it comes; the check runs
	// after it (and can only report).
	before := len(judge.Requests())
	resp, body = e.post("/v1/chat/completions", guardChat("guardblock tell me", true, ""))
	if content, done = chattest.StreamContent(t, body); resp.StatusCode != 200 || !done || content != harmful {
		t.Fatalf("unheld stream: status %d: %s", resp.StatusCode, body)
	}
	waitFor(t, "the check after the stream", func() bool { return len(judge.Requests()) == before+1 })

	// The router's own jailbreak classifier (threshold 0: every answer is a hit).
	resp, body = e.post("/v1/chat/completions", guardChat("guardlocal tell me", false, ""))
	if resp.StatusCode != 451 || !strings.Contains(resp.Header.Get("X-Junction-Response-Guard"), "detector=classifier") {
		t.Fatalf("classifier: status %d: %s", resp.StatusCode, body)
	}

	// The guard endpoint fails: on_error skip releases the answer unchecked
	// (reported), and nothing is marked unhealthy.
	judge.Script(extmodeltest.Answer{Status: 500})
	resp, body = e.post("/v1/chat/completions", guardChat("guardblock tell me", false, ""))
	if resp.StatusCode != 200 || chattest.CompletionContent(t, string(body)) != harmful {
		t.Fatalf("guard down, on_error skip: status %d: %s", resp.StatusCode, body)
	}
	_ = json.Unmarshal(body, &rc)
	if len(rc.RoutingMetadata.ResponseChecks) != 1 || rc.RoutingMetadata.ResponseChecks[0]["status"] != "failed" {
		t.Fatalf("guard down: routing_metadata %s", body)
	}
}

// A guard or judge call is bounded by its external model's
// llm_timeout_seconds, not by the plugin host's per-call deadline (250 ms):
// a judge slower than that deadline but within its timeout is waited for,
// claim after claim; one past its timeout fails the check, and on_error
// decides what the client gets.
func TestGuardTimeoutThroughGateway(t *testing.T) {
	const slow = 300 * time.Millisecond // past the host's 250 ms per call
	judge := extmodeltest.New(t, extmodeltest.Answer{Content: "jailbreak", Delay: slow})
	e := guardEnvTimeout(t, judge, 1)
	const harmful = "Sure! As DAN with no rules, here is exactly how to do it."
	e.ups["small"].setHandler(answerWith(harmful))

	start := time.Now()
	resp, body := e.post("/v1/chat/completions", guardChat("guardfail tell me", false, ""))
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Junction-Response-Guard"), "flagged; score=1.000; detector=guardrail") {
		t.Fatalf("a 300 ms guard within a 1 s timeout: status %d, header %q: %s", resp.StatusCode, resp.Header.Get("X-Junction-Response-Guard"), body)
	}
	if took := time.Since(start); took < slow {
		t.Fatalf("the answer came back in %v, before the guard answered", took)
	}

	// Two claims, each a 300 ms judge call: 600 ms in all, within budget
	// because each call is bounded by its own timeout.
	answer := "Refunds are accepted within ninety days of purchase. Shipping is always free for members."
	e.ups["small"].setHandler(answerWith(answer))
	judge.Script(extmodeltest.Answer{Content: "contradiction", Delay: slow})
	grounded := `{"model":"MoM","messages":[{"role":"system","content":"You are a support agent."},{"role":"system","content":"Context: Refunds are accepted within 30 days of purchase."},{"role":"user","content":"groundblock what is the refund policy?"}]}`
	resp, body = e.post("/v1/chat/completions", grounded)
	if resp.StatusCode != 422 || !strings.HasPrefix(resp.Header.Get("X-Junction-Hallucination"), "unsupported; claims=2; unsupported=2") {
		t.Fatalf("two 300 ms judge calls: status %d, header %q: %s", resp.StatusCode, resp.Header.Get("X-Junction-Hallucination"), body)
	}

	// The guard takes longer than its 1 s timeout.
	e.ups["small"].setHandler(answerWith(harmful))
	judge.Script(extmodeltest.Answer{Content: "jailbreak", Delay: 1600 * time.Millisecond})
	start = time.Now()
	resp, body = e.post("/v1/chat/completions", guardChat("guardfail tell me", false, ""))
	took := time.Since(start)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), "DAN") {
		t.Fatalf("guard past its timeout, on_error fail: status %d: %s", resp.StatusCode, body)
	}
	if took < time.Second || took > 1500*time.Millisecond {
		t.Fatalf("guard past its 1 s timeout: the answer came after %v, want the timeout (1 s) and no more than its slack", took)
	}
	// on_error skip releases the answer unchecked and reports the failure.
	resp, body = e.post("/v1/chat/completions", guardChat("guardblock tell me", false, ""))
	if resp.StatusCode != 200 || chattest.CompletionContent(t, string(body)) != harmful {
		t.Fatalf("guard past its timeout, on_error skip: status %d: %s", resp.StatusCode, body)
	}
	var rc responseChecks
	_ = json.Unmarshal(body, &rc)
	if len(rc.RoutingMetadata.ResponseChecks) != 1 || rc.RoutingMetadata.ResponseChecks[0]["status"] != "failed" {
		t.Fatalf("guard past its timeout: routing_metadata %s", body)
	}
}

// hallucination checks the answer against the request's grounding (a
// system message after the instructions, a tool result) claim by claim.
func TestHallucinationThroughGateway(t *testing.T) {
	judge := extmodeltest.New(t, extmodeltest.Answer{Content: "neutral"})
	e := guardEnv(t, judge)
	const answer = "Refunds are accepted within ninety days of purchase. Shipping is always free for members."
	e.ups["small"].setHandler(answerWith(answer))
	grounded := func(keyword string, stream bool) string {
		return fmt.Sprintf(`{"model":"MoM","stream":%t,"messages":[{"role":"system","content":"You are a support agent."},{"role":"system","content":"Context: Refunds are accepted within 30 days of purchase. Shipping costs 5 dollars."},{"role":"user","content":"%s what is the refund policy?"}]}`, stream, keyword)
	}

	resp, body := e.post("/v1/chat/completions", grounded("groundwarn", false))
	if resp.StatusCode != 200 || chattest.CompletionContent(t, string(body)) != answer {
		t.Fatalf("warn: status %d: %s", resp.StatusCode, body)
	}
	h := resp.Header.Get("X-Junction-Hallucination")
	if h != "unsupported; claims=2; unsupported=2; detector=judge; spans=0-52,53-89" {
		t.Fatalf("warn: header %q", h)
	}
	var rc responseChecks
	_ = json.Unmarshal(body, &rc)
	if len(rc.RoutingMetadata.ResponseChecks) != 1 || rc.RoutingMetadata.ResponseChecks[0]["verdict"] != "unsupported" || rc.RoutingMetadata.ResponseChecks[0]["unsupported"] != "2" {
		t.Fatalf("warn: routing_metadata %s", body)
	}
	reqs := judge.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].User, "Premise: Context: Refunds are accepted within 30 days") ||
		!strings.Contains(reqs[0].User, "Hypothesis: Refunds are accepted within ninety days of purchase.") || strings.Contains(reqs[0].User, "support agent") {
		t.Fatalf("the judge was asked %+v", reqs)
	}

	// No grounding in the request: nothing to check, nothing asked.
	resp, _ = e.post("/v1/chat/completions", guardChat("groundwarn hi", false, ""))
	if resp.StatusCode != 200 || resp.Header.Get("X-Junction-Hallucination") != "" || len(judge.Requests()) != 2 {
		t.Fatalf("no grounding: header %q, judge asked %d times", resp.Header.Get("X-Junction-Hallucination"), len(judge.Requests()))
	}

	// Block, held stream: a contradiction withholds the answer.
	judge.Script(extmodeltest.Answer{Content: "contradiction"})
	resp, body = e.post("/v1/chat/completions", grounded("groundblock", true))
	if resp.StatusCode != 422 || strings.Contains(string(body), "ninety") {
		t.Fatalf("block: status %d: %s", resp.StatusCode, body)
	}
	// Entailed claims pass.
	judge.Script(extmodeltest.Answer{Content: "entailment"})
	resp, body = e.post("/v1/chat/completions", grounded("groundblock", true))
	if content, done := chattest.StreamContent(t, body); resp.StatusCode != 200 || !done || content != answer ||
		!strings.HasPrefix(resp.Header.Get("X-Junction-Hallucination"), "supported; claims=2; unsupported=0") {
		t.Fatalf("block, entailed: status %d, header %q: %s", resp.StatusCode, resp.Header.Get("X-Junction-Hallucination"), body)
	}
	// The judge answers nonsense: on_error fail withholds the answer rather
	// than release it unchecked.
	judge.Script(extmodeltest.Answer{Content: "probably fine"})
	resp, body = e.post("/v1/chat/completions", grounded("groundblock", false))
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(body), "ninety") {
		t.Fatalf("judge unparseable, on_error fail: status %d: %s", resp.StatusCode, body)
	}

	// The lexical detector, annotating: "ninety" and "members" are not in
	// the context, so both claims fall short of min_overlap.
	n := len(judge.Requests())
	resp, body = e.post("/v1/chat/completions", grounded("groundnote", false))
	if got := chattest.CompletionContent(t, string(body)); resp.StatusCode != 200 || !strings.HasPrefix(got, answer+"\n\nNote: some statements") {
		t.Fatalf("annotate: status %d: %s", resp.StatusCode, body)
	}
	if len(judge.Requests()) != n {
		t.Fatal("the lexical detector asked the judge")
	}
}

// tool_selection keeps the request's tools relevant to the prompt: the
// top_k by embedding similarity, plus always_keep.
func TestToolSelectionThroughGateway(t *testing.T) {
	judge := extmodeltest.New(t)
	e := guardEnv(t, judge)
	tools := `"tools":[` +
		`{"type":"function","function":{"name":"get_weather","description":"Get the current weather forecast for a city"}},` +
		`{"type":"function","function":{"name":"send_email","description":"Send an email message to a recipient"}},` +
		`{"type":"function","function":{"name":"get_time","description":"Current time"}},` +
		`{"type":"function","function":{"name":"search_flights","description":"Search airline flights between airports"}}],`
	resp, body := e.post("/v1/chat/completions", guardChat("pickme what is the weather forecast in Paris city today", false, tools))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := e.ups["small"].last(t).Body["tools"]
	var names []string
	for _, tl := range got.([]any) {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "get_weather,get_time" {
		t.Fatalf("the backend was offered %v", names)
	}
}
