package mgmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"github.com/junction-router/junction/recipes"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// restartReasons lists the changes from cur to next that a running serve
// cannot apply: tracing (409 RESTART_REQUIRED), and the set of listeners or a
// listener's address, port or timeout (reason restart_required at that
// listener's path). The other listeners we hold sockets for (management,
// metrics, ext_proc) count the same way, and so do the data directory,
// embedding model and backend of stored data (global.storage.dir,
// .embedding, .backend, .postgres). Listener api_keys and knowledge bases
// change live.
func restartReasons(cur, next *recipes.Document) []Reason {
	if cur == nil {
		return nil
	}
	var rs []Reason
	add := func(path, msg string) {
		rs = append(rs, Reason{Stage: "validate", Code: "restart_required", Path: path, Message: msg})
	}
	if !reflect.DeepEqual(canonicalOf(cur.Global.Services.Observability.Tracing), canonicalOf(next.Global.Services.Observability.Tracing)) {
		add("/global/services/observability/tracing", "tracing settings are read at start; restart junction serve to change them")
	}
	if !reflect.DeepEqual(cur.Global.Services.ResponseAPI, next.Global.Services.ResponseAPI) {
		add("/global/services/response_api", "the response store (store, ttl, bounds) is opened at start; restart junction serve to change it")
	}
	if !reflect.DeepEqual(cur.Global.Services.ResponseCache, next.Global.Services.ResponseCache) {
		add("/global/services/response_cache", "the response cache's backend and bounds are read at start; restart junction serve to change them")
	}
	curL := map[string]recipes.Listener{}
	for _, l := range cur.Listeners {
		curL[l.Name] = l
	}
	seen := map[string]bool{}
	for i, l := range next.Listeners {
		seen[l.Name] = true
		old, ok := curL[l.Name]
		p := fmt.Sprintf("/listeners/%d", i)
		if !ok {
			add(p, fmt.Sprintf("listener %q is new; listeners are opened at start, so adding one needs a restart", l.Name))
			continue
		}
		if old.Address != l.Address {
			add(p+"/address", fmt.Sprintf("listener %q: the address changes from %q to %q, which needs a restart", l.Name, old.Address, l.Address))
		}
		if old.Port != l.Port {
			add(p+"/port", fmt.Sprintf("listener %q: the port changes from %d to %d, which needs a restart", l.Name, old.Port, l.Port))
		}
		if old.Timeout != l.Timeout {
			add(p+"/timeout", fmt.Sprintf("listener %q: the timeout changes from %s to %s, which needs a restart", l.Name, old.Timeout, l.Timeout))
		}
	}
	for i, l := range cur.Listeners {
		if !seen[l.Name] {
			add(fmt.Sprintf("/listeners/%d", i), fmt.Sprintf("listener %q would be removed; listeners are closed only by a restart", l.Name))
		}
	}
	sockets := []struct {
		path       string
		a, b       recipes.Endpoint
		restartMsg string
	}{
		{"/global/services/management_api", recipes.Endpoint{Address: cur.Global.Services.ManagementAPI.Address, Port: cur.Global.Services.ManagementAPI.Port},
			recipes.Endpoint{Address: next.Global.Services.ManagementAPI.Address, Port: next.Global.Services.ManagementAPI.Port}, "the management API address"},
		{"/global/services/observability/metrics", recipes.Endpoint{Address: cur.Global.Services.Observability.Metrics.Address, Port: cur.Global.Services.Observability.Metrics.Port},
			recipes.Endpoint{Address: next.Global.Services.Observability.Metrics.Address, Port: next.Global.Services.Observability.Metrics.Port}, "the metrics address"},
		{"/global/extproc", cur.Global.Extproc, next.Global.Extproc, "the ext_proc address"},
	}
	for _, s := range sockets {
		if s.a != s.b {
			add(s.path, s.restartMsg+" is bound at start; restart junction serve to change it")
		}
	}
	// Model deployments and bindings change live: the compile func starts
	// a changed catalog's deployments and the previous configuration serves
	// until they are ready (junction serve's deploy.Fleet).
	if canonicalOf(cur.Global.Services.NativeAPI) != canonicalOf(next.Global.Services.NativeAPI) {
		add("/global/services/native_api", "the native API listener and its keys are set up at start; restart junction serve to change them")
	}
	storageOf := func(d *recipes.Document) (string, *recipes.StorageEmbedding) {
		if st := d.Global.Storage; st != nil && st.Dir != "" {
			return st.Dir, st.Embedding
		} else if st != nil {
			return recipes.DefaultStorageDir, st.Embedding
		}
		return recipes.DefaultStorageDir, nil
	}
	curDir, curEmb := storageOf(cur)
	nextDir, nextEmb := storageOf(next)
	if curDir != nextDir {
		add("/global/storage/dir", "the data directory of stored data is opened at start; restart junction serve to change it")
	}
	if canonicalOf(curEmb) != canonicalOf(nextEmb) {
		add("/global/storage/embedding", "the embedding model of stored data is set up at start (vector stores record it); restart junction serve to change it")
	}
	pgOf := func(d *recipes.Document) *recipes.StoragePostgres {
		if d.Global.Storage == nil {
			return nil
		}
		return d.Global.Storage.Postgres
	}
	if recipes.StorageBackend(cur.Global.Storage) != recipes.StorageBackend(next.Global.Storage) {
		add("/global/storage/backend", "the storage backend is opened at start; restart junction serve to change it")
	}
	if canonicalOf(pgOf(cur)) != canonicalOf(pgOf(next)) {
		add("/global/storage/postgres", "the PostgreSQL connection of stored data is opened at start; restart junction serve to change it")
	}
	if canonicalOf(cur.Global.State) != canonicalOf(next.Global.State) {
		add("/global/state", "the shared-state connection (Redis) is opened at start; restart junction serve to change it")
	}
	if cur.Global.ModelRuntimeEnabled() != next.Global.ModelRuntimeEnabled() {
		add("/global/router/enabled", "the router-side model runtime is switched on or off at start; restart junction serve to change it")
	}
	return rs
}

func canonicalOf(v any) string {
	b, _ := json.Marshal(v)
	var g any
	_ = json.Unmarshal(b, &g)
	c, _ := recipes.CanonicalValue(g)
	return string(c)
}

// decodeGeneric parses JSON keeping numbers exact.
func decodeGeneric(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// Redaction: listener api_keys and backend extra_headers values are secrets.
// A caller without secret_view sees this marker instead; writing the marker
// back keeps the current value, so a read-modify-write by such a caller does
// not wipe keys it could not see.
const redacted = "<redacted>"

// redactDocument replaces secret values in a generic document in place.
func redactDocument(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if ls, ok := m["listeners"].([]any); ok {
		for _, l := range ls {
			if lm, ok := l.(map[string]any); ok {
				if keys, ok := lm["api_keys"].([]any); ok {
					for i := range keys {
						keys[i] = redacted
					}
				}
			}
		}
	}
	if p, ok := m["providers"].(map[string]any); ok {
		if ms, ok := p["models"].([]any); ok {
			for _, mdl := range ms {
				mm, _ := mdl.(map[string]any)
				refs, _ := mm["backend_refs"].([]any)
				for _, r := range refs {
					rm, _ := r.(map[string]any)
					if hs, ok := rm["extra_headers"].(map[string]any); ok {
						for k := range hs {
							hs[k] = redacted
						}
					}
				}
			}
		}
	}
}

// restoreRedacted puts the current secret back wherever next holds the
// redaction marker at the same listener (by name) or model header.
func restoreRedacted(next, cur any) {
	nm, _ := next.(map[string]any)
	cm, _ := cur.(map[string]any)
	if nm == nil || cm == nil {
		return
	}
	byName := func(list any) map[string]map[string]any {
		out := map[string]map[string]any{}
		ls, _ := list.([]any)
		for _, l := range ls {
			if lm, ok := l.(map[string]any); ok {
				if n, ok := lm["name"].(string); ok {
					out[n] = lm
				}
			}
		}
		return out
	}
	curL := byName(cm["listeners"])
	for n, l := range byName(nm["listeners"]) {
		keys, _ := l["api_keys"].([]any)
		old, _ := curL[n]["api_keys"].([]any)
		for i := range keys {
			if keys[i] == redacted && i < len(old) {
				keys[i] = old[i]
			}
		}
	}
	np, _ := nm["providers"].(map[string]any)
	cp, _ := cm["providers"].(map[string]any)
	if np == nil || cp == nil {
		return
	}
	curM := byName(cp["models"])
	for n, mdl := range byName(np["models"]) {
		refs, _ := mdl["backend_refs"].([]any)
		oldRefs, _ := curM[n]["backend_refs"].([]any)
		for i, r := range refs {
			rm, _ := r.(map[string]any)
			hs, _ := rm["extra_headers"].(map[string]any)
			if i >= len(oldRefs) {
				continue
			}
			om, _ := oldRefs[i].(map[string]any)
			ohs, _ := om["extra_headers"].(map[string]any)
			for k, v := range hs {
				if v == redacted {
					if ov, ok := ohs[k]; ok {
						hs[k] = ov
					}
				}
			}
		}
	}
}
