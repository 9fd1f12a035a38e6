// Package convert turns a JunctionRouter resource into Junction's configuration document (ToDocument) and
// back (FromDocument). Every field of the resource is either mapped onto the document or refused with the
// reason and what to write instead; none is dropped. A field left unset or at the spec's default is accepted
// where that default is what Junction does anyway (strategy priority, use_cpu true, an lru eviction, ...).
package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/recipes"
)

// Addresses of the listeners in a pod: every interface, since Services and the kubelet's probes reach the pod
// by its IP (Junction's own default, 127.0.0.1, suits one machine).
const podAddress = "0.0.0.0"

// Ports the router listens on in its pods; the controller's Services and probes use the same.
const (
	GatewayPort    = 8801
	ManagementPort = 8080
	MetricsPort    = 9190
	ExtprocPort    = 50051
)

// Refusal is one field with no Junction equivalent.
type Refusal struct {
	Path   string // field path in the resource, e.g. spec.config.classifier.category_model.model_id
	Reason string // why, and what to write instead
}

// Error lists every refused field of a resource.
type Error struct{ Refused []Refusal }

func (e *Error) Error() string {
	return listRefusals(fmt.Sprintf("%d field(s) have no Junction equivalent:", len(e.Refused)), e.Refused)
}

// listRefusals is head, then each refusal on a line of its own: its path and its reason.
func listRefusals(head string, refused []Refusal) string {
	var b strings.Builder
	b.WriteString(head)
	for _, r := range refused {
		fmt.Fprintf(&b, "\n  %s: %s", r.Path, r.Reason)
	}
	return b.String()
}

// ToYAML converts r and writes the document as YAML, after Junction's own loader (schema, defaults, semantic
// checks) accepted it: a resource whose document Junction would refuse fails here, with Junction's problems
// and their JSON pointers into the document.
func ToYAML(r *v1alpha1.JunctionRouter) ([]byte, error) {
	doc, err := ToDocument(r)
	if err != nil {
		return nil, err
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if _, _, err := recipes.ParseSource(j); err != nil {
		return nil, fmt.Errorf("the converted configuration is not valid for Junction: %w", err)
	}
	return yaml.JSONToYAML(j)
}

// ToDocument converts r into a configuration document (a JSON object tree, as Junction loads it).
func ToDocument(r *v1alpha1.JunctionRouter) (map[string]any, error) {
	c := &converter{r: r, ns: r.Namespace}
	if c.ns == "" {
		c.ns = "default"
	}
	c.run()
	if len(c.refused) > 0 {
		return nil, &Error{Refused: c.refused}
	}
	if c.err != nil {
		return nil, c.err
	}
	return c.doc, nil
}

type converter struct {
	r       *v1alpha1.JunctionRouter
	ns      string
	doc     map[string]any
	refused []Refusal
	err     error
	// endpointURL maps a model endpoint's name to its base_url (preferred_endpoints name endpoints).
	endpointURL map[string]string
}

func (c *converter) refuse(path, format string, args ...any) {
	c.refused = append(c.refused, Refusal{Path: path, Reason: fmt.Sprintf(format, args...)})
}

func (c *converter) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *converter) run() {
	cfg := &c.r.Spec.Config
	c.doc = map[string]any{}
	if cfg.Routing != nil && len(cfg.Routing.Raw) > 0 {
		m, err := rawObject(cfg.Routing.Raw)
		if err != nil {
			c.fail(fmt.Errorf("spec.config.routing: %w", err))
			return
		}
		c.doc = m
	}
	if _, ok := c.doc["version"]; !ok {
		c.doc["version"] = "v1"
	}
	c.listeners()
	c.models()
	recipe := c.recipe()

	if cfg.DecisionModel != nil {
		c.refuse("spec.config.decision_model", "Junction has no router-wide judgment deployment: bind each signal kind to a deployment with spec.config.model_deployments.bindings (domain, jailbreak, embeddings)")
	}
	if cfg.ModelDeployments != nil && len(cfg.ModelDeployments.Raw) > 0 {
		m, err := rawObject(cfg.ModelDeployments.Raw)
		if err != nil {
			c.fail(fmt.Errorf("spec.config.model_deployments: %w", err))
		} else {
			c.merge("spec.config.model_deployments", obj(c.doc, "global"), "model_catalog", m)
		}
	}
	for _, name := range sortedKeys(cfg.ModelAdmission) {
		c.refuse("spec.config.model_admission."+name, "Junction bounds a deployment's admission with the worker's own limits (--max-queue, --max-queued-tokens, --max-request-bytes; docs/worker.md), not per deployment in the router")
	}
	c.embedding(cfg.EmbeddingModels)
	switch {
	case cfg.ResponseCache != nil:
		c.cache("spec.config.response_cache", cfg.ResponseCache)
	case cfg.SemanticCache != nil:
		c.cache("spec.config.semantic_cache", cfg.SemanticCache)
	}
	c.tools(cfg.Tools)
	c.promptGuard(cfg.PromptGuard, recipe)
	c.classifier(cfg.Classifier)
	for i, rule := range cfg.ComplexityRules {
		c.complexity(fmt.Sprintf("spec.config.complexity_rules[%d]", i), rule, recipe)
	}
	if cfg.ComplexityModel != nil {
		c.refuse("spec.config.complexity_model", "Junction scores complexity locally (embeddings of the hard and easy candidates); remove complexity_model and grade with threshold or hard_above/easy_below")
	}
	for _, e := range cfg.ExternalModels {
		c.externalModel(e)
	}
	// strategy: Junction always evaluates decisions by priority (then confidence, then name): the one value the
	// enum allows is its behaviour, so there is nothing to write.
	for i, d := range cfg.Decisions {
		c.decision(fmt.Sprintf("spec.config.decisions[%d]", i), d, recipe)
	}
	if cfg.ReasoningEffort != "" {
		c.set("spec.config.reasoning_effort", obj(obj(c.doc, "providers"), "defaults"), "default_reasoning_effort", cfg.ReasoningEffort)
	}
	c.api(cfg.API)
	c.observability(cfg.Observability)
	// streamed_body: Junction's ext_proc reads bodies in whichever mode Envoy sends them (buffered or
	// streamed), so enabling it needs nothing in the document; the gateway's processing mode is set on Envoy.
}

// listeners binds every listener of the document to the pod's interfaces unless routing set an address.
func (c *converter) listeners() {
	ls, _ := c.doc["listeners"].([]any)
	if len(ls) == 0 {
		ls = []any{map[string]any{"name": "public", "port": GatewayPort}}
	}
	for _, l := range ls {
		if m, ok := l.(map[string]any); ok {
			setDefault(m, "address", podAddress)
		}
	}
	c.doc["listeners"] = ls
	g := obj(c.doc, "global")
	s := obj(g, "services")
	setDefault(obj(s, "management_api"), "address", podAddress)
	metrics := obj(obj(s, "observability"), "metrics")
	setDefault(metrics, "address", podAddress)
	port := c.r.Spec.Metrics.TargetPort
	if port == 0 {
		port = MetricsPort
	}
	setDefault(metrics, "port", int(port))
	if e := c.r.Spec.Metrics.Enabled; e != nil && !*e {
		metrics["enabled"] = false
	}
	ext := obj(g, "extproc")
	setDefault(ext, "address", podAddress)
	setDefault(ext, "port", ExtprocPort)
}

// models turns the model endpoints into providers.models: one model per served model name (endpoints that
// serve the same model become its backend_refs), one more per LoRA adapter (served by the same backends under
// the adapter's name).
func (c *converter) models() {
	c.endpointURL = map[string]string{}
	type model struct {
		name, reasoning, description string
		refs                         []any
		weights                      map[int32]bool
		path                         string
	}
	var order []string
	byName := map[string]*model{}
	add := func(path, name, reasoning, description string, ref map[string]any, weight int32) {
		m := byName[name]
		if m == nil {
			m = &model{name: name, reasoning: reasoning, description: description, weights: map[int32]bool{}, path: path}
			byName[name] = m
			order = append(order, name)
		} else if m.reasoning != reasoning {
			c.refuse(path+".reasoning", "endpoints serving model %q name different reasoning families (%q, %q); give them the same one", name, m.reasoning, reasoning)
		}
		m.refs = append(m.refs, ref)
		m.weights[weight] = true
	}
	for i, e := range c.r.Spec.ModelEndpoints {
		path := fmt.Sprintf("spec.modelEndpoints[%d]", i)
		if e.Catalog != "" {
			c.refuse(path+".catalog", "Junction has no built-in model cards for backend models; describe the model under spec.config.routing.providers.models (pricing, pii_policy) instead")
		}
		url, ok := c.backendURL(path+".backend", e.Backend)
		if !ok {
			continue
		}
		if prev, dup := c.endpointURL[e.Name]; dup && prev != url {
			c.refuse(path+".name", "two endpoints are named %q; endpoint names must be unique", e.Name)
		}
		c.endpointURL[e.Name] = url
		ref := map[string]any{"base_url": url}
		if e.Backend.Service != nil && e.Backend.Service.APIKeyEnv != "" {
			ref["api_key_env"] = e.Backend.Service.APIKeyEnv
		}
		w := int32(1)
		if e.Weight != nil {
			w = *e.Weight
		}
		add(path, e.Model, e.Reasoning, "", ref, w)
		for j, l := range e.LoRAs {
			add(fmt.Sprintf("%s.loras[%d]", path, j), l.Name, e.Reasoning, l.Description, ref, w)
		}
	}
	if len(order) == 0 {
		return
	}
	p := obj(c.doc, "providers")
	existing, _ := p["models"].([]any)
	names := map[string]bool{}
	for _, m := range existing {
		if mm, ok := m.(map[string]any); ok {
			names[fmt.Sprint(mm["name"])] = true
		}
	}
	for _, name := range order {
		m := byName[name]
		if names[name] {
			c.refuse(m.path+".model", "model %q is also declared in spec.config.routing.providers.models; declare it once", name)
			continue
		}
		if len(m.weights) > 1 {
			c.refuse(m.path+".weight", "Junction tries a model's backends in order, without weights; give the endpoints of model %q the same weight (or use one endpoint)", name)
		}
		out := map[string]any{"name": name, "backend_refs": m.refs}
		if m.reasoning != "" {
			out["reasoning_family"] = m.reasoning
		}
		if m.description != "" {
			out["description"] = m.description
		}
		existing = append(existing, out)
	}
	p["models"] = existing
	d := obj(p, "defaults")
	setDefault(d, "default_model", order[0])
}

// backendURL is the OpenAI-compatible base URL of an endpoint's backend, by the cluster's DNS names.
func (c *converter) backendURL(path string, b v1alpha1.EndpointBackend) (string, bool) {
	switch b.Type {
	case "service":
		if b.Service == nil {
			c.refuse(path+".service", "backend type service needs service")
			return "", false
		}
		ns := b.Service.Namespace
		if ns == "" {
			ns = c.ns
		}
		port := b.Service.Port
		if port == 0 {
			port = 8000
		}
		prefix := b.Service.Path
		if prefix == "" {
			prefix = "/v1"
		}
		return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d%s", b.Service.Name, ns, port, prefix), true
	case "kserve":
		if b.InferenceServiceName == "" {
			c.refuse(path+".inferenceServiceName", "backend type kserve needs inferenceServiceName")
			return "", false
		}
		// KServe (raw deployment mode) serves an InferenceService's predictor as the Service NAME-predictor
		// on port 80, with the OpenAI-compatible API under /openai/v1 for its Hugging Face runtime.
		return fmt.Sprintf("http://%s-predictor.%s.svc.cluster.local/openai/v1", b.InferenceServiceName, c.ns), true
	case "llamastack":
		c.refuse(path+".discoveryLabels", "Junction does not discover LlamaStack services by label; name the Service with backend type service")
		return "", false
	default:
		c.refuse(path+".type", "unknown backend type %q (kserve, llamastack or service)", b.Type)
		return "", false
	}
}

// recipe is the recipe the resource's decisions and complexity rules join: routing's default recipe (the one
// named default, else the first), created as "default" when routing has none.
func (c *converter) recipe() map[string]any {
	rs, _ := c.doc["recipes"].([]any)
	var first map[string]any
	for _, r := range rs {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		if m["name"] == "default" {
			return m
		}
		if first == nil {
			first = m
		}
	}
	if first != nil {
		return first
	}
	m := map[string]any{"name": "default"}
	c.doc["recipes"] = append(rs, m)
	return m
}

func (c *converter) embedding(e *v1alpha1.EmbeddingModels) {
	if e == nil {
		return
	}
	const p = "spec.config.embedding_models"
	local := "Junction's in-process embedding model is its default model (or a model_deployments binding for embeddings), not a path"
	if e.Qwen3ModelPath != "" {
		c.refuse(p+".qwen3_model_path", "%s", local)
	}
	if e.MmBertModelPath != "" {
		c.refuse(p+".mmbert_model_path", "%s", local)
	}
	if e.UseCPU != nil && !*e.UseCPU {
		c.refuse(p+".use_cpu", "Junction's in-process embedding model runs on the CPU; serve it on a device from a model deployment (spec.config.model_deployments) instead")
	}
	if ec := e.EmbeddingConfig; ec != nil {
		q := p + ".embedding_config"
		if ec.Backend == "model_runtime" {
			c.refuse(q+".backend", "bind the embeddings signal to a deployment with spec.config.model_deployments.bindings.embeddings instead")
		}
		if ec.ModelType != "" && ec.ModelType != "remote" {
			c.refuse(q+".model_type", "Junction chooses no embedding model family by name; use its default model, a deployment, or endpoint (model_type remote)")
		}
		if ec.PreloadEmbeddings != nil && !*ec.PreloadEmbeddings {
			c.refuse(q+".preload_embeddings", "Junction always embeds the candidates when a configuration is activated")
		}
		if ec.TargetDimension != nil {
			c.refuse(q+".target_dimension", "Junction uses the model's own dimension; set endpoint.dimensions for a remote model")
		}
		if ec.TargetLayer != nil {
			c.refuse(q+".target_layer", "Junction does not truncate the model's layers")
		}
		if ec.EnableSoftMatching != nil && *ec.EnableSoftMatching {
			c.refuse(q+".enable_soft_matching", "Junction's embedding signals compare with each candidate (aggregation max or mean); set aggregation on the signal")
		}
		if ec.MinScoreThreshold != "" && ec.MinScoreThreshold != "0.5" {
			c.refuse(q+".min_score_threshold", "thresholds are set per embedding signal in spec.config.routing.recipes[].signals.embeddings")
		}
	}
	if ep := e.Endpoint; ep != nil {
		q := p + ".endpoint"
		emb := map[string]any{}
		if ep.BaseURL != "" {
			emb["endpoint"] = ep.BaseURL
		}
		if ep.Model != "" {
			emb["model"] = ep.Model
		}
		if ep.APIKeyEnv != "" {
			emb["api_key_env"] = ep.APIKeyEnv
		}
		if ep.Dimensions != nil {
			emb["dimensions"] = int(*ep.Dimensions)
		}
		if ep.TimeoutSeconds != nil && *ep.TimeoutSeconds > 0 {
			emb["timeout_ms"] = int(*ep.TimeoutSeconds) * 1000
		}
		if ep.MaxRetries != nil && *ep.MaxRetries > 0 {
			c.refuse(q+".max_retries", "Junction's embedding client does not retry; leave it 0")
		}
		if ep.MaxResponseBytes != nil && *ep.MaxResponseBytes > 0 {
			c.refuse(q+".max_response_bytes", "Junction bounds embedding answers itself; leave it 0")
		}
		if len(emb) > 0 {
			c.merge(q, obj(obj(c.doc, "global"), "storage"), "embedding", emb)
		}
	}
}

func (c *converter) cache(p string, cc *v1alpha1.CacheConfig) {
	if cc.Enabled == nil || !*cc.Enabled {
		return // the cache runs where decisions name a response_cache plugin; off, there is nothing to store
	}
	svc := map[string]any{"backend": "memory"}
	switch cc.BackendType {
	case "", "memory":
	case "key_value":
		svc["backend"] = "redis"
		c.keyValue(p+".key_value", cc.KeyValue)
	case "vector_database":
		c.refuse(p+".backend_type", "Junction has no vector-database cache backend; use backend_type memory")
	}
	if cc.SimilarityThreshold != "" {
		c.refuse(p+".similarity_threshold", "set semantic.similarity_threshold in the configuration of a decision's response_cache plugin")
	}
	if cc.TTLSeconds != nil && *cc.TTLSeconds > 0 {
		c.refuse(p+".ttl_seconds", "set ttl_seconds in the configuration of a decision's response_cache plugin")
	}
	if cc.EvictionPolicy != "" && cc.EvictionPolicy != "lru" {
		c.refuse(p+".eviction_policy", "Junction's cache evicts the least recently used entry; use lru")
	}
	if cc.MaxEntries != nil && *cc.MaxEntries > 0 {
		svc["max_entries"] = int(*cc.MaxEntries)
	}
	if im := cc.InMemory; im != nil {
		if im.UseHNSW != nil && *im.UseHNSW {
			c.refuse(p+".in_memory.use_hnsw", "Junction's semantic lookup scans a namespace through SimHash sketches, not an HNSW graph; set use_hnsw false")
		}
		if im.HNSWM != nil && *im.HNSWM != 16 {
			c.refuse(p+".in_memory.hnsw_m", "no HNSW index in Junction; leave it at 16")
		}
		if im.HNSWEfConstruction != nil && *im.HNSWEfConstruction != 200 {
			c.refuse(p+".in_memory.hnsw_ef_construction", "no HNSW index in Junction; leave it at 200")
		}
		if im.MaxMemoryEntries != nil && *im.MaxMemoryEntries > 0 {
			if _, set := svc["max_entries"]; set && int(*im.MaxMemoryEntries) != svc["max_entries"] {
				c.refuse(p+".in_memory.max_memory_entries", "differs from max_entries; set one of them")
			} else {
				svc["max_entries"] = int(*im.MaxMemoryEntries)
			}
		}
	}
	c.merge(p, obj(obj(c.doc, "global"), "services"), "response_cache", svc)
}

// RedisPasswordEnv is the environment variable the controller fills from a
// key-value backend's password_secret_ref and the converted configuration
// names as global.state.redis.password_env.
const RedisPasswordEnv = "JUNCTION_REDIS_PASSWORD"

// keyValue maps a key-value cache backend onto Junction's shared state:
// global.state on that Redis, the response cache (and with it the response
// store, rate limits and memories) kept there. Junction's semantic lookup
// needs no search module in Redis (each replica keeps its own index, fed
// from Redis), so the index and search settings have no equivalent:
// anything but their defaults is refused.
func (c *converter) keyValue(p string, kv *v1alpha1.KeyValueBackend) {
	if kv == nil || (kv.Connection.Host == "" && (kv.Connection.Mode != "cluster" || len(kv.Connection.Addresses) == 0)) {
		c.refuse(p+".connection.host", "a key_value backend needs the Redis host (or, with mode cluster, addresses)")
		return
	}
	conn := kv.Connection
	port := int32(6379)
	if conn.Port != 0 {
		port = conn.Port
	}
	redis := map[string]any{}
	switch conn.Mode {
	case "", "standalone":
		if len(conn.Addresses) > 0 {
			c.refuse(p+".connection.addresses", "addresses lists a Redis Cluster's seed nodes: set mode: cluster, or name the one server as host and port")
		}
		redis["address"] = net.JoinHostPort(conn.Host, strconv.Itoa(int(port)))
		if conn.Mode != "" {
			redis["mode"] = conn.Mode
		}
		if conn.Database != nil && *conn.Database != 0 {
			redis["db"] = int(*conn.Database)
		}
	case "cluster":
		redis["mode"] = "cluster"
		switch {
		case len(conn.Addresses) > 0 && conn.Host != "":
			c.refuse(p+".connection.host", "with mode cluster set host (the one seed) or addresses, not both")
		case len(conn.Addresses) > 0:
			if conn.Port != 0 && conn.Port != 6379 {
				c.refuse(p+".connection.port", "with addresses each seed names its port (host:port); remove port")
			}
			for i, a := range conn.Addresses {
				if _, _, err := net.SplitHostPort(a); err != nil {
					c.refuse(fmt.Sprintf("%s.connection.addresses[%d]", p, i), "%q is not host:port", a)
				}
			}
			redis["addresses"] = append([]string(nil), conn.Addresses...)
		default:
			redis["address"] = net.JoinHostPort(conn.Host, strconv.Itoa(int(port)))
		}
		if conn.Database != nil && *conn.Database != 0 {
			c.refuse(p+".connection.database", "a Redis Cluster has database 0 only; remove database")
		}
	default:
		c.refuse(p+".connection.mode", "must be standalone or cluster (got %q)", conn.Mode)
	}
	switch {
	case conn.Password != "":
		c.refuse(p+".connection.password", "a password written in the resource would be copied into the ConfigMap; put it in a Secret and name it in password_secret_ref")
	case conn.PasswordSecretRef != nil:
		redis["password_env"] = RedisPasswordEnv // the controller sets it from the Secret
	}
	if conn.Timeout != nil && *conn.Timeout != 30 {
		c.refuse(p+".connection.timeout", "Junction's Redis client keeps its own short timeouts (the cache degrades to a miss rather than wait); leave it 30")
	}
	if t := conn.TLS; t != nil && t.Enabled != nil && *t.Enabled {
		tls := map[string]any{"enabled": true}
		for k, v := range map[string]string{"ca_file": t.CAFile, "cert_file": t.CertFile, "key_file": t.KeyFile} {
			if v != "" {
				tls[k] = v
			}
		}
		redis["tls"] = tls
	}
	ix := kv.Index
	noSearch := func(field string, got, def any) {
		if got != def {
			c.refuse(p+"."+field, "Junction uses no Redis search index (each replica keeps its own semantic index, fed from Redis); leave it at its default %v", def)
		}
	}
	noSearch("index.name", ix.Name, "semantic_cache_idx")
	noSearch("index.prefix", ix.Prefix, "doc:")
	noSearch("index.index_type", ix.IndexType, "HNSW")
	noSearch("index.vector_field.name", ix.VectorField.Name, "embedding")
	noSearch("index.vector_field.metric_type", ix.VectorField.MetricType, "COSINE")
	if ix.VectorField.Dimension != nil {
		c.refuse(p+".index.vector_field.dimension", "Junction takes the dimension from the embedding model; remove it")
	}
	if m := ix.Params.M; m != nil && *m != 16 {
		c.refuse(p+".index.params.M", "no HNSW index in Junction; leave it at 16")
	}
	if ef := ix.Params.EfConstruction; ef != nil && *ef != 64 {
		c.refuse(p+".index.params.efConstruction", "no HNSW index in Junction; leave it at 64")
	}
	if k := kv.Search.TopK; k != nil && *k != 1 {
		c.refuse(p+".search.topk", "a cache lookup answers with the one nearest entry; leave it 1")
	}
	if d := kv.Development.DropIndexOnStartup; d != nil && *d {
		c.refuse(p+".development.drop_index_on_startup", "there is no index in Redis to drop; leave it false")
	}
	c.merge(p, obj(c.doc, "global"), "state", map[string]any{"backend": "redis", "redis": redis})
}

func (c *converter) tools(t *v1alpha1.ToolsSelection) {
	if t == nil || t.Enabled == nil || !*t.Enabled {
		return
	}
	c.refuse("spec.config.tools", "Junction selects tools per decision with the tools plugin: add {type: tools, configuration: {...}} to the plugins of the decisions that need it (docs/plugins-builtin.md)")
}

func (c *converter) promptGuard(g *v1alpha1.PromptGuard, recipe map[string]any) {
	if g == nil || g.Enabled == nil || !*g.Enabled {
		return
	}
	const p = "spec.config.prompt_guard"
	if g.ModelID != "" {
		c.refuse(p+".model_id", "Junction's jailbreak signal runs its default model, or a deployment bound with model_deployments.bindings.jailbreak")
	}
	if g.JailbreakMappingPath != "" {
		c.refuse(p+".jailbreak_mapping_path", "the jailbreak model's labels are part of the model; there is no mapping file")
	}
	if g.UseCPU != nil && !*g.UseCPU {
		c.refuse(p+".use_cpu", "the in-process jailbreak model runs on the CPU; serve it on a device from a model deployment instead")
	}
	if g.ExternalModel != "" {
		c.refuse(p+".external_model", "Junction's guardrail is the jailbreak signal, not a remote model")
	}
	// The guard is a jailbreak signal that blocks (403) on a match, as prompt_guard does.
	sig := map[string]any{"name": "prompt_guard", "action": "block"}
	if g.Threshold != "" {
		f, err := strconv.ParseFloat(string(g.Threshold), 64)
		if err != nil {
			c.fail(fmt.Errorf("%s.threshold: %w", p, err))
			return
		}
		sig["threshold"] = f
	}
	appendNamed(c, p, obj(recipe, "signals"), "jailbreak", sig)
}

func (c *converter) classifier(cl *v1alpha1.Classifier) {
	if cl == nil {
		return
	}
	why := "Junction's domain and pii signals run its default models (or a deployment bound with model_deployments.bindings); thresholds are set per signal in spec.config.routing.recipes[].signals"
	type field struct {
		name string
		set  bool
	}
	check := func(p string, fs []field) {
		for _, f := range fs {
			if f.set {
				c.refuse(p+"."+f.name, "%s", why)
			}
		}
	}
	if m := cl.CategoryModel; m != nil {
		check("spec.config.classifier.category_model", []field{{"model_id", m.ModelID != ""}, {"threshold", m.Threshold != ""},
			{"use_cpu", m.UseCPU != nil && !*m.UseCPU}, {"category_mapping_path", m.CategoryMappingPath != ""}})
	}
	if m := cl.PIIModel; m != nil {
		check("spec.config.classifier.pii_model", []field{{"model_id", m.ModelID != ""}, {"threshold", m.Threshold != ""},
			{"use_cpu", m.UseCPU != nil && !*m.UseCPU}, {"pii_mapping_path", m.PIIMappingPath != ""}})
	}
}

func (c *converter) complexity(p string, r v1alpha1.ComplexityRule, recipe map[string]any) {
	sig := map[string]any{"name": r.Name}
	if r.Description != "" {
		sig["description"] = r.Description
	}
	for k, v := range map[string]string{"threshold": string(r.Threshold), "hard_above": string(r.HardAbove), "easy_below": string(r.EasyBelow), "hard_below": string(r.HardBelow), "easy_above": string(r.EasyAbove)} {
		if v != "" {
			sig[k] = v
		}
	}
	if r.Hard != nil {
		sig["hard"] = map[string]any{"candidates": r.Hard.Candidates}
	}
	if r.Easy != nil {
		sig["easy"] = map[string]any{"candidates": r.Easy.Candidates}
	}
	if r.Composer != nil && len(r.Composer.Conditions) > 0 {
		var conds []any
		for _, x := range r.Composer.Conditions {
			conds = append(conds, map[string]any{"type": x.Type, "name": x.Name})
		}
		if r.Composer.Operator == "OR" {
			c.refuse(p+".composer.operator", "Junction's composer conditions must all hold (AND); express the alternative in the decisions' rules instead")
		}
		sig["composer"] = conds
	}
	if r.PrototypeScoring != nil && len(r.PrototypeScoring.Raw) > 0 {
		c.refuse(p+".prototype_scoring", "Junction's complexity scoring has no family override; grade with hard and easy candidates")
	}
	appendNamed(c, p, obj(recipe, "signals"), "complexity", sig)
}

func (c *converter) externalModel(e v1alpha1.ExternalModel) {
	m := map[string]any{"name": e.Name, "llm_endpoint": map[string]any{"address": e.LLMEndpoint.Address, "port": int(e.LLMEndpoint.Port)}}
	if e.LLMEndpoint.Protocol != "" {
		m["llm_endpoint"].(map[string]any)["protocol"] = e.LLMEndpoint.Protocol
	}
	if e.ModelRole != "" {
		m["model_role"] = e.ModelRole
	}
	if e.LLMModelName != "" {
		m["llm_model_name"] = e.LLMModelName
	}
	if e.LLMTimeoutSeconds != nil {
		m["llm_timeout_seconds"] = int(*e.LLMTimeoutSeconds)
	}
	if e.APIKeyEnv != "" {
		m["api_key_env"] = e.APIKeyEnv
	}
	g := obj(c.doc, "global")
	appendNamed(c, "spec.config.external_models", g, "external_models", m)
}

func (c *converter) decision(p string, d v1alpha1.DecisionConfig, recipe map[string]any) {
	out := map[string]any{"name": d.Name}
	if d.Description != "" {
		out["description"] = d.Description
	}
	if d.Priority != 0 {
		out["priority"] = int(d.Priority)
	}
	rules, err := rawObject(d.Rules.Raw)
	if err != nil {
		c.fail(fmt.Errorf("%s.rules: %w", p, err))
		return
	}
	out["rules"] = rules
	var refs []any
	for _, r := range d.ModelRefs {
		m := map[string]any{"model": r.Model}
		if r.UseReasoning != nil {
			m["use_reasoning"] = *r.UseReasoning
		}
		if r.ReasoningEffort != "" {
			m["reasoning_effort"] = r.ReasoningEffort
		}
		if r.Weight != nil {
			m["weight"] = int(*r.Weight)
		}
		refs = append(refs, m)
	}
	if len(refs) > 0 {
		out["modelRefs"] = refs
	}
	if len(d.PreferredEndpoints) > 0 {
		var pe []any
		for i, name := range d.PreferredEndpoints {
			// An endpoint of spec.modelEndpoints by name; anything else is already a base_url or host:port.
			if url, ok := c.endpointURL[name]; ok {
				pe = append(pe, url)
			} else if strings.Contains(name, ":") || strings.Contains(name, "/") {
				pe = append(pe, name)
			} else {
				c.refuse(fmt.Sprintf("%s.preferred_endpoints[%d]", p, i), "%q names no endpoint of spec.modelEndpoints (or give a base_url or host:port)", name)
			}
		}
		out["preferred_endpoints"] = pe
	}
	var plugins []any
	for i, pl := range d.Plugins {
		m, err := rawObject(pl.Raw)
		if err != nil {
			c.fail(fmt.Errorf("%s.plugins[%d]: %w", p, i, err))
			return
		}
		plugins = append(plugins, m)
	}
	if len(plugins) > 0 {
		out["plugins"] = plugins
	}
	if d.Algorithm != nil && len(d.Algorithm.Raw) > 0 {
		m, err := rawObject(d.Algorithm.Raw)
		if err != nil {
			c.fail(fmt.Errorf("%s.algorithm: %w", p, err))
			return
		}
		out["algorithm"] = m
	}
	if d.Reliability != nil {
		out["reliability"] = reliability(d.Reliability)
	}
	if d.Fallback != nil {
		out["fallback"] = fallback(d.Fallback)
	}
	appendNamed(c, p, recipe, "decisions", out)
}

func reliability(r *v1alpha1.Reliability) map[string]any {
	m := map[string]any{}
	for k, v := range map[string]v1alpha1.Duration{
		"total_timeout": r.TotalTimeout, "per_try_timeout": r.PerTryTimeout, "idle_timeout": r.IdleTimeout,
		"first_byte_timeout": r.FirstByteTimeout, "retry_back_off_base": r.RetryBackOffBase,
		"retry_back_off_max": r.RetryBackOffMax, "retry_after_max": r.RetryAfterMax,
	} {
		if v != "" {
			m[k] = duration(v)
		}
	}
	if r.RetryCount != nil {
		m["retry_count"] = int(*r.RetryCount)
	}
	if r.RetryOn != nil {
		m["retry_on"] = *r.RetryOn
	}
	if len(r.RetriableStatusCodes) > 0 {
		m["retriable_status_codes"] = ints(r.RetriableStatusCodes)
	}
	return m
}

func fallback(f *v1alpha1.Fallback) map[string]any {
	m := map[string]any{}
	if f.Enabled != nil {
		m["enabled"] = *f.Enabled
	}
	if f.MaxAttempts != nil {
		m["max_attempts"] = int(*f.MaxAttempts)
	}
	if f.TotalTimeout != "" {
		m["total_timeout"] = duration(f.TotalTimeout)
	}
	if f.PerAttemptTimeout != "" {
		m["per_attempt_timeout"] = duration(f.PerAttemptTimeout)
	}
	if len(f.RetryableStatusCodes) > 0 {
		m["retryable_status_codes"] = ints(f.RetryableStatusCodes)
	}
	return m
}

// duration writes the CRD's "0" (allowed as the off value) as Junction's "0s".
func duration(d v1alpha1.Duration) string {
	if d == "0" {
		return "0s"
	}
	return string(d)
}

func ints(xs []int32) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

func (c *converter) api(a *v1alpha1.APIConfig) {
	if a == nil || a.BatchClassification == nil {
		return
	}
	b := a.BatchClassification
	const p = "spec.config.api.batch_classification"
	if b.MaxBatchSize != nil {
		c.set(p+".max_batch_size", obj(obj(obj(obj(c.doc, "global"), "services"), "api"), "batch_classification"), "max_batch_size", int(*b.MaxBatchSize))
	}
	if b.ConcurrencyThreshold != nil && *b.ConcurrencyThreshold != 5 {
		c.refuse(p+".concurrency_threshold", "Junction's batch classification runs one batched model call, with no concurrency threshold; leave it at 5")
	}
	if b.MaxConcurrency != nil && *b.MaxConcurrency != 8 {
		c.refuse(p+".max_concurrency", "Junction's batch classification runs one batched model call; leave it at 8")
	}
	if m := b.Metrics; m != nil {
		q := p + ".metrics"
		if m.Enabled != nil && !*m.Enabled {
			c.refuse(q+".enabled", "Junction always records its classification metrics; turn the whole metrics listener off with spec.metrics.enabled")
		}
		if m.DetailedGoroutineTracking != nil && !*m.DetailedGoroutineTracking {
			c.refuse(q+".detailed_goroutine_tracking", "no such switch in Junction; leave it true")
		}
		if m.HighResolutionTiming != nil && *m.HighResolutionTiming {
			c.refuse(q+".high_resolution_timing", "Junction's histograms have fixed buckets; leave it false")
		}
		if m.SampleRate != "" && m.SampleRate != "1.0" && m.SampleRate != "1" {
			c.refuse(q+".sample_rate", "Junction records every request; leave it 1.0")
		}
		if len(m.DurationBuckets) > 0 {
			c.refuse(q+".duration_buckets", "Junction's histogram buckets are fixed by the spec's metrics")
		}
		if len(m.SizeBuckets) > 0 {
			c.refuse(q+".size_buckets", "Junction's histogram buckets are fixed by the spec's metrics")
		}
	}
}

func (c *converter) observability(o *v1alpha1.ObservabilityConfig) {
	if o == nil {
		return
	}
	obs := obj(obj(obj(c.doc, "global"), "services"), "observability")
	if o.Metrics != nil && o.Metrics.Enabled != nil {
		c.set("spec.config.observability.metrics.enabled", obj(obs, "metrics"), "enabled", *o.Metrics.Enabled)
	}
	t := o.Tracing
	if t == nil {
		return
	}
	const p = "spec.config.observability.tracing"
	tr := map[string]any{}
	if t.Enabled != nil {
		tr["enabled"] = *t.Enabled
	}
	if t.Provider != "" {
		tr["provider"] = t.Provider
	}
	if e := t.Exporter; e != nil {
		ex := map[string]any{}
		if e.Type != "" {
			ex["type"] = e.Type
		}
		if e.Endpoint != "" {
			ex["endpoint"] = e.Endpoint
		}
		if e.Insecure != nil {
			ex["insecure"] = *e.Insecure
		}
		tr["exporter"] = ex
	}
	if s := t.Sampling; s != nil {
		sm := map[string]any{}
		if s.Type != "" {
			sm["type"] = s.Type
		}
		if s.Rate != "" {
			f, err := strconv.ParseFloat(string(s.Rate), 64)
			if err != nil {
				c.fail(fmt.Errorf("%s.sampling.rate: %w", p, err))
				return
			}
			sm["rate"] = f
		}
		tr["sampling"] = sm
	}
	if t.Resource != nil && len(t.Resource.Raw) > 0 {
		m, err := rawObject(t.Resource.Raw)
		if err != nil {
			c.fail(fmt.Errorf("%s.resource: %w", p, err))
			return
		}
		tr["resource"] = m
	}
	c.merge(p, obs, "tracing", tr)
}

// set writes key unless routing already holds a different value there (then the two disagree: refused).
func (c *converter) set(path string, m map[string]any, key string, v any) {
	if old, ok := m[key]; ok && !sameJSON(old, v) {
		c.refuse(path, "spec.config.routing sets the same setting to %v; set it in one place", jsonText(old))
		return
	}
	m[key] = v
}

// merge writes the object v at m[key], key by key, refusing a key routing already sets differently.
func (c *converter) merge(path string, m map[string]any, key string, v map[string]any) {
	dst, ok := m[key].(map[string]any)
	if !ok {
		m[key] = v
		return
	}
	for _, k := range sortedKeys(v) {
		c.set(path+"."+k, dst, k, v[k])
	}
}

// appendNamed appends item to the list m[key], refusing a name the list already holds.
func appendNamed(c *converter, path string, m map[string]any, key string, item map[string]any) {
	list, _ := m[key].([]any)
	for _, x := range list {
		if xm, ok := x.(map[string]any); ok && xm["name"] == item["name"] {
			c.refuse(path+".name", "%s %q is also declared in spec.config.routing; declare it once", strings.TrimSuffix(key, "s"), item["name"])
			return
		}
	}
	m[key] = append(list, item)
}

func obj(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

func setDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

func rawObject(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("must be an object")
	}
	return m, nil
}

func sameJSON(a, b any) bool { return jsonText(a) == jsonText(b) }

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
