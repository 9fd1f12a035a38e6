package mgmt_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/mgmt"
)

func TestConfigLifecycle(t *testing.T) {
	e := newEnv(t, copyBase(t))
	r := must(t, e.call("GET", "/api/v1/config", nil), 200)
	etag := r.header.Get("ETag")
	if !strings.HasPrefix(etag, `"sha256:`) || r.header.Get("X-Router-Config-Version") != "1" || r.header.Get("X-Router-Config-Hash") == "" {
		t.Fatalf("headers: %v", r.header)
	}
	// Without If-Match: 428 naming the current ETag; stale: 412.
	patch := map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}
	r = must(t, e.call("PATCH", "/api/v1/config", patch), 428)
	if r.errCode(t) != mgmt.CodePreconditionRequired || r.json(t)["error"].(map[string]any)["current_etag"] != etag {
		t.Fatalf("428 body: %s", r.body)
	}
	r = must(t, e.call("PATCH", "/api/v1/config", patch, "If-Match", `"sha256:stale"`), 412)
	if r.json(t)["error"].(map[string]any)["current_etag"] != etag {
		t.Fatalf("412 body: %s", r.body)
	}
	// A good patch persists, activates as config_version 2 and rewrites the file.
	r = must(t, e.call("PATCH", "/api/v1/config", patch, "If-Match", etag), 200)
	res := r.json(t)
	if res["config_version"] != 2.0 || res["activation_status"] != "active" || res["etag"] == etag {
		t.Fatalf("patch result: %s", r.body)
	}
	if e.cfg.Runtime().Current().Document().Providers.Defaults.DefaultModel != "big" {
		t.Fatal("the runtime does not serve the patched document")
	}
	file, _ := os.ReadFile(e.path)
	if !strings.Contains(string(file), "default_model: big") {
		t.Fatalf("the file was not rewritten:\n%s", file)
	}
	h := must(t, e.call("GET", "/api/v1/config/hash", nil), 200).json(t)
	if h["activation_status"] != "active" || h["generated_runtime_hash"] != h["active_runtime_hash"] || h["config_version"] != 2.0 {
		t.Fatalf("hash: %v", h)
	}
	// Invalid documents: 400 with JSON-pointer reasons, nothing persisted.
	etag = e.etag()
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "nope"}}}, "If-Match", etag), 400)
	if !strings.Contains(string(r.body), "/providers/defaults/default_model") {
		t.Fatalf("400 reasons: %s", r.body)
	}
	// Tracing changes need a restart: 409, not persisted.
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"services": map[string]any{"observability": map[string]any{"tracing": map[string]any{"enabled": true}}}}}, "If-Match", etag), 409)
	if r.errCode(t) != mgmt.CodeRestartRequired {
		t.Fatalf("tracing: %s", r.body)
	}
	// The response cache's backend and bounds are read at start.
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"services": map[string]any{"response_cache": map[string]any{"backend": "embedded"}}}}, "If-Match", etag), 409)
	if !strings.Contains(string(r.body), `"path":"/global/services/response_cache"`) || r.errCode(t) != mgmt.CodeRestartRequired {
		t.Fatalf("response cache: %s", r.body)
	}
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"services": map[string]any{"response_cache": map[string]any{"backend": "redis"}}}}, "If-Match", etag), 400)
	if !strings.Contains(string(r.body), "/global/services/response_cache/backend") {
		t.Fatalf("an unknown response cache backend: %s", r.body)
	}
	// Model deployments change live (the compile func starts them; serve's
	// does, see cmd/junction TestServeManagedDeployment): a plan that adds
	// one is no restart.
	r = must(t, e.call("POST", "/api/v1/config/plan", map[string]any{"version": "v1", "global": map[string]any{"model_catalog": map[string]any{
		"deployments": []any{map[string]any{"name": "guard", "artifact": "jailbreak-glove"}}}}}), 200)
	if strings.Contains(string(r.body), "model_catalog") && r.errCode(t) == mgmt.CodeRestartRequired {
		t.Fatalf("deployments: %s", r.body)
	}
	// So does the native API, which publishes deployments on its own listener.
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"services": map[string]any{"native_api": map[string]any{"enabled": false, "port": 18998}}}}, "If-Match", etag), 409)
	if !strings.Contains(string(r.body), `"path":"/global/services/native_api"`) || r.errCode(t) != mgmt.CodeRestartRequired {
		t.Fatalf("native_api: %s", r.body)
	}
	// The response store is opened at start: its bounds need a restart.
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"services": map[string]any{"response_api": map[string]any{"enabled": true, "ttl": "2h"}}}}, "If-Match", etag), 409)
	if !strings.Contains(string(r.body), `"path":"/global/services/response_api"`) || r.errCode(t) != mgmt.CodeRestartRequired {
		t.Fatalf("response_api: %s", r.body)
	}
	// So is switching the router-side model runtime off.
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"router": map[string]any{"enabled": false}}}, "If-Match", etag), 409)
	if !strings.Contains(string(r.body), `"path":"/global/router/enabled"`) || r.errCode(t) != mgmt.CodeRestartRequired {
		t.Fatalf("router.enabled: %s", r.body)
	}
	// A listener port change is rejected at that listener's path.
	cur := e.call("GET", "/api/v1/config", nil, "If-None-Match", "x").json(t)
	cur["listeners"].([]any)[0].(map[string]any)["port"] = 18999
	r = must(t, e.call("PUT", "/api/v1/config", cur, "If-Match", etag), 409)
	if !strings.Contains(string(r.body), `"path":"/listeners/0/port"`) || !strings.Contains(string(r.body), "restart_required") {
		t.Fatalf("listener port: %s", r.body)
	}
	if e.etag() != etag {
		t.Fatal("a refused change was persisted")
	}
	// api_keys change live (and the redaction marker keeps unseen keys).
	cur["listeners"].([]any)[0].(map[string]any)["port"] = 18801
	cur["listeners"].([]any)[0].(map[string]any)["api_keys"] = []any{"client-secret-key", "second-key"}
	must(t, e.call("PUT", "/api/v1/config", cur, "If-Match", etag), 200)
	if keys := e.cfg.Runtime().Current().Document().Listeners[0].APIKeys; len(keys) != 2 || keys[1] != "second-key" {
		t.Fatalf("api_keys: %v", keys)
	}
	// Versions, newest first; rollback by config_version records rollback_of.
	vs := must(t, e.call("GET", "/api/v1/config/versions", nil), 200).json(t)["versions"].([]any)
	if len(vs) != 3 || vs[0].(map[string]any)["active"] != true || vs[2].(map[string]any)["config_version"] != 1.0 {
		t.Fatalf("versions: %v", vs)
	}
	first := vs[2].(map[string]any)["version"].(float64)
	r = must(t, e.call("POST", "/api/v1/config/rollback", map[string]any{"config_version": 1}, "If-Match", e.etag()), 200)
	if r.json(t)["rollback_of"].(float64) != first || r.json(t)["config_version"] != 4.0 {
		t.Fatalf("rollback: %s", r.body)
	}
	if e.cfg.Runtime().Current().Document().Providers.Defaults.DefaultModel != "small" {
		t.Fatal("rollback did not restore the first document")
	}
	must(t, e.call("POST", "/api/v1/config/rollback", map[string]any{"config_version": 99}, "If-Match", e.etag()), 404)
	// By timestamp (the second version: default_model big).
	vs = must(t, e.call("GET", "/api/v1/config/versions", nil), 200).json(t)["versions"].([]any)
	ts := vs[2].(map[string]any)["timestamp"].(string)
	r = must(t, e.call("POST", "/api/v1/config/rollback", map[string]any{"version": ts}, "If-Match", e.etag()), 200)
	if e.cfg.Runtime().Current().Document().Providers.Defaults.DefaultModel != "big" {
		t.Fatalf("rollback by timestamp: %s", r.body)
	}
	must(t, e.call("POST", "/api/v1/config/rollback", map[string]any{"version": true}, "If-Match", e.etag()), 400)
	// Audit: activations and the mutations that caused them, never bodies.
	a := must(t, e.call("GET", "/api/v1/observability/audit?action=config.activate", nil), 200).json(t)
	if n := len(a["entries"].([]any)); n != 5 {
		t.Fatalf("config.activate entries: %d", n)
	}
	all := must(t, e.call("GET", "/api/v1/observability/audit?limit=1000", nil), 200)
	if strings.Contains(string(all.body), "client-secret-key") || strings.Contains(string(all.body), "second-key") {
		t.Fatal("the audit log holds request content")
	}
}

func TestValidateAndPlan(t *testing.T) {
	e := newEnv(t, copyBase(t))
	base, _ := os.ReadFile("testdata/base.yaml")
	v := must(t, e.call("POST", "/api/v1/config/validate", string(base)), 200).json(t)
	if v["valid"] != true || v["normalized"] == nil {
		t.Fatalf("validate: %v", v)
	}
	bad := strings.Replace(string(base), "default_model: small", "default_model: tiny", 1)
	v = must(t, e.call("POST", "/api/v1/config/validate", bad), 200).json(t)
	if v["valid"] != false || !strings.Contains(fmt.Sprint(v["reasons"]), "/providers/defaults/default_model") {
		t.Fatalf("validate bad: %v", v)
	}
	changed := strings.Replace(string(base), "default_model: small", "default_model: big", 1)
	p := must(t, e.call("POST", "/api/v1/config/plan", changed), 200).json(t)
	if p["changed"] != true || p["current_etag"] != e.etag() || p["candidate_etag"] == p["current_etag"] || fmt.Sprint(p["changed_sections"]) != "[providers]" {
		t.Fatalf("plan: %v", p)
	}
	tr := strings.Replace(string(base), "tracing: {enabled: false}", "tracing: {enabled: true}", 1)
	must(t, e.call("POST", "/api/v1/config/plan", tr), 409)
}

func TestRecipes(t *testing.T) {
	e := newEnv(t, copyBase(t))
	l := must(t, e.call("GET", "/api/v1/config/recipes", nil), 200).json(t)
	if len(l["recipes"].([]any)) != 2 || l["entrypoints"].(map[string]any)["public"] != "default" {
		t.Fatalf("recipes: %v", l)
	}
	must(t, e.call("GET", "/api/v1/config/recipes/spare", nil), 200)
	must(t, e.call("GET", "/api/v1/config/recipes/nope", nil), 404)
	rec := map[string]any{"decisions": []any{map[string]any{"name": "all", "rules": map[string]any{"operator": "AND", "conditions": []any{}}, "modelRefs": []any{map[string]any{"model": "big"}}}}}
	v := must(t, e.call("POST", "/api/v1/config/recipes/validate", map[string]any{"name": "third", "recipe": rec}), 200).json(t)
	if v["valid"] != true {
		t.Fatalf("recipe validate: %v", v)
	}
	must(t, e.call("PUT", "/api/v1/config/recipes/third", rec), 428)
	must(t, e.call("PUT", "/api/v1/config/recipes/third", rec, "If-Match", e.etag()), 200)
	if _, ok := e.cfg.Runtime().Current().Document().Recipe("third"); !ok {
		t.Fatal("the new recipe is not serving")
	}
	// The listener's entrypoint (the default recipe) cannot be deleted.
	r := must(t, e.call("DELETE", "/api/v1/config/recipes/default", nil, "If-Match", e.etag()), 409)
	if r.errCode(t) != mgmt.CodeRecipeInUse || !strings.Contains(string(r.body), "/listeners/0/entrypoint") {
		t.Fatalf("delete in use: %s", r.body)
	}
	must(t, e.call("DELETE", "/api/v1/config/recipes/third", nil, "If-Match", e.etag()), 200)
	must(t, e.call("DELETE", "/api/v1/config/recipes/third", nil, "If-Match", e.etag()), 404)
}

// A candidate that validates but fails to compile is persisted, rejected,
// and the previous generation keeps serving; a restart comes back on the
// last activated version.
func TestRejectedActivationKeepsServingAndRestart(t *testing.T) {
	path := copyBase(t)
	e := newEnv(t, path)
	must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}, "If-Match", e.etag()), 200)
	serving := e.cfg.Runtime().Current()
	bad := map[string]any{"recipes": []any{
		map[string]any{"name": "default", "decisions": []any{map[string]any{"name": "x", "rules": map[string]any{"operator": "AND", "conditions": []any{}},
			"modelRefs": []any{map[string]any{"model": "small"}}, "plugins": []any{map[string]any{"type": "system_prompt", "configuration": map[string]any{"mode": "sideways"}}}}}},
		map[string]any{"name": "spare", "decisions": []any{map[string]any{"name": "all", "rules": map[string]any{"operator": "AND", "conditions": []any{}}, "modelRefs": []any{map[string]any{"model": "small"}}}}},
	}}
	r := must(t, e.call("PATCH", "/api/v1/config", bad, "If-Match", e.etag()), 503)
	body := r.json(t)
	if body["status"] != "activation_failed" || !strings.Contains(string(r.body), `"stage":"compile"`) || !strings.Contains(string(r.body), "/recipes/0/decisions/0/plugins/0") {
		t.Fatalf("rejection: %s", r.body)
	}
	if e.cfg.Runtime().Current() != serving {
		t.Fatal("a rejected activation replaced the serving generation")
	}
	h := must(t, e.call("GET", "/api/v1/config/hash", nil), 200).json(t)
	if h["activation_status"] != "failed" || h["last_rejection"] == nil || h["source_config_hash"] == h["active_runtime_hash"] {
		t.Fatalf("hash after rejection: %v", h)
	}
	st := must(t, e.call("GET", "/api/v1/status", nil), 200)
	if !strings.Contains(string(st.body), "ConfigActivationFailed") {
		t.Fatalf("status: %s", st.body)
	}
	if n := len(must(t, e.call("GET", "/api/v1/observability/audit?action=config.reject", nil), 200).json(t)["entries"].([]any)); n != 1 {
		t.Fatalf("config.reject entries: %d", n)
	}
	// Restart: the file holds the rejected document; the last activated
	// version (config_version 2, default_model big) serves.
	e2 := newEnv(t, path)
	gen := e2.cfg.Runtime().Current()
	if gen.Document().Providers.Defaults.DefaultModel != "big" || e2.cfg.Hashes().ConfigVersion != 2 {
		t.Fatalf("after restart: default_model %s, config_version %d", gen.Document().Providers.Defaults.DefaultModel, e2.cfg.Hashes().ConfigVersion)
	}
	// Fix forward from the persisted (rejected) ETag.
	must(t, e2.call("PATCH", "/api/v1/config", map[string]any{"recipes": bad["recipes"].([]any)[1:]}, "If-Match", e2.etag()), 200)
	if h := e2.cfg.Hashes(); h.ActivationStatus != "active" || h.ConfigVersion != 3 {
		t.Fatalf("after fixing forward: %+v", h)
	}
}

func TestRestartKeepsConfigVersion(t *testing.T) {
	path := copyBase(t)
	e := newEnv(t, path)
	must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}, "If-Match", e.etag()), 200)
	etag := e.etag()
	e2 := newEnv(t, path)
	if e2.etag() != etag || e2.cfg.Hashes().ConfigVersion != 2 || len(e2.cfg.Versions(0)) != 2 {
		t.Fatalf("restart: etag %s vs %s, config_version %d, versions %d", e2.etag(), etag, e2.cfg.Hashes().ConfigVersion, len(e2.cfg.Versions(0)))
	}
}

// Mutations racing with traffic lose no update and no request.
func TestConcurrentMutationsAndTraffic(t *testing.T) {
	e := newEnv(t, copyBase(t))
	const writers, each = 3, 4
	stop := make(chan struct{})
	var traffic sync.WaitGroup
	var routed, failed int64
	var mu sync.Mutex
	for i := 0; i < 2; i++ {
		traffic.Add(1)
		go func() {
			defer traffic.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				gen := e.cfg.Runtime().Current()
				res, err := gen.Route(context.Background(), "", &engine.Request{Model: engine.ModelMoM, Input: signal.Input{Text: "this is urgent", UserTexts: []string{"this is urgent"}}})
				mu.Lock()
				if err != nil || res.Model == "" {
					failed++
				} else {
					routed++
				}
				mu.Unlock()
			}
		}()
	}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				word := fmt.Sprintf("w%di%d", w, i)
				for {
					r := e.call("GET", "/api/v1/config/recipes/default", nil)
					etag := r.header.Get("ETag")
					rec := r.json(t)
					kws := rec["signals"].(map[string]any)["keywords"].([]any)
					k := kws[0].(map[string]any)
					k["keywords"] = append(k["keywords"].([]any), word)
					put := e.call("PUT", "/api/v1/config/recipes/default", rec, "If-Match", etag)
					if put.status == 200 {
						break
					}
					if put.status != 412 {
						t.Errorf("PUT: %d %s", put.status, put.body)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	traffic.Wait()
	kws := e.cfg.Runtime().Current().Document().Recipes[0].Signals.Keywords[0].Keywords
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			word := fmt.Sprintf("w%di%d", w, i)
			found := false
			for _, k := range kws {
				found = found || k == word
			}
			if !found {
				t.Errorf("update %s was lost", word)
			}
		}
	}
	if failed != 0 || routed == 0 {
		t.Fatalf("traffic: %d routed, %d failed", routed, failed)
	}
	// An activation overtaken by a newer persisted candidate is superseded,
	// so config_version may count fewer than the mutations; the newest
	// document must be the one serving.
	h := e.cfg.Hashes()
	if h.ConfigVersion < 2 || h.ConfigVersion > 1+writers*each || h.ActivationStatus != "active" || e.cfg.Runtime().Current().Hash() != h.SourceConfigHash {
		t.Fatalf("after the race: %+v, serving %s", h, e.cfg.Runtime().Current().Hash())
	}
}

// Without a configuration file (serve with no --config) changes live in
// memory: they activate, and the answers say they are not persisted.
func TestBuiltinInMemory(t *testing.T) {
	builtin, err := os.ReadFile("testdata/base.yaml") // the real built-in recipe loads lingua: slow under -race
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mgmt.OpenConfig(context.Background(), mgmt.ConfigOptions{Builtin: builtin, Compile: compiler(t)})
	if err != nil {
		t.Fatal(err)
	}
	api, err := mgmt.New(mgmt.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	e := &env{t: t, cfg: cfg, api: api, srv: srv}
	e.router, _ = gorillamux.NewRouter(api.OpenAPI())
	r := must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_reasoning_effort": "low"}}}, "If-Match", e.etag()), 200)
	if r.json(t)["persisted"] != false || cfg.Hashes().ConfigVersion != 2 {
		t.Fatalf("in-memory mutation: %s", r.body)
	}
	if n := len(cfg.Versions(0)); n != 2 {
		t.Fatalf("in-memory history: %d", n)
	}
}

// A file edited by hand is applied like an API change; an invalid edit is
// rejected and the running version stays.
func TestFileEdit(t *testing.T) {
	path := copyBase(t)
	e := newEnv(t, path)
	base, _ := os.ReadFile(path)
	if e.cfg.CheckFile(context.Background()) {
		t.Fatal("an unchanged file counted as a change")
	}
	edited := strings.Replace(string(base), "default_model: small", "default_model: big", 1) + "# edited by hand\n"
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if !e.cfg.CheckFile(context.Background()) {
		t.Fatal("the edit was not seen")
	}
	if e.cfg.Runtime().Current().Document().Providers.Defaults.DefaultModel != "big" || e.cfg.Hashes().ConfigVersion != 2 {
		t.Fatalf("the edit was not activated: %+v", e.cfg.Hashes())
	}
	if after, _ := os.ReadFile(path); string(after) != edited {
		t.Fatal("the operator's file was rewritten")
	}
	vs := e.cfg.Versions(0)
	if vs[0].Source != "file" || !vs[0].Active {
		t.Fatalf("history: %+v", vs[0])
	}
	serving := e.cfg.Runtime().Current()
	if err := os.WriteFile(path, []byte(strings.Replace(edited, "port: 18801", "port: 18802", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg.CheckFile(context.Background())
	h := e.cfg.Hashes()
	if e.cfg.Runtime().Current() != serving || h.ActivationStatus != "failed" || h.LastRejection == nil || h.LastRejection.Reasons[0].Code != "restart_required" {
		t.Fatalf("a restart-only edit: %+v", h)
	}
	if e.cfg.CheckFile(context.Background()) {
		t.Fatal("the same rejected edit was retried")
	}
	r := must(t, e.call("GET", "/api/v1/observability/audit?action=config.reject", nil), 200).json(t)
	if n := len(r["entries"].([]any)); n != 1 {
		t.Fatalf("config.reject entries: %d", n)
	}
}

// A file that no longer parses at start: the last activated version serves
// and the rejection is reported with its line.
func TestStartOnUnreadableFile(t *testing.T) {
	path := copyBase(t)
	first := newEnv(t, path)
	must(t, first.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}, "If-Match", first.etag()), 200)
	if err := os.WriteFile(path, []byte("version: v1\nrecipes: [unclosed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, path)
	h := e.cfg.Hashes()
	if h.ActivationStatus != "failed" || h.LastRejection == nil || h.LastRejection.Stage != "parse" || h.ConfigVersion != 2 {
		t.Fatalf("start on an unreadable file: %+v", h)
	}
	if e.cfg.Runtime().Current().Document().Providers.Defaults.DefaultModel != "big" {
		t.Fatal("the last activated version is not serving")
	}
	// Without history there is nothing to fall back on: a clear error.
	bad := writeConfig(t, "version: v1\nrecipes: [unclosed\n")
	if _, err := mgmt.OpenConfig(context.Background(), mgmt.ConfigOptions{Path: bad, Compile: compiler(t)}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("no history: %v", err)
	}
}

// Starting on a file writes nothing beside it; the first change creates the
// history with the original version in it.
func TestHistoryCreatedOnFirstChange(t *testing.T) {
	path := copyBase(t)
	e := newEnv(t, path)
	if _, err := os.Stat(path + ".history"); !os.IsNotExist(err) {
		t.Fatalf("starting wrote a history folder: %v", err)
	}
	must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}, "If-Match", e.etag()), 200)
	entries, err := os.ReadDir(path + ".history")
	if err != nil || len(entries) != 3 { // index and two documents
		t.Fatalf("history folder: %v %v", entries, err)
	}
	must(t, e.call("POST", "/api/v1/config/rollback", map[string]any{"config_version": 1}, "If-Match", e.etag()), 200)
}

// TestProductionTrafficSettingsApplyLive: the router's reliability and
// fallback defaults and the rate limits change without a restart (200, the
// runtime serves them at once), and a bad value is a 400 at its JSON
// pointer with nothing persisted.
func TestProductionTrafficSettingsApplyLive(t *testing.T) {
	e := newEnv(t, copyBase(t))
	etag := must(t, e.call("GET", "/api/v1/config", nil), 200).header.Get("ETag")
	bad := map[string]any{"global": map[string]any{"router": map[string]any{"reliability": map[string]any{"retry_count": 6}}}}
	r := must(t, e.call("PATCH", "/api/v1/config", bad, "If-Match", etag), 400)
	if !strings.Contains(string(r.body), "/global/router/reliability/retry_count") {
		t.Fatalf("retry_count 6: %s", r.body)
	}
	bad = map[string]any{"global": map[string]any{"rate_limits": []any{map[string]any{"name": "x", "key": "cookie", "requests": 5}}}}
	r = must(t, e.call("PATCH", "/api/v1/config", bad, "If-Match", etag), 400)
	if !strings.Contains(string(r.body), "/global/rate_limits/0/key") {
		t.Fatalf("an unknown rate-limit key: %s", r.body)
	}
	if e.etag() != etag {
		t.Fatal("a refused change was persisted")
	}
	good := map[string]any{"global": map[string]any{
		"router":      map[string]any{"reliability": map[string]any{"retry_count": 2, "per_try_timeout": "3s"}, "fallback": map[string]any{"enabled": true, "max_attempts": 2}},
		"rate_limits": []any{map[string]any{"name": "per-user", "key": "user", "requests": 20, "window": "1m"}},
	}}
	must(t, e.call("PATCH", "/api/v1/config", good, "If-Match", etag), 200)
	doc := e.cfg.Runtime().Current().Document()
	rel := doc.Global.Router.Reliability
	if rel == nil || rel.RetryCount == nil || *rel.RetryCount != 2 || doc.Global.Router.Fallback == nil || len(doc.Global.RateLimits) != 1 || doc.Global.RateLimits[0].Requests != 20 {
		t.Fatalf("the runtime does not serve the change: router %+v, rate limits %+v", doc.Global.Router, doc.Global.RateLimits)
	}
}
