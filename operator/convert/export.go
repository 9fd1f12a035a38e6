package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/recipes"
)

// FromDocument turns an existing Junction configuration document (YAML or JSON) into a JunctionRouter named
// name in namespace. The sections the resource has typed fields for are lifted into them (the default
// recipe's decisions and complexity signals, external models, model deployments, the default reasoning
// effort, tracing); everything else stays in spec.config.routing as written. Loopback listener addresses
// are cleared (a pod is reached on its IP; convert binds 0.0.0.0), and reported in notes.
//
// The result converts back to the same document (ToDocument, compared after Junction's defaults and with
// those addresses aside); where lifting a section would not, that section stays in routing. TLS files the
// document names are reported in notes too: the resource needs spec.volumes and spec.volumeMounts that mount
// them before the controller accepts it (CheckMounts).
func FromDocument(data []byte, name, namespace string) (*v1alpha1.JunctionRouter, []string, error) {
	orig, _, err := recipes.ParseSource(data)
	if err != nil {
		return nil, nil, fmt.Errorf("the configuration is not valid: %w", err)
	}
	canon, err := recipes.CanonicalSource(data)
	if err != nil {
		return nil, nil, err
	}
	routing, err := rawObject(canon)
	if err != nil {
		return nil, nil, err
	}
	notes := clearLoopback(routing)
	r := &v1alpha1.JunctionRouter{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "JunctionRouter"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}
	if mt := obj(obj(obj(obj(routing, "global"), "services"), "observability"), "metrics"); mt["port"] != nil {
		var p int32
		if err := json.Unmarshal([]byte(jsonText(mt["port"])), &p); err == nil && p != MetricsPort {
			r.Spec.Metrics.Port, r.Spec.Metrics.TargetPort = p, p
		}
	}
	want, err := normalized(orig)
	if err != nil {
		return nil, nil, err
	}
	// Lift one section at a time, keeping each only if the whole still converts back to the original.
	for _, lift := range lifts {
		trial := r.DeepCopy()
		rest, err := rawObject(mustJSON(routing))
		if err != nil {
			return nil, nil, err
		}
		if !lift(rest, &trial.Spec.Config) {
			continue
		}
		trial.Spec.Config.Routing = &runtime.RawExtension{Raw: mustJSON(prune(rest))}
		if ok, _ := roundTrips(trial, want); ok {
			r, routing = trial, rest
		}
	}
	r.Spec.Config.Routing = &runtime.RawExtension{Raw: mustJSON(prune(routing))}
	if ok, err := roundTrips(r, want); !ok {
		return nil, nil, fmt.Errorf("export does not convert back to the same configuration (a bug; please report it): %v", err)
	}
	// TLS files the document names are files of the machine it ran on: in a pod they come from a mounted
	// Secret, which only the user can name.
	var me *MountError
	if errors.As(CheckMounts(r), &me) {
		for _, x := range me.Refused {
			notes = append(notes, x.Path+": "+x.Reason)
		}
	}
	return r, notes, nil
}

// lifts move one section of the routing tree into typed fields; false when the section is absent.
var lifts = []func(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool{
	func(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool {
		d := obj(obj(routing, "providers"), "defaults")
		e, ok := d["default_reasoning_effort"].(string)
		if !ok {
			return false
		}
		delete(d, "default_reasoning_effort")
		cfg.ReasoningEffort = e
		return true
	},
	func(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool {
		g := obj(routing, "global")
		v, ok := g["external_models"]
		if !ok {
			return false
		}
		delete(g, "external_models")
		return into(v, &cfg.ExternalModels)
	},
	func(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool {
		g := obj(routing, "global")
		v, ok := g["model_catalog"]
		if !ok {
			return false
		}
		delete(g, "model_catalog")
		cfg.ModelDeployments = &runtime.RawExtension{Raw: mustJSON(v)}
		return true
	},
	func(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool {
		o := obj(obj(obj(routing, "global"), "services"), "observability")
		v, ok := o["tracing"]
		if !ok {
			return false
		}
		delete(o, "tracing")
		cfg.Observability = &v1alpha1.ObservabilityConfig{}
		return into(v, &cfg.Observability.Tracing)
	},
	func(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool {
		rec := defaultRecipe(routing)
		if rec == nil || rec["decisions"] == nil {
			return false
		}
		v := rec["decisions"]
		delete(rec, "decisions")
		return into(v, &cfg.Decisions)
	},
	func(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool {
		rec := defaultRecipe(routing)
		if rec == nil {
			return false
		}
		sig, _ := rec["signals"].(map[string]any)
		if sig == nil || sig["complexity"] == nil {
			return false
		}
		v := sig["complexity"]
		delete(sig, "complexity")
		var rules []map[string]any
		if !into(v, &rules) {
			return false
		}
		// Junction's composer is a list of rule nodes; the resource's is {operator, conditions} of leaves.
		for _, r := range rules {
			if comp, ok := r["composer"].([]any); ok {
				r["composer"] = map[string]any{"operator": "AND", "conditions": comp}
			}
		}
		return into(rules, &cfg.ComplexityRules)
	},
	liftKeyValueCache,
}

// liftKeyValueCache turns a response cache kept on Redis (global.services.response_cache backend redis, with
// global.state on that Redis) into response_cache's key_value backend: the address (or a cluster's mode and
// seed addresses), db and TLS files. What the resource cannot say (a key prefix, fail_closed, a password_env,
// which the controller fills from password_secret_ref only, a cache setting beyond max_entries) leaves the
// sections in routing as written.
func liftKeyValueCache(routing map[string]any, cfg *v1alpha1.ConfigSpec) bool {
	g := obj(routing, "global")
	svc := obj(g, "services")
	st, _ := g["state"].(map[string]any)
	rc, _ := svc["response_cache"].(map[string]any)
	if st == nil || rc == nil || st["backend"] != "redis" || rc["backend"] != "redis" {
		return false
	}
	r, _ := st["redis"].(map[string]any)
	if r == nil || len(st) != 2 {
		return false
	}
	var conn v1alpha1.KeyValueConnection
	hostPort := func(v any) bool {
		a, ok := v.(string)
		if !ok {
			return false
		}
		h, p, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil || n < 1 || n > 65535 {
			return false
		}
		conn.Host, conn.Port = h, int32(n)
		return true
	}
	for k, v := range r {
		switch k {
		case "mode":
			m, _ := v.(string)
			if m != "standalone" && m != "cluster" {
				return false
			}
			conn.Mode = m
		case "address":
			if !hostPort(v) {
				return false
			}
		case "addresses":
			if !into(v, &conn.Addresses) {
				return false
			}
		case "db":
			var db int32
			if !into(v, &db) {
				return false
			}
			conn.Database = &db
		case "tls":
			var t struct {
				Enabled  bool   `json:"enabled"`
				CAFile   string `json:"ca_file"`
				CertFile string `json:"cert_file"`
				KeyFile  string `json:"key_file"`
			}
			if !into(v, &t) {
				return false
			}
			if t.Enabled {
				on := true
				conn.TLS = &v1alpha1.TLSFiles{Enabled: &on, CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
			}
		default: // key_prefix, fail_closed, password_env: no typed field
			return false
		}
	}
	cc := &v1alpha1.CacheConfig{BackendType: "key_value"}
	for k, v := range rc {
		switch k {
		case "backend":
		case "max_entries":
			var n int32
			if !into(v, &n) {
				return false
			}
			cc.MaxEntries = &n
		default:
			return false
		}
	}
	on := true
	cc.Enabled = &on
	// The index settings at their defaults, as the API server fills them: Junction uses none of them.
	cc.KeyValue = &v1alpha1.KeyValueBackend{Connection: conn, Index: v1alpha1.KeyValueIndex{
		Name: "semantic_cache_idx", Prefix: "doc:", IndexType: "HNSW",
		VectorField: v1alpha1.VectorField{Name: "embedding", MetricType: "COSINE"},
	}}
	delete(g, "state")
	delete(svc, "response_cache")
	cfg.ResponseCache = cc
	return true
}

// defaultRecipe is the recipe ToDocument adds decisions to: the one named default, else the first.
func defaultRecipe(routing map[string]any) map[string]any {
	rs, _ := routing["recipes"].([]any)
	var first map[string]any
	for _, r := range rs {
		if m, ok := r.(map[string]any); ok {
			if m["name"] == "default" {
				return m
			}
			if first == nil {
				first = m
			}
		}
	}
	return first
}

// into decodes v into dst strictly (an unknown field means the section does not fit the typed fields).
func into(v any, dst any) bool {
	dec := json.NewDecoder(bytes.NewReader(mustJSON(v)))
	dec.DisallowUnknownFields()
	return dec.Decode(dst) == nil
}

func roundTrips(r *v1alpha1.JunctionRouter, want []byte) (bool, error) {
	y, err := ToYAML(r)
	if err != nil {
		return false, err
	}
	doc, _, err := recipes.ParseSource(y)
	if err != nil {
		return false, err
	}
	got, err := normalized(doc)
	if err != nil {
		return false, err
	}
	if !bytes.Equal(got, want) {
		return false, fmt.Errorf("got %s\nwant %s", got, want)
	}
	return true, nil
}

// normalized is the canonical JSON of a parsed document with its listening addresses cleared: what
// export keeps and what it deliberately changes are told apart by that.
func normalized(doc *recipes.Document) ([]byte, error) {
	d := *doc
	d.Listeners = append([]recipes.Listener(nil), doc.Listeners...)
	for i := range d.Listeners {
		d.Listeners[i].Address = ""
	}
	d.Global.Services.ManagementAPI.Address = ""
	d.Global.Services.Observability.Metrics.Address = ""
	d.Global.Extproc.Address = ""
	return recipes.Canonical(&d)
}

func clearLoopback(routing map[string]any) []string {
	var notes []string
	loop := func(where string, m map[string]any) {
		if a, ok := m["address"].(string); ok && (a == "127.0.0.1" || a == "localhost" || a == "::1") {
			delete(m, "address")
			notes = append(notes, fmt.Sprintf("%s: address %s dropped (in a pod Junction listens on 0.0.0.0; the Services decide who reaches it)", where, a))
		}
	}
	if ls, ok := routing["listeners"].([]any); ok {
		for i, l := range ls {
			if m, ok := l.(map[string]any); ok {
				loop(fmt.Sprintf("listeners[%d]", i), m)
			}
		}
	}
	g, _ := routing["global"].(map[string]any)
	if g == nil {
		return notes
	}
	if s, ok := g["services"].(map[string]any); ok {
		if m, ok := s["management_api"].(map[string]any); ok {
			loop("global.services.management_api", m)
		}
		if o, ok := s["observability"].(map[string]any); ok {
			if m, ok := o["metrics"].(map[string]any); ok {
				loop("global.services.observability.metrics", m)
			}
		}
	}
	if m, ok := g["extproc"].(map[string]any); ok {
		loop("global.extproc", m)
	}
	return notes
}

// prune drops the objects that lifting (or looking into them) left empty, deepest first; the user's own empty
// objects elsewhere (a plugin's configuration: {}) stay.
func prune(m map[string]any) map[string]any {
	for _, path := range [][]string{
		{"global", "services", "observability", "metrics"}, {"global", "services", "observability"},
		{"global", "services"}, {"global"}, {"providers", "defaults"},
	} {
		parent := m
		for _, k := range path[:len(path)-1] {
			parent, _ = parent[k].(map[string]any)
			if parent == nil {
				break
			}
		}
		if parent == nil {
			continue
		}
		if c, ok := parent[path[len(path)-1]].(map[string]any); ok && len(c) == 0 {
			delete(parent, path[len(path)-1])
		}
	}
	if rec := defaultRecipe(m); rec != nil {
		if sig, ok := rec["signals"].(map[string]any); ok && len(sig) == 0 {
			delete(rec, "signals")
		}
	}
	return m
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // values here came from JSON
	}
	return b
}
