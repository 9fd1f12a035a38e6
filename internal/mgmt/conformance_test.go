package mgmt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/recipes"
)

// TestManagementRateLimit: with global.services.management_api.rate_limit
// the model-running routes answer 429 RATE_LIMIT_EXCEEDED (document 001)
// once a caller has spent its requests, with the earlier revision's
// details and X-RateLimit headers; other routes are not counted, and a
// change of the limit applies with the next request.
func TestManagementRateLimit(t *testing.T) {
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := strings.Replace(string(base), "    api: {batch_classification: {max_batch_size: 4}}\n",
		"    api: {batch_classification: {max_batch_size: 4}}\n    management_api: {rate_limit: {requests: 2, window: 1h}}\n", 1)
	e := newEnv(t, writeConfig(t, b))
	intent := map[string]any{"text": "solve 2x+3=7"}
	for i := range 2 {
		r := must(t, e.call("POST", "/api/v1/classify/intent", intent), 200)
		if got := r.header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(1-i) {
			t.Errorf("call %d: X-RateLimit-Remaining %q, want %d", i, got, 1-i)
		}
		if r.header.Get("X-RateLimit-Limit") != "2" || r.header.Get("X-RateLimit-Reset") == "" {
			t.Errorf("call %d: headers %v", i, r.header)
		}
	}
	// Routes that run no model are not counted.
	for range 3 {
		must(t, e.call("GET", "/api/v1/config", nil), 200)
		must(t, e.call("GET", "/health", nil), 200)
	}
	for _, path := range []string{"/api/v1/classify/intent", "/api/v1/diagnostics/classify/intent"} {
		r := must(t, e.call("POST", path, intent), 429)
		if r.errCode(t) != "RATE_LIMIT_EXCEEDED" {
			t.Fatalf("%s: code %q, want RATE_LIMIT_EXCEEDED: %s", path, r.errCode(t), r.body)
		}
		d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
		if d["limit"] != 2.0 || d["window"] != "1h0m0s" || d["retry_after"].(float64) < 1 {
			t.Errorf("%s: details %v", path, d)
		}
		if r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Retry-After") == "" || r.header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("%s: headers %v", path, r.header)
		}
	}
	// A larger limit applies live: the bucket keeps what was spent and
	// refills at the new rate, so a higher requests count admits at once.
	patch := map[string]any{"global": map[string]any{"services": map[string]any{"management_api": map[string]any{"rate_limit": map[string]any{"requests": 100000, "window": "1s"}}}}}
	must(t, e.call("PATCH", "/api/v1/config", patch, "If-Match", e.etag()), 200)
	must(t, e.call("POST", "/api/v1/classify/intent", intent), 200)
	// Removing it lifts the limit.
	patch = map[string]any{"global": map[string]any{"services": map[string]any{"management_api": map[string]any{"rate_limit": nil}}}}
	must(t, e.call("PATCH", "/api/v1/config", patch, "If-Match", e.etag()), 200)
	if r := must(t, e.call("POST", "/api/v1/classify/intent", intent), 200); r.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("no limit, yet X-RateLimit-Limit %q", r.header.Get("X-RateLimit-Limit"))
	}
	// An invalid limit is refused with its path.
	patch = map[string]any{"global": map[string]any{"services": map[string]any{"management_api": map[string]any{"rate_limit": map[string]any{"requests": 0}}}}}
	if r := e.call("PATCH", "/api/v1/config", patch, "If-Match", e.etag()); r.status != 400 || !strings.Contains(string(r.body), "rate_limit") {
		t.Errorf("requests 0: %d %s", r.status, r.body)
	}
}

// TestClassifierPlaceholderWhileAWorkerLoads: document 001's classifier
// status is placeholder while a bound model is not loaded (here the
// jailbreak binding's worker, as serve reports it to Startup), and
// /info/models says loaded false for that model; once the worker is ready
// both are back to active and loaded.
func TestClassifierPlaceholderWhileAWorkerLoads(t *testing.T) {
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := strings.Replace(string(base), "global:\n", "global:\n  model_catalog:\n    deployments: [{name: guard, artifact: jailbreak-glove}]\n    bindings: {jailbreak: {deployment: guard}}\n", 1)
	e := newEnv(t, writeConfig(t, b))
	check := func(ready bool, status string) {
		t.Helper()
		e.startup.SetDeployments([]mgmt.ModelDeployment{{Name: "guard", Artifact: "jailbreak-glove", Process: "managed", State: map[bool]string{true: "ready", false: "starting"}[ready], Ready: ready}})
		if ci := must(t, e.call("GET", "/info/classifier", nil), 200).json(t); ci["status"] != status {
			t.Errorf("ready %v: classifier status %v, want %s", ready, ci["status"], status)
		}
		var im mgmt.ModelInfo
		if err := json.Unmarshal(must(t, e.call("GET", "/info/models", nil), 200).body, &im); err != nil {
			t.Fatal(err)
		}
		if im.Models[1].Name != "jailbreak_guard" || im.Models[1].Loaded != ready || !im.Models[0].Loaded {
			t.Errorf("ready %v: /info/models %+v", ready, im.Models)
		}
	}
	check(false, "placeholder")
	check(true, "active")
}

// boundModel stands for a bound classifier model (a worker's): the lexical
// domain classifier's answers under a worker method, with a model_type,
// failing while fail is set.
type boundModel struct {
	signal.Classifier
	fail *atomic.Bool
}

func (b boundModel) Method() string    { return "worker:dom" }
func (b boundModel) ModelType() string { return "bert" }
func (b boundModel) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	if b.fail.Load() {
		return nil, errors.New("the worker is unavailable")
	}
	return b.Classifier.Classify(ctx, texts)
}

// TestBatchModelSelection: document 001's batch model selection prefers a
// discovered classifier model over the legacy (lexical) one, and falls to
// the legacy one while the model's worker is not ready or when it fails;
// the answer names the classifier that answered.
func TestBatchModelSelection(t *testing.T) {
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := strings.Replace(string(base), "global:\n", "global:\n  model_catalog:\n    deployments: [{name: dom, artifact: domain-glove}]\n    bindings: {domain: {deployment: dom}}\n", 1)
	lex, err := signal.LexicalDomain()
	if err != nil {
		t.Fatal(err)
	}
	fail := &atomic.Bool{}
	inner := compiler(t)
	compile := func(ctx context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		gen, err := inner(ctx, doc, hash)
		if err != nil {
			return nil, err
		}
		m := gen.Models()
		m.Domain = boundModel{Classifier: lex, fail: fail}
		return engine.Compile(doc, hash, engine.Options{Plugins: native.Stage(), Models: m})
	}
	e := newEnvWith(t, writeConfig(t, b), compile)
	batch := func() string {
		t.Helper()
		r := must(t, e.call("POST", "/api/v1/classify/batch", map[string]any{"texts": []string{"solve the integral", "a contract dispute"}}), 200).json(t)
		if r["total_count"] != 2.0 {
			t.Fatalf("batch: %v", r)
		}
		m, _ := r["model"].(string)
		return m
	}
	ready := func(ok bool) {
		e.startup.SetDeployments([]mgmt.ModelDeployment{{Name: "dom", Artifact: "domain-glove", Process: "managed", State: map[bool]string{true: "ready", false: "loading"}[ok], Ready: ok}})
	}
	ready(true)
	if m := batch(); m != "worker:dom" {
		t.Errorf("discovered model ready: batch used %q, want worker:dom", m)
	}
	ready(false)
	if m := batch(); m != signal.MethodLexicalBayes {
		t.Errorf("worker loading: batch used %q, want the legacy %s", m, signal.MethodLexicalBayes)
	}
	ready(true)
	fail.Store(true)
	if m := batch(); m != signal.MethodLexicalBayes {
		t.Errorf("worker failing: batch used %q, want the legacy %s", m, signal.MethodLexicalBayes)
	}
}

// TestInventoryFactsOfONNXBindings: the bindings of the default ONNX models
// report their forward-pass capacity (forward_max_tokens) and physical
// identity (metadata.resource_id, with the package digest); the PII
// patterns, which have neither, omit them (document 000: unknown values
// are omitted).
func TestInventoryFactsOfONNXBindings(t *testing.T) {
	lib := orttest.Library(t)
	rt, err := inference.Open(inference.Options{LibraryPath: lib, Device: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ms, err := defaultmodels.Open(t.Context(), rt, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close() })
	compile := func(_ context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		return engine.Compile(doc, hash, engine.Options{Plugins: native.Stage(), Models: ms.Signals})
	}
	e := newEnvWith(t, copyBase(t), compile)
	var l mgmt.BindingList
	if err := json.Unmarshal(must(t, e.call("GET", "/api/v1/diagnostics/models?recipe=default", nil), 200).body, &l); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, b := range l.Bindings {
		switch b.Name {
		case "domain", "jailbreak", "embedding":
			seen++
			if b.ForwardMaxTokens <= 0 || !strings.HasPrefix(b.Metadata["resource_id"], "onnx:") || !strings.Contains(b.Metadata["resource_id"], "@") {
				t.Errorf("binding %s: forward_max_tokens %d, metadata %v", b.Name, b.ForwardMaxTokens, b.Metadata)
			}
		case "pii":
			if b.ForwardMaxTokens != 0 || b.Metadata != nil {
				t.Errorf("pii: forward_max_tokens %d, metadata %v", b.ForwardMaxTokens, b.Metadata)
			}
		}
	}
	if seen != 3 {
		t.Fatalf("bindings %+v", l.Bindings)
	}
	inv := must(t, e.call("GET", "/api/v1/inventory/models", nil), 200).json(t)
	if !strings.Contains(fmt.Sprint(inv["bindings"]), "resource_id:onnx:") {
		t.Errorf("inventory: %v", inv["bindings"])
	}
}

// TestInventoryRegistryMatch: a derived local graph whose declared source
// (inference.SourceFile) matches exactly one registered checkpoint (a
// deployment pinned to a commit) reports registry.repo_id and
// registry_match; one that matches none, or whose revision alone two
// registered repos share, reports neither (document 000, inventory fields).
func TestInventoryRegistryMatch(t *testing.T) {
	lib := orttest.Library(t)
	rt, err := inference.Open(inference.Options{LibraryPath: lib, Device: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	root := t.TempDir()
	dir, err := defaultmodels.CacheDir(root)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := defaultmodels.Revision()
	if err != nil {
		t.Fatal(err)
	}
	// The embedder declares only its revision: two registered repos share it.
	if err := os.WriteFile(dir+"/"+defaultmodels.EmbedderName+"/"+inference.SourceFile, []byte(`{"revision": "`+rev+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The separate packages, and the joint one whose heads each stand for
	// their own model (its embedding head declares embed-glove).
	for _, open := range []func(context.Context, *inference.Runtime, string, int) (*defaultmodels.Models, error){defaultmodels.OpenEach, defaultmodels.Open} {
		ms, err := open(t.Context(), rt, root, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ms.Close() })
		checkRegistryMatch(t, ms, rev)
	}
}

func checkRegistryMatch(t *testing.T, ms *defaultmodels.Models, rev string) {
	t.Helper()
	compile := func(_ context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		return engine.Compile(doc, hash, engine.Options{Plugins: native.Stage(), Models: ms.Signals})
	}
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// domain-glove is registered at the models' revision; jailbreak-glove
	// only at another one; other-glove shares domain-glove's revision.
	catalog := "global:\n  model_catalog:\n    deployments:\n" +
		"      - {name: d, artifact: " + defaultmodels.DomainName + ", revision: \"" + rev + "\"}\n" +
		"      - {name: j, artifact: " + defaultmodels.JailbreakName + ", revision: \"" + strings.Repeat("0", 40) + "\"}\n" +
		"      - {name: o, artifact: other-glove, revision: \"" + rev + "\"}\n"
	e := newEnvWith(t, writeConfig(t, strings.Replace(string(base), "global:\n", catalog, 1)), compile)
	var inv mgmt.Inventory
	if err := json.Unmarshal(must(t, e.call("GET", "/api/v1/inventory/models", nil), 200).body, &inv); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, b := range inv.Bindings {
		if b.Recipe != "default" {
			continue
		}
		seen[b.Name] = true
		want := ""
		if b.Name == "domain" {
			want = defaultmodels.DomainName
		}
		got := ""
		if b.Registry != nil {
			got = b.Registry.RepoID
		}
		if got != want || (b.Metadata["registry_match"] == "source_revision") != (want != "") {
			t.Errorf("binding %s: registry %q, metadata %v; want repo %q", b.Name, got, b.Metadata, want)
		}
		if want == "" && b.Metadata["registry_match"] != "" {
			t.Errorf("binding %s: registry_match %q without a match", b.Name, b.Metadata["registry_match"])
		}
	}
	if !seen["domain"] || !seen["jailbreak"] || !seen["embedding"] {
		t.Fatalf("bindings %+v", inv.Bindings)
	}
	raw := string(must(t, e.call("GET", "/api/v1/inventory/models", nil), 200).body)
	if !strings.Contains(raw, `"registry":{"repo_id":"`+defaultmodels.DomainName+`"}`) {
		t.Errorf("inventory JSON: no registry.repo_id: %s", raw)
	}
}
