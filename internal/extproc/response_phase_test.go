package extproc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/plugin/recorder"

	"github.com/junction-router/junction/internal/plugin"
)

// Behind Envoy, a decision plugin with a response phase gets the answer
// (as the client's API speaks it, without routing_metadata), as on the
// gateway: whether Envoy sends the body whole or in pieces.
func TestResponsePhaseBehindEnvoy(t *testing.T) {
	rec := &recorder.Recorder{}
	e := newEnv(t, func(o *envOptions) {
		o.opts.Plugins = plugin.New(rec)
		o.edit = func(y string) string {
			y = strings.Replace(y, "        - {name: proof, keywords: [\"prove\"]}\n", "        - {name: proof, keywords: [\"prove\"]}\n        - {name: recordme, keywords: [\"recordme\"]}\n", 1)
			return strings.Replace(y, "      - name: gated\n", "      - name: recorded\n        priority: 135\n        rules: {operator: OR, conditions: [{type: keyword, name: recordme}]}\n        modelRefs: [{model: small}]\n        plugins: [{type: recorder}]\n      - name: gated\n", 1)
		}
	})
	for name, cfg := range answerModes {
		s := e.open(cfg)
		out, err := s.SendRequest(chat(userBody("recordme please")))
		if err != nil || out.Upstream == nil {
			t.Fatalf("%s: %v %+v", name, err, out)
		}
		if _, err := s.SendResponse(e.answer(out.Upstream, 30)); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.Answers()) < len(answerModes) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := rec.Answers()
	if len(got) != len(answerModes) {
		t.Fatalf("the response phase ran %d times for %d answers", len(got), len(answerModes))
	}
	for _, a := range got {
		if !strings.Contains(a, `"chat.completion"`) || !strings.Contains(a, "recordme please") || strings.Contains(a, "routing_metadata") {
			t.Fatalf("answer given to the response phase: %s", a)
		}
	}
}
