package extproc_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/plugin/builtintest"
)

// Behind Envoy, a buffered non-streamed answer is checked before it is
// released: a response_jailbreak hit (the router's jailbreak classifier,
// threshold 0) replaces the body with the block's error, and
// routing_metadata carries the verdict when it passes.
func TestResponseJailbreakBehindEnvoy(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.opts.Plugins = builtintest.NativeRunner(t)
		o.edit = func(y string) string {
			y = strings.Replace(y, "        - {name: proof, keywords: [\"prove\"]}\n", "        - {name: proof, keywords: [\"prove\"]}\n        - {name: guardme, keywords: [\"guardme\"]}\n        - {name: passme, keywords: [\"passme\"]}\n", 1)
			return strings.Replace(y, "      - name: gated\n", "      - name: guarded\n        priority: 135\n        rules: {operator: OR, conditions: [{type: keyword, name: guardme}]}\n        modelRefs: [{model: small}]\n"+
				"        plugins: [{type: response_jailbreak, configuration: {threshold: 0, action: block}}]\n"+
				"      - name: passed\n        priority: 134\n        rules: {operator: OR, conditions: [{type: keyword, name: passme}]}\n        modelRefs: [{model: small}]\n"+
				"        plugins: [{type: response_jailbreak, configuration: {threshold: 1.0, action: block}}]\n      - name: gated\n", 1)
		}
	})
	s := e.open(answerModes["buffered"])
	out, err := s.SendRequest(chat(userBody("guardme please")))
	if err != nil || out.Upstream == nil {
		t.Fatalf("%v %+v", err, out)
	}
	resp, err := s.SendResponse(e.answer(out.Upstream, 0))
	if err != nil {
		t.Fatal(err)
	}
	body := string(resp.Downstream.Body)
	if !strings.Contains(body, "response guard flagged") || strings.Contains(body, "guardme please") {
		t.Fatalf("blocked answer behind Envoy: %s", body)
	}
	s.Close()

	s = e.open(answerModes["buffered"])
	out, err = s.SendRequest(chat(userBody("passme please")))
	if err != nil || out.Upstream == nil {
		t.Fatalf("%v %+v", err, out)
	}
	resp, err = s.SendResponse(e.answer(out.Upstream, 0))
	if err != nil {
		t.Fatal(err)
	}
	body = string(resp.Downstream.Body)
	if !strings.Contains(body, "passme please") || !strings.Contains(body, `"response_checks":[{"type":"response_jailbreak","status":"applied","verdict":"pass"`) {
		t.Fatalf("passed answer behind Envoy: %s", body)
	}
	s.Close()
}

// A stream a response check holds changes length (pieces cleared, the
// whole or an error at the end): the reply to its response headers removes
// content-length, whatever Envoy then does with the body.
func TestHeldStreamHeadersRemoveContentLength(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.opts.Plugins = builtintest.NativeRunner(t)
		o.edit = func(y string) string {
			y = strings.Replace(y, "        - {name: proof, keywords: [\"prove\"]}\n", "        - {name: proof, keywords: [\"prove\"]}\n        - {name: holdme, keywords: [\"holdme\"]}\n", 1)
			return strings.Replace(y, "      - name: gated\n", "      - name: held\n        priority: 135\n        rules: {operator: OR, conditions: [{type: keyword, name: holdme}]}\n        modelRefs: [{model: small}]\n"+
				"        plugins: [{type: response_jailbreak, configuration: {threshold: 1.0, action: block, hold_stream: true}}]\n      - name: gated\n", 1)
		}
	})
	for _, mode := range []string{"buffered", "streamed", "full duplex"} {
		s := e.open(answerModes[mode])
		out, err := s.SendRequest(chat(strings.Replace(userBody("holdme please"), `"messages"`, `"stream":true,"messages"`, 1)))
		if err != nil || out.Upstream == nil {
			t.Fatalf("%s: %v %+v", mode, err, out)
		}
		if _, err := s.SendResponse(e.answer(out.Upstream, 48)); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		s.Close()
		var found bool
		for _, r := range s.Received {
			if rh := r.GetResponseHeaders(); rh != nil {
				found = true
				if rm := rh.GetResponse().GetHeaderMutation().GetRemoveHeaders(); !slices.Contains(rm, "content-length") {
					t.Errorf("%s: a held stream's response headers reply removes %q, not content-length", mode, rm)
				}
			}
		}
		if !found {
			t.Errorf("%s: no response headers reply", mode)
		}
	}
}
