package recipes

import (
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	doc, err := Parse([]byte(minimalYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Listeners) != 1 {
		t.Fatalf("listeners = %+v", doc.Listeners)
	}
	l := doc.Listeners[0]
	if l.Name != "public" || l.Address != "127.0.0.1" || l.Port != 8801 || l.Timeout.Duration != 300*time.Second ||
		l.Entrypoint != "" || l.BodyLimit() != DefaultMaxBodyBytes {
		t.Errorf("default listener = %+v", l)
	}
	if doc.Entrypoint(l) != "r" {
		t.Errorf("entrypoint = %q", doc.Entrypoint(l))
	}
	s := doc.Global.Services
	if s.ManagementAPI.Address != "127.0.0.1" || s.ManagementAPI.Port != 8080 {
		t.Errorf("management = %+v", s.ManagementAPI)
	}
	if s.Observability.Metrics.Address != "127.0.0.1" || s.Observability.Metrics.Port != 9190 {
		t.Errorf("metrics = %+v", s.Observability.Metrics)
	}
	if e := doc.Global.Extproc; e.Address != "127.0.0.1" || e.Port != 50051 {
		t.Errorf("extproc = %+v", e)
	}
	if s.API.BatchClassification.MaxBatchSize != 100 {
		t.Errorf("max_batch_size = %d", s.API.BatchClassification.MaxBatchSize)
	}
	if doc.Providers.Defaults.DefaultReasoningEffort != "" {
		t.Error("default_reasoning_effort must stay empty")
	}

	src := minimalYAML + `
    signals:
      keywords: [{name: k, keywords: [a]}, {name: k2, keywords: [b], word_boundary: false, operator: AND}]
      pii: [{name: p, types: [email, Phone]}]
      jailbreak: [{name: j}]
      language: [{name: l, languages: [DE]}]
      embeddings: [{name: e, candidates: [x], threshold: 0.5}]
      complexity: [{name: c, threshold: 1e-7, hard: {candidates: [h]}, easy: {candidates: [e]}}]
listeners:
  - {name: a}
  - {name: b, port: 9000, address: 0.0.0.0, timeout: 10}
`
	src = strings.Replace(src, "rules: {operator: AND, conditions: []}}", "rules: {operator: AND, conditions: []}, plugins: [{type: system_prompt}]}", 1)
	doc, err = Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sig := doc.Recipes[0].Signals
	if k := sig.Keywords[0]; k.Operator != "OR" || !k.WholeWords() || k.WordBoundary == nil {
		t.Errorf("keyword defaults = %+v", k)
	}
	if k := sig.Keywords[1]; k.Operator != "AND" || k.WholeWords() {
		t.Errorf("explicit keyword values lost: %+v", k)
	}
	if p := sig.PII[0]; p.OnUnscanned != "block" || p.Action != "route" || p.Types[0] != "EMAIL" || p.Types[1] != "PHONE" {
		t.Errorf("pii defaults = %+v", p)
	}
	if j := sig.Jailbreak[0]; j.OnUnscanned != "block" || j.Action != "route" {
		t.Errorf("jailbreak defaults = %+v", j)
	}
	if sig.Language[0].Languages[0] != "de" {
		t.Errorf("language not normalized: %v", sig.Language[0].Languages)
	}
	if sig.Embeddings[0].Aggregation != "max" {
		t.Errorf("aggregation = %q", sig.Embeddings[0].Aggregation)
	}
	if sig.Complexity[0].Threshold != "0.0000001" {
		t.Errorf("bare-number threshold = %q", sig.Complexity[0].Threshold)
	}
	if p := doc.Recipes[0].Decisions[0].Plugins[0]; p.OnError != "skip" {
		t.Errorf("plugin on_error = %q", p.OnError)
	}
	if a, b := doc.Listeners[0], doc.Listeners[1]; a.Port != 8801 || a.Address != "127.0.0.1" || b.Timeout.Duration != 10*time.Second {
		t.Errorf("listeners = %+v", doc.Listeners)
	}

	// Idempotent.
	before := Hash(doc)
	doc.ApplyDefaults()
	if Hash(doc) != before {
		t.Error("ApplyDefaults is not idempotent")
	}
	var nilDoc *Document
	nilDoc.ApplyDefaults() // must not panic
}
