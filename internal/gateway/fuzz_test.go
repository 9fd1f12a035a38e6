package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

// fuzzConfig routes everything to in-process demo backends, so any 5xx the
// fuzzer finds is the gateway's own fault, not a backend's.
const fuzzConfig = `
version: v1
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
    gpt: {type: reasoning_effort, parameter: reasoning_effort}
  models:
    - name: small
      reasoning_family: qwen3
      backend_refs: [{provider: demo}]
    - name: big
      reasoning_family: gpt
      backend_refs: [{provider: demo}]
recipes:
  - name: default
    signals:
      keywords: [{name: proof, keywords: ["prove"]}]
      pii: [{name: contact, types: [EMAIL], action: block}]
    decisions:
      - name: hard
        priority: 100
        rules: {operator: OR, conditions: [{type: keyword, name: proof}]}
        modelRefs: [{model: big, use_reasoning: true}]
        plugins:
          - type: system_prompt
            configuration: {system_prompt: "Be careful."}
      - name: general
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small, use_reasoning: false}]
`

// FuzzGateway posts arbitrary bodies through the handler: whatever arrives,
// the answer is a 2xx or a 4xx, never a 5xx or a panic.
func FuzzGateway(f *testing.F) {
	for _, seed := range []string{
		`{"model":"MoM","messages":[{"role":"user","content":"hello"}]}`,
		`{"model":"auto","stream":true,"messages":[{"role":"user","content":"prove it"}]}`,
		`{"model":"small","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
		`{"model":"MoM","messages":[{"role":"user","content":"a@b.example"}]}`,
		`{"model":"MoM","chat_template_kwargs":"nope","reasoning_effort":7,"messages":[{"role":"user","content":"prove"}]}`,
		`{"model":"MoM","stream_options":null,"tools":[{"type":"function"}],"messages":[{"role":"user","content":null}]}`,
		`{"model":"big","max_tokens":"ten","messages":[]}`,
		`{"model":"MoM","messages":[{"role":"user","content":"` + "\xff" + `"}]}`,
		`{"model":"MoM","messages":[{"role":"user","content":"\ud800"}]}`,
		`{"model":["MoM"],"messages":{}}`,
		`{"model":"MoM","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":[]}`,
		`{}`, `[]`, `null`, `"x"`, ``, `{"model":"MoM","messages":[`,
	} {
		f.Add([]byte(seed))
	}
	doc, err := recipes.Parse([]byte(fuzzConfig))
	if err != nil {
		f.Fatal(err)
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		f.Fatal(err)
	}
	srv := New(Options{
		Listener: doc.Listeners[0],
		Runtime:  engine.NewRuntime(gen),
		Metrics:  metrics.New(prometheus.NewRegistry()),
		Plugins:  native.Stage(),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}
