package convert_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/internal/pluginsys"
	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/convert"
	"github.com/junction-router/junction/operator/internal/crdschema"
	"github.com/junction-router/junction/recipes"
)

// junctionValidate runs what `junction config validate FILE` runs (cmd/junction/config.go): LoadFile, then
// the engine's compile with the built-in plugins' configuration checks.
func junctionValidate(t *testing.T, doc []byte) *recipes.Document {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	d, _, err := recipes.LoadFile(path)
	if err == nil {
		_, err = engine.Compile(d, "", engine.Options{Plugins: pluginsys.ModuleAware{V: native.Stage()}})
	}
	if err != nil {
		t.Fatalf("junction config validate refuses the converted document: %v\n%s", err, doc)
	}
	return d
}

func schema(t *testing.T) *crdschema.Schema {
	t.Helper()
	s, err := convert.Schema()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func loadFile(t *testing.T, path string) *v1alpha1.JunctionRouter {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := convert.LoadResource(context.Background(), schema(t), b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestConvertSample: the committed sample converts into a document Junction's validation accepts, with every
// mapped field where it belongs.
func TestConvertSample(t *testing.T) {
	r := loadFile(t, "../config/samples/junctionrouter.yaml")
	out, err := convert.ToYAML(r)
	if err != nil {
		t.Fatal(err)
	}
	d := junctionValidate(t, out)

	models := map[string]recipes.Model{}
	for _, m := range d.Providers.Models {
		models[m.Name] = m
	}
	if m := models["qwen3-8b"]; m.ReasoningFamily != "qwen3" || len(m.BackendRefs) != 1 || m.BackendRefs[0].BaseURL != "http://vllm-small.default.svc.cluster.local:8000/v1" {
		t.Errorf("qwen3-8b = %+v", m)
	}
	if m := models["small-legal"]; len(m.BackendRefs) != 1 || m.BackendRefs[0].BaseURL != "http://vllm-small.default.svc.cluster.local:8000/v1" || m.Description == "" {
		t.Errorf("the LoRA adapter small-legal = %+v", m)
	}
	if m := models["deepseek-v3"]; len(m.BackendRefs) != 1 || m.BackendRefs[0].BaseURL != "http://deepseek-v3-predictor.default.svc.cluster.local/openai/v1" {
		t.Errorf("deepseek-v3 = %+v", m)
	}
	if d.Providers.Defaults.DefaultModel != "qwen3-8b" || d.Providers.Defaults.DefaultReasoningEffort != "medium" {
		t.Errorf("defaults = %+v", d.Providers.Defaults)
	}
	rec, ok := d.Recipe("default")
	if !ok {
		t.Fatal("no default recipe")
	}
	if len(rec.Signals.Complexity) != 1 || rec.Signals.Complexity[0].Threshold != "0.1" || len(rec.Signals.Keywords) != 1 {
		t.Errorf("signals = %+v", rec.Signals)
	}
	var names []string
	for _, dec := range rec.Decisions {
		names = append(names, dec.Name)
	}
	if strings.Join(names, ",") != "hard_questions,legal,general" {
		t.Errorf("decisions = %v", names)
	}
	hq := rec.Decisions[0]
	if hq.Reliability == nil || hq.Reliability.TotalTimeout.String() != "2m0s" || *hq.Reliability.RetryCount != 2 || hq.Fallback == nil || *hq.Fallback.MaxAttempts != 2 {
		t.Errorf("hard_questions reliability/fallback = %+v %+v", hq.Reliability, hq.Fallback)
	}
	if len(rec.Decisions[2].Plugins) != 1 || rec.Decisions[2].Plugins[0].Type != "response_cache" {
		t.Errorf("general plugins = %+v", rec.Decisions[2].Plugins)
	}
	tr := d.Global.Services.Observability.Tracing
	if !tr.Enabled || tr.Exporter.Endpoint != "otel-collector.observability:4317" || tr.Sampling == nil || *tr.Sampling.Rate != 0.1 {
		t.Errorf("tracing = %+v", tr)
	}
	if d.Global.Services.API.BatchClassification.MaxBatchSize != 100 {
		t.Errorf("batch classification = %+v", d.Global.Services.API.BatchClassification)
	}
	// In a pod every listener is on the pod's interfaces, on the ports the controller's Services use.
	if len(d.Listeners) != 1 || d.Listeners[0].Address != "0.0.0.0" || d.Listeners[0].Port != 8801 {
		t.Errorf("listeners = %+v", d.Listeners)
	}
	if m := d.Global.Services.ManagementAPI; m.Address != "0.0.0.0" || m.Port != 8080 {
		t.Errorf("management = %+v", m)
	}
	if m := d.Global.Services.Observability.Metrics; m.Address != "0.0.0.0" || m.Port != 9190 {
		t.Errorf("metrics = %+v", m)
	}
	if e := d.Global.Extproc; e.Address != "0.0.0.0" || e.Port != 50051 {
		t.Errorf("extproc = %+v", e)
	}
}

// TestConvertMapsGlobalSections: caches, embedding endpoint, external models, prompt guard, composer,
// model deployments and the accepted spec defaults.
func TestConvertMapsGlobalSections(t *testing.T) {
	r := loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x, namespace: prod}
spec:
  modelEndpoints:
    - {name: a, model: m1, backend: {type: service, service: {name: vllm, namespace: models, port: 9000, api_key_env: VLLM_KEY}}}
    - {name: b, model: m1, backend: {type: service, service: {name: vllm2}}}
  config:
    strategy: priority
    streamed_body: {enabled: true}
    semantic_cache: {enabled: true, backend_type: memory, max_entries: 5000, eviction_policy: lru}
    tools: {enabled: false}
    classifier: {category_model: {use_cpu: true}}
    prompt_guard: {enabled: true, threshold: "0.8"}
    embedding_models:
      embedding_config: {backend: openai_compatible, model_type: remote}
      endpoint: {base_url: "http://embed.models:8080/v1", model: bge, api_key_env: EMBED_KEY, dimensions: 384, timeout_seconds: 5}
    external_models:
      - {name: judge, model_role: classification, llm_model_name: qwen, llm_endpoint: {address: judge.models, port: 8000}, llm_timeout_seconds: 10}
    api: {batch_classification: {max_batch_size: 50, concurrency_threshold: 5, max_concurrency: 8, metrics: {enabled: true, sample_rate: "1.0"}}}
    complexity_rules:
      - name: load
        hard_above: "0.2"
        easy_below: "-0.1"
        hard: {candidates: [prove it]}
        easy: {candidates: [say hi]}
        composer: {conditions: [{type: keyword, name: urgent}]}
    routing:
      recipes: [{name: default, signals: {keywords: [{name: urgent, keywords: [asap]}]}}]
    decisions:
      - name: d
        priority: 5
        rules: {operator: OR, conditions: [{type: jailbreak, name: prompt_guard}]}
        modelRefs: [{model: m1, weight: 2}]
        preferred_endpoints: [b]
        reliability: {per_try_timeout: "0"}
`)
	out, err := convert.ToYAML(r)
	if err != nil {
		t.Fatal(err)
	}
	d := junctionValidate(t, out)
	if len(d.Providers.Models) != 1 || len(d.Providers.Models[0].BackendRefs) != 2 ||
		d.Providers.Models[0].BackendRefs[0].BaseURL != "http://vllm.models.svc.cluster.local:9000/v1" ||
		d.Providers.Models[0].BackendRefs[0].APIKeyEnv != "VLLM_KEY" ||
		d.Providers.Models[0].BackendRefs[1].BaseURL != "http://vllm2.prod.svc.cluster.local:8000/v1" {
		t.Errorf("models = %+v", d.Providers.Models)
	}
	if c := d.Global.Services.ResponseCache; c == nil || c.Backend != "memory" || c.MaxEntries != 5000 {
		t.Errorf("response cache = %+v", c)
	}
	if e := d.Global.Storage; e == nil || e.Embedding == nil || e.Embedding.Endpoint != "http://embed.models:8080/v1" || e.Embedding.Dimensions != 384 || e.Embedding.TimeoutMS != 5000 || e.Embedding.APIKeyEnv != "EMBED_KEY" {
		t.Errorf("storage embedding = %+v", e)
	}
	if x := d.Global.ExternalModels; len(x) != 1 || x[0].LLMEndpoint.Port != 8000 || x[0].LLMTimeoutSeconds != 10 {
		t.Errorf("external models = %+v", x)
	}
	rec, _ := d.Recipe("default")
	if j := rec.Signals.Jailbreak; len(j) != 1 || j[0].Name != "prompt_guard" || j[0].Action != "block" || j[0].Threshold != 0.8 {
		t.Errorf("prompt guard = %+v", j)
	}
	if c := rec.Signals.Complexity; len(c) != 1 || len(c[0].Composer) != 1 || c[0].Composer[0].Type != "keyword" || c[0].Composer[0].Name != "urgent" {
		t.Errorf("complexity = %+v", c)
	}
	dec := rec.Decisions[0]
	if len(dec.PreferredEndpoints) != 1 || dec.PreferredEndpoints[0] != "http://vllm2.prod.svc.cluster.local:8000/v1" || dec.ModelRefs[0].Weight != 2 {
		t.Errorf("decision = %+v", dec)
	}
	if dec.Reliability == nil || dec.Reliability.PerTryTimeout == nil || dec.Reliability.PerTryTimeout.Duration != 0 {
		t.Errorf("reliability = %+v", dec.Reliability)
	}
	if d.Global.Services.API.BatchClassification.MaxBatchSize != 50 {
		t.Errorf("batch = %+v", d.Global.Services.API)
	}
}

// TestConvertRefuses: fields with no Junction equivalent are refused, each by its path, all in one error.
func TestConvertRefuses(t *testing.T) {
	r := loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  modelEndpoints:
    - {name: a, model: m, catalog: qwen3, backend: {type: llamastack, discoveryLabels: {app: llama}}}
  config:
    decision_model: {deployment: judge}
    model_admission: {judge: {max_inflight: 4}}
    complexity_model: {backend: scorer}
    tools: {enabled: true}
    classifier: {category_model: {model_id: my/model, threshold: "0.6"}, pii_model: {pii_mapping_path: /m.json}}
    prompt_guard: {enabled: true, model_id: guard/model}
    response_cache:
      enabled: true
      backend_type: vector_database
      similarity_threshold: "0.9"
      ttl_seconds: 60
      vector_database: {connection: {host: milvus}}
    embedding_models: {qwen3_model_path: /models/qwen3, use_cpu: false, embedding_config: {target_layer: 6}}
    api: {batch_classification: {max_concurrency: 2, metrics: {duration_buckets: ["0.1"]}}}
    complexity_rules:
      - {name: c, threshold: "0.1", prototype_scoring: {family: x}}
      - {name: e, threshold: "0.1", composer: {operator: OR, conditions: [{type: domain, name: math}]}}
`)
	_, err := convert.ToYAML(r)
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a *convert.Error, got %v", err)
	}
	got := map[string]bool{}
	for _, x := range ce.Refused {
		got[x.Path] = true
		if x.Reason == "" {
			t.Errorf("%s refused without a reason", x.Path)
		}
	}
	for _, want := range []string{
		"spec.modelEndpoints[0].catalog", "spec.modelEndpoints[0].backend.discoveryLabels",
		"spec.config.decision_model", "spec.config.model_admission.judge", "spec.config.complexity_model",
		"spec.config.tools", "spec.config.classifier.category_model.model_id", "spec.config.classifier.category_model.threshold",
		"spec.config.classifier.pii_model.pii_mapping_path", "spec.config.prompt_guard.model_id",
		"spec.config.response_cache.backend_type", "spec.config.response_cache.similarity_threshold", "spec.config.response_cache.ttl_seconds",
		"spec.config.embedding_models.qwen3_model_path", "spec.config.embedding_models.use_cpu",
		"spec.config.embedding_models.embedding_config.target_layer",
		"spec.config.api.batch_classification.max_concurrency", "spec.config.api.batch_classification.metrics.duration_buckets",
		"spec.config.complexity_rules[0].prototype_scoring", "spec.config.complexity_rules[1].composer.operator",
	} {
		if !got[want] {
			t.Errorf("%s was not refused; refusals:\n%v", want, err)
		}
	}
	if len(ce.Refused) != 20 {
		t.Errorf("%d refusals, want 20:\n%v", len(ce.Refused), err)
	}
}

// TestConvertConflictsWithRouting: a setting made both in routing and in a typed field is refused, not
// silently overwritten.
func TestConvertConflictsWithRouting(t *testing.T) {
	r := loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  config:
    routing:
      providers:
        defaults: {default_model: m, default_reasoning_effort: low}
        models: [{name: m, backend_refs: [{base_url: "http://m:8000/v1"}]}]
      recipes:
        - name: default
          decisions: [{name: d, rules: {operator: AND, conditions: []}, modelRefs: [{model: m}]}]
    reasoning_effort: high
    decisions: [{name: d, rules: {operator: AND, conditions: []}}]
`)
	_, err := convert.ToYAML(r)
	if err == nil || !strings.Contains(err.Error(), "spec.config.reasoning_effort") || !strings.Contains(err.Error(), "spec.config.decisions[0].name") {
		t.Fatalf("want both conflicts refused, got %v", err)
	}
}

// TestConvertReportsJunctionProblems: a resource the CRD admits but Junction would refuse fails at
// conversion, with Junction's problem.
func TestConvertReportsJunctionProblems(t *testing.T) {
	r := loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  modelEndpoints: [{name: a, model: m, backend: {type: service, service: {name: vllm}}}]
  config:
    decisions: [{name: d, rules: {operator: AND, conditions: [{type: keyword, name: nowhere}]}, modelRefs: [{model: m}]}]
`)
	_, err := convert.ToYAML(r)
	if err == nil || !strings.Contains(err.Error(), "not valid for Junction") || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("got %v", err)
	}
}

// TestExportRoundTrip: export lifts the typed sections of existing configurations, the resource passes the
// CRD, and it converts back to the same configuration.
func TestExportRoundTrip(t *testing.T) {
	for _, src := range []struct {
		name string
		data []byte
	}{
		{"builtin", recipes.BuiltinYAML()},
		{"spec example", mustRead(t, "../../../shared/spec/example-config.yaml")},
		{"testdata", mustRead(t, "testdata/export.yaml")},
	} {
		t.Run(src.name, func(t *testing.T) {
			r, notes, err := convert.FromDocument(src.data, "exported", "prod")
			if err != nil {
				t.Fatal(err)
			}
			// The resource as written out must pass the CRD.
			j, _ := json.Marshal(r)
			y, _ := yaml.JSONToYAML(j)
			back, err := convert.LoadResource(context.Background(), schema(t), y)
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			out, err := convert.ToYAML(back)
			if err != nil {
				t.Fatal(err)
			}
			junctionValidate(t, out)
			if src.name == "spec example" {
				if len(r.Spec.Config.Decisions) != 6 || len(r.Spec.Config.ComplexityRules) != 1 || r.Spec.Config.Observability == nil {
					t.Errorf("lifted decisions %d, complexity %d, observability %v", len(r.Spec.Config.Decisions), len(r.Spec.Config.ComplexityRules), r.Spec.Config.Observability)
				}
				if len(notes) != 4 {
					t.Errorf("notes = %q, want the four loopback addresses", notes)
				}
			}
			if src.name == "testdata" && (len(r.Spec.Config.ExternalModels) != 1 || r.Spec.Config.ModelDeployments == nil || r.Spec.Config.ReasoningEffort != "high" || r.Spec.Metrics.TargetPort != 9300) {
				t.Errorf("testdata export = %+v", r.Spec)
			}
		})
	}
}

func loadResource(t *testing.T, doc string) *v1alpha1.JunctionRouter {
	t.Helper()
	r, err := convert.LoadResource(context.Background(), schema(t), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConvertKeyValueCache: a key-value cache backend becomes Junction's shared state on that Redis (the
// response cache kept there, the password from the environment variable the controller fills from the
// Secret); the Redis search-index settings, which Junction does not use, are refused unless at their
// defaults, and so is a password written in the resource.
func TestConvertKeyValueCache(t *testing.T) {
	r := loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  modelEndpoints:
    - {name: a, model: m1, backend: {type: service, service: {name: vllm}}}
  config:
    response_cache:
      enabled: true
      backend_type: key_value
      key_value:
        connection: {host: redis.cache.svc, port: 6380, database: 2, password_secret_ref: {name: redis, key: password}, tls: {enabled: true, ca_file: /tls/ca.pem}}
`)
	out, err := convert.ToYAML(r)
	if err != nil {
		t.Fatal(err)
	}
	d := junctionValidate(t, out)
	st := d.Global.State
	if st == nil || st.Backend != "redis" || st.Redis == nil || st.Redis.Address != "redis.cache.svc:6380" || st.Redis.DB != 2 ||
		st.Redis.PasswordEnv != convert.RedisPasswordEnv || st.Redis.TLS == nil || !st.Redis.TLS.Enabled || st.Redis.TLS.CAFile != "/tls/ca.pem" {
		t.Fatalf("global.state = %+v (redis %+v)\n%s", st, st.Redis, out)
	}
	if rc := d.Global.Services.ResponseCache; rc == nil || rc.Backend != "redis" {
		t.Fatalf("response_cache = %+v", rc)
	}

	r = loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  config:
    response_cache:
      enabled: true
      backend_type: key_value
      key_value:
        connection: {host: redis, password: hunter2}
        index: {name: my_idx, params: {M: 32}}
        search: {topk: 3}
`)
	_, err = convert.ToYAML(r)
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a *convert.Error, got %v", err)
	}
	got := map[string]bool{}
	for _, x := range ce.Refused {
		got[x.Path] = true
	}
	for _, want := range []string{"connection.password", "index.name", "index.params.M", "search.topk"} {
		if !got["spec.config.response_cache.key_value."+want] {
			t.Errorf("key_value.%s was not refused:\n%v", want, err)
		}
	}
	if len(ce.Refused) != 4 {
		t.Errorf("%d refusals, want 4:\n%v", len(ce.Refused), err)
	}
}

// TestKeyValueCacheOnCluster: connection mode cluster with addresses converts to global.state.redis mode
// cluster and those seeds (host and port naming the one seed without addresses), with the TLS files; what
// Junction would refuse is refused by the CRD or by convert with the field to change; and export lifts such
// a document back into the typed key_value backend, converting to the same document again, with a note for
// each TLS file to mount.
func TestKeyValueCacheOnCluster(t *testing.T) {
	r := loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  modelEndpoints:
    - {name: a, model: m1, backend: {type: service, service: {name: vllm}}}
  config:
    response_cache:
      enabled: true
      backend_type: key_value
      key_value:
        connection:
          mode: cluster
          addresses: ["redis-0.redis:6379", "redis-1.redis:6379"]
          tls: {enabled: true, ca_file: /tls/ca.crt, cert_file: /tls/tls.crt, key_file: /tls/tls.key}
`)
	out, err := convert.ToYAML(r)
	if err != nil {
		t.Fatal(err)
	}
	d := junctionValidate(t, out)
	st := d.Global.State
	if st == nil || st.Redis == nil || st.Redis.Mode != "cluster" || strings.Join(st.Redis.Addresses, ",") != "redis-0.redis:6379,redis-1.redis:6379" ||
		st.Redis.Address != "" || st.Redis.TLS == nil || st.Redis.TLS.CertFile != "/tls/tls.crt" || st.Redis.TLS.KeyFile != "/tls/tls.key" {
		t.Fatalf("global.state = %+v (redis %+v)\n%s", st, st.Redis, out)
	}

	exported, notes, err := convert.FromDocument(out, "x", "prod")
	if err != nil {
		t.Fatal(err)
	}
	// The files are the resource's to mount: export says so for each.
	if n := strings.Join(notes, "\n"); strings.Count(n, "is in no volume mounted in the router's pods") != 3 ||
		!strings.Contains(n, "spec.config.response_cache.key_value.connection.tls.key_file: /tls/tls.key") {
		t.Errorf("export notes = %q", notes)
	}
	cc := exported.Spec.Config.ResponseCache
	if cc == nil || cc.BackendType != "key_value" || cc.KeyValue == nil {
		t.Fatalf("export left the Redis cache in routing: %s", exported.Spec.Config.Routing.Raw)
	}
	conn := cc.KeyValue.Connection
	if conn.Mode != "cluster" || strings.Join(conn.Addresses, ",") != "redis-0.redis:6379,redis-1.redis:6379" || conn.Host != "" ||
		conn.TLS == nil || conn.TLS.CAFile != "/tls/ca.crt" || conn.TLS.CertFile != "/tls/tls.crt" || conn.TLS.KeyFile != "/tls/tls.key" {
		t.Fatalf("exported connection = %+v (tls %+v)", conn, conn.TLS)
	}
	if strings.Contains(string(exported.Spec.Config.Routing.Raw), "state") {
		t.Errorf("global.state also left in routing: %s", exported.Spec.Config.Routing.Raw)
	}
	// The export passes the CRD and converts back to the same shared state.
	j, _ := json.Marshal(exported)
	y, _ := yaml.JSONToYAML(j)
	back, err := convert.LoadResource(context.Background(), schema(t), y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	again, err := convert.ToYAML(back)
	if err != nil {
		t.Fatal(err)
	}
	if s := junctionValidate(t, again).Global.State; s.Redis.Mode != "cluster" || len(s.Redis.Addresses) != 2 || s.Redis.TLS.KeyFile != "/tls/tls.key" {
		t.Fatalf("export then convert: %+v\n%s", s.Redis, again)
	}

	// One seed by host and port.
	r = loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  modelEndpoints:
    - {name: a, model: m1, backend: {type: service, service: {name: vllm}}}
  config:
    response_cache:
      enabled: true
      backend_type: key_value
      key_value: {connection: {mode: cluster, host: clustercfg.cache.example, port: 6379}}
`)
	out, err = convert.ToYAML(r)
	if err != nil {
		t.Fatal(err)
	}
	if s := junctionValidate(t, out).Global.State.Redis; s.Mode != "cluster" || s.Address != "clustercfg.cache.example:6379" || len(s.Addresses) != 0 {
		t.Fatalf("cluster by one seed: %+v\n%s", s, out)
	}
	exported, _, err = convert.FromDocument(out, "x", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if c := exported.Spec.Config.ResponseCache; c == nil || c.KeyValue.Connection.Mode != "cluster" || c.KeyValue.Connection.Host != "clustercfg.cache.example" {
		t.Fatalf("export of a cluster by one seed: %+v", c)
	}

	// A password_env, a key prefix: no typed field says them, so global.state stays in routing as written.
	exported, _, err = convert.FromDocument([]byte(`{version: v1, providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}, recipes: [{name: default}],
  global: {state: {backend: redis, redis: {mode: cluster, addresses: ["r:6379"], password_env: REDIS_PW, key_prefix: "p:"}}, services: {response_cache: {backend: redis}}}}`), "x", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if exported.Spec.Config.ResponseCache != nil || !strings.Contains(string(exported.Spec.Config.Routing.Raw), "REDIS_PW") {
		t.Fatalf("a password_env was lifted: %+v, routing %s", exported.Spec.Config.ResponseCache, exported.Spec.Config.Routing.Raw)
	}

	// Refused by the CRD.
	for _, tc := range []struct{ conn, want string }{
		{`{host: r, addresses: ["a:1"]}`, "set mode: cluster"},
		{`{mode: cluster, addresses: ["a:1"], database: 2}`, "database 0 only"},
		{`{mode: sentinel, host: r}`, "Unsupported value"},
	} {
		_, err := convert.LoadResource(context.Background(), schema(t), []byte(`
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  modelEndpoints:
    - {name: a, model: m1, backend: {type: service, service: {name: vllm}}}
  config:
    response_cache: {enabled: true, backend_type: key_value, key_value: {connection: `+tc.conn+`}}
`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("connection %s: %v, want %q", tc.conn, err, tc.want)
		}
	}
	// Refused by convert.
	for _, tc := range []struct{ conn, path string }{
		{`{mode: cluster, host: r, addresses: ["a:1"]}`, "connection.host"},
		{`{mode: cluster, addresses: ["a:1"], port: 7000}`, "connection.port"},
		{`{mode: cluster, addresses: ["no-port"]}`, "connection.addresses[0]"},
	} {
		r := loadResource(t, `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
  modelEndpoints:
    - {name: a, model: m1, backend: {type: service, service: {name: vllm}}}
  config:
    response_cache: {enabled: true, backend_type: key_value, key_value: {connection: `+tc.conn+`}}
`)
		_, err := convert.ToYAML(r)
		var ce *convert.Error
		if !errors.As(err, &ce) || len(ce.Refused) != 1 || ce.Refused[0].Path != "spec.config.response_cache.key_value."+tc.path {
			t.Errorf("connection %s: %v, want one refusal of %s", tc.conn, err, tc.path)
		}
	}
}
