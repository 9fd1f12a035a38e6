package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
	"github.com/junction-router/junction/internal/mgmt"
)

// attachedWorker runs `junction worker` on TCP serving models from the
// committed defaults, until the test ends; it returns its port.
func attachedWorker(t *testing.T, models ...string) int {
	t.Helper()
	orttest.Library(t)
	dir, err := defaultmodels.CacheDir("")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errOut syncWriter
	go func() {
		done <- run(ctx, append([]string{"worker", "--port", strconv.Itoa(port), "--threads", "1", "--cache-dir", dir}, models...), io.Discard, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("worker exited %d: %s", code, errOut.String())
		}
	})
	return port
}

// previewJailbreak is the jailbreak signal's result in the routing preview.
type previewJailbreak struct {
	Method, Error      string
	Matched, Unscanned bool
}

func (r *servedRouter) previewJailbreak(text string) previewJailbreak {
	r.t.Helper()
	return r.previewSignal("jailbreak", text)
}

// previewSignal is the first result of kind in the routing preview.
func (r *servedRouter) previewSignal(kind, text string) previewJailbreak {
	r.t.Helper()
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}})
	resp, err := http.Post(r.mgmt+"/api/v1/routing/preview", "application/json", strings.NewReader(string(body)))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Signals []struct {
			Type string
			previewJailbreak
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		r.t.Fatal(err)
	}
	for _, s := range out.Signals {
		if s.Type == kind {
			return s.previewJailbreak
		}
	}
	r.t.Fatalf("no %s signal in the preview: %+v", kind, out)
	return previewJailbreak{}
}

// A deployment's on_unscanned decides how the jailbreak signal bound to it
// matches content the worker left unscanned (here: a text over the
// deployment's token budget under overflow reject, which the real worker
// answers with max_length_exceeded); without it the signal's own policy
// (default block) decides. An answer whose labels the jailbreak signal
// cannot read counts in unknown_answers_total.
func TestServeDeploymentOnUnscanned(t *testing.T) {
	wport := attachedWorker(t, defaultmodels.JailbreakName, defaultmodels.DomainName)
	long := strings.Repeat("Tell me about the history of the city and its bridges. ", 20)
	for _, tt := range []struct {
		name, policy, head, want string
		matched                  bool
	}{
		{"signal default (block)", "", "", "safe", true},
		{"deployment allow", "on_unscanned: allow, ", "", "small", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, gw, mg, met := deploymentConfig(t, fmt.Sprintf(`    deployments:
      - {name: shared, endpoint: "127.0.0.1:%d", %sinput: {max_tokens: 8, overflow: reject}}
    bindings:
      jailbreak: {deployment: shared, head: jailbreak-glove}`, wport, tt.policy))
			r := serveDeployments(t, cfg, gw, mg, met)
			if got := r.route("hello"); got != "small" {
				t.Errorf("a short benign text routed to %q, want small", got)
			}
			if got := r.route(long); got != tt.want {
				t.Errorf("a long benign text left unscanned routed to %q, want %s", got, tt.want)
			}
			p := r.previewJailbreak(long)
			if !p.Unscanned || p.Matched != tt.matched || p.Error != "model_error" || p.Method != "worker:shared/jailbreak-glove" {
				t.Errorf("preview of the long text: %+v; want unscanned, matched %v, model_error", p, tt.matched)
			}
			if n := r.metric(`router_model_runtime_requests_total{deployment="shared",outcome="failed"}`); n != 2 {
				t.Errorf("failed calls = %v, want 2", n)
			}
		})
	}
	t.Run("unknown labels", func(t *testing.T) {
		cfg, gw, mg, met := deploymentConfig(t, fmt.Sprintf(`    deployments:
      - {name: shared, endpoint: "127.0.0.1:%d"}
    bindings:
      jailbreak: {deployment: shared, head: domain-glove}`, wport))
		r := serveDeployments(t, cfg, gw, mg, met)
		if got := r.route("hello"); got != "safe" {
			t.Errorf("text whose scan could not be read routed to %q, want safe (unscanned blocks)", got)
		}
		if n := r.metric(`router_model_runtime_unknown_answers_total{deployment="shared",reason="unknown_label"}`); n != 1 {
			t.Errorf("unknown_answers_total unknown_label = %v, want 1", n)
		}
		// Nothing is in flight once the answers are read; the series exist.
		for _, series := range []string{`router_model_runtime_replica_inflight{deployment="shared",replica="0"}`,
			`router_model_runtime_replica_admitted_bytes{deployment="shared",replica="0"}`} {
			if !r.hasSeries(series) || r.metric(series) != 0 {
				t.Errorf("%s: present %v, value %v; want 0", series, r.hasSeries(series), r.metric(series))
			}
		}
	})
}

func (r *servedRouter) hasSeries(series string) bool {
	r.t.Helper()
	resp, err := http.Get(r.met)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), "\n"+series+" ")
}

// global.router.enabled: false starts no worker (the deployments stay
// declared, the signals run in-process), and refuses bindings with a
// configuration error naming the binding.
func TestServeRouterDisabled(t *testing.T) {
	t.Setenv(envRunMain, "1")
	cfg, gw, mg, met := deploymentConfig(t, `    deployments:
      - {name: guard, artifact: jailbreak-glove, device: cpu}`)
	raw := readFile(t, cfg) + "  router: {enabled: false}\n"
	cfg = writeFile(t, raw)
	r := serveDeployments(t, cfg, gw, mg, met)
	if st := r.status(); len(st.ModelDeployments) != 0 {
		t.Errorf("startup-status lists deployments: %+v", st.ModelDeployments)
	}
	if strings.Contains(r.stderr.String(), "model worker started") {
		t.Errorf("a worker was started: %s", r.stderr.String())
	}
	if p := r.previewJailbreak(attack); strings.HasPrefix(p.Method, "worker:") || !p.Matched {
		t.Errorf("in-process jailbreak signal: %+v", p)
	}

	cfg, _, _, _ = deploymentConfig(t, `    deployments:
      - {name: guard, artifact: jailbreak-glove, device: cpu}
    bindings:
      jailbreak: {deployment: guard}`)
	cfg = writeFile(t, readFile(t, cfg)+"  router: {enabled: false}\n")
	code, _, errOut := runCLI(t, "serve", "--data-dir", t.TempDir(), "--config", cfg, "--extproc=false", "--signal-models", "lexical")
	if code != 1 || !strings.Contains(errOut, "/global/model_catalog/bindings/jailbreak") || !strings.Contains(errOut, "global.router.enabled is false") ||
		strings.Contains(errOut, "model worker started") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// With bearer authentication on the management API, the interim listener
// that answers while serve waits for its embeddings deployment checks
// tokens as the management API does: 401 without one, 403 without
// ready.read, the loading status with one; /health stays public.
func TestServeInterimStatusBearer(t *testing.T) {
	orttest.Library(t)
	t.Setenv(envRunMain, "1")
	t.Setenv(supervise.EnvThreads, "1")
	t.Setenv("JUNCTION_TEST_OPS", "ops-token-1")
	t.Setenv("JUNCTION_TEST_AUDITOR", "auditor-token-2")
	gw, mg, met := freePort(t), freePort(t), freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
    - {name: billing, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      embeddings: [{name: refund, candidates: ["I was charged twice"], threshold: 0.75}]
    decisions:
      - name: billing
        rules: {operator: OR, conditions: [{type: embedding, name: refund}]}
        modelRefs: [{model: billing}]
global:
  services:
    management_api:
      address: 127.0.0.1
      port: %d
      auth:
        mode: bearer
        roles:
          - {name: ops, permissions: [ready.read]}
          - {name: auditor, permissions: [audit.read]}
        tokens:
          - {name: ops, roles: [ops], env: JUNCTION_TEST_OPS}
          - {name: auditor, roles: [auditor], env: JUNCTION_TEST_AUDITOR}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
  model_catalog:
    deployments: [{name: emb, artifact: embed-glove}]
    bindings: {embeddings: {deployment: emb}}
`, gw, mg, met))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errOut syncWriter
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--extproc=false", "--signal-models", "lexical"}, io.Discard, &errOut)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, errOut.String())
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", mg)
	get := func(path, token string, v any) (int, http.Header) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		if v != nil {
			_ = json.NewDecoder(resp.Body).Decode(v)
		}
		return resp.StatusCode, resp.Header
	}
	var sawLoading bool
	for deadline := time.Now().Add(60 * time.Second); ; {
		// A listener may open (or hand over) between these requests: a
		// round is judged only when every request of it was answered.
		anon, hdr := get("/ready", "", nil)
		var denied mgmt.ErrorBody
		forbidden, _ := get("/startup-status", "auditor-token-2", &denied)
		health, _ := get("/health", "", nil)
		var st mgmt.StartupStatus
		code, _ := get("/startup-status", "ops-token-1", &st)
		if code == http.StatusServiceUnavailable && st.Phase == "loading_model_deployments" {
			sawLoading = true
		}
		answered := anon != 0 && forbidden != 0 && health != 0
		if answered && code == http.StatusServiceUnavailable && (st.Phase == "loading_model_deployments" || st.Phase == "starting") {
			if anon != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
				t.Fatalf("interim /ready without a token: %d %v", anon, hdr)
			}
			if forbidden != http.StatusForbidden || denied.Error.Required != mgmt.PermReadyRead {
				t.Fatalf("interim /startup-status without ready.read: %d %+v", forbidden, denied)
			}
			if health != http.StatusOK {
				t.Fatalf("interim /health: %d", health)
			}
			if pending := st.Phase == "loading_model_deployments"; len(st.ModelDeployments) != 1 || (len(st.PendingModels) == 1) != pending ||
				(pending && st.PendingModels[0] != "emb") || st.ModelDeployments[0].Ready == pending {
				t.Fatalf("interim status: %+v", st)
			}
		}
		if code == http.StatusOK && st.Phase == "complete" {
			break
		}
		select {
		case c := <-done:
			t.Fatalf("serve exited %d: %s", c, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %+v\n%s", st, errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !sawLoading {
		t.Error("the loading phase was never reported to a caller with a token")
	}
	if code, _ := get("/ready", "", nil); code != http.StatusUnauthorized {
		t.Errorf("/ready without a token after start-up: %d", code)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The managed workers get what the environment says: sockets in
// $JUNCTION_WORKER_DIR/<deployment>-<replica> (0700), half the CPU budget
// as threads, a result cache of $JUNCTION_WORKER_RESULT_CACHE entries except
// in pools of several workers (which bypass it); an autotune cache is
// refused before any worker starts.
func TestServeManagedWorkerEnvironment(t *testing.T) {
	orttest.Library(t)
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc to read the workers' command lines")
	}
	t.Setenv(envRunMain, "1")
	dir := filepath.Join(t.TempDir(), "workers")
	t.Setenv(supervise.EnvDir, dir)
	t.Setenv(supervise.EnvResultCache, "128")
	t.Setenv(supervise.EnvHubToken, "hub-secret-token")
	cfg, gw, mg, met := deploymentConfig(t, `    deployments:
      - {name: guard, artifact: jailbreak-glove, device: cpu}
      - {name: topics, artifact: domain-glove, replicas: [{device: cpu}, {device: cpu}]}
    bindings:
      jailbreak: {deployment: guard}
      domain: {deployment: topics}`)
	r := serveDeployments(t, cfg, gw, mg, met)
	threads := strconv.Itoa(supervise.DefaultThreads(supervise.CPUBudget()))
	for _, w := range []struct {
		name, replica, cache string
	}{{"guard", "0", "128"}, {"topics", "0", "0"}, {"topics", "1", "0"}} {
		sock := filepath.Join(dir, w.name+"-"+w.replica, "worker.sock")
		if st, err := os.Stat(filepath.Dir(sock)); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v; want a 0700 directory", filepath.Dir(sock), err)
		}
		pid := socketOwner(t, r, sock)
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			t.Fatal(err)
		}
		args := " " + strings.ReplaceAll(string(raw), "\x00", " ")
		for _, want := range []string{" worker ", " --threads " + threads + " ", " --result-cache-entries " + w.cache + " ", " --uds " + sock} {
			if !strings.Contains(args, want) {
				t.Errorf("%s replica %s runs%s; want %q in it", w.name, w.replica, args, want)
			}
		}
		if strings.Contains(args, "hub-secret-token") {
			t.Errorf("the hub token is on a worker's command line")
		}
	}
	if strings.Contains(r.stderr.String(), "hub-secret-token") {
		t.Error("the hub token was logged")
	}

	t.Setenv(supervise.EnvAutotuneCache, t.TempDir())
	code, _, errOut := runCLI(t, "serve", "--data-dir", t.TempDir(), "--config", cfg, "--extproc=false", "--signal-models", "lexical")
	if code != 1 || !strings.Contains(errOut, supervise.EnvAutotuneCache) || strings.Contains(errOut, "model worker started") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// socketOwner is the pid of the managed worker listening on sock, as serve
// logged it.
func socketOwner(t *testing.T, r *servedRouter, sock string) int {
	t.Helper()
	m := regexp.MustCompile(`pid=(\d+) socket=` + regexp.QuoteMeta(sock)).FindStringSubmatch(r.stderr.String())
	if m == nil {
		t.Fatalf("no worker logged on %s: %s", sock, r.stderr.String())
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// The request stage rule through serve: domain and jailbreak signals bound
// with contract decisions to one deployment and head ask it in one
// decisions call per request (round first), each distinct text once.
func TestServeStageDecisions(t *testing.T) {
	wport := attachedWorker(t, defaultmodels.EmbedderName, defaultmodels.JailbreakName)
	gw, mg, met := freePort(t), freePort(t), freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
    - {name: safe, backend_refs: [{provider: demo}]}
    - {name: lawyer, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      jailbreak: [{name: attack, threshold: 0.5}]
      domains: [{name: law, mmlu_categories: [law]}]
    decisions:
      - name: guard
        priority: 10
        rules: {operator: OR, conditions: [{type: jailbreak, name: attack}]}
        modelRefs: [{model: safe}]
      - name: legal
        priority: 5
        rules: {operator: OR, conditions: [{type: domain, name: law}]}
        modelRefs: [{model: lawyer}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
  model_catalog:
    deployments: [{name: q, endpoint: "127.0.0.1:%d"}]
    bindings:
      domain: {deployment: q, contract: decisions, head: embed-glove}
      jailbreak: {deployment: q, contract: decisions, head: embed-glove}
`, gw, mg, met, wport))
	r := serveDeployments(t, cfg, gw, mg, met)
	for _, text := range []string{"What does the contract law say about breach?", "hello there", attack} {
		if got := r.route(text); got == "" {
			t.Errorf("%q: no model selected", text)
		}
	}
	if n := r.metric(`router_model_runtime_stage_decision_calls_total{deployment="q",round="first"}`); n != 3 {
		t.Errorf("first-round decisions calls = %v, want 3 (one per request)", n)
	}
	if n := r.metric(`router_model_runtime_requests_total{deployment="q",outcome="ok"}`); n != 3 {
		t.Errorf("calls to the deployment = %v, want 3: domain and jailbreak share one per request", n)
	}
	if r.hasSeries(`router_model_runtime_stage_decision_calls_total{deployment="q",round="later"}`) {
		t.Error("a later round was needed")
	}
	for _, kind := range []string{"jailbreak", "domain"} {
		if p := r.previewSignal(kind, "hello there"); p.Method != "worker:q/embed-glove" || p.Error != "" {
			t.Errorf("preview of %s: %+v", kind, p)
		}
	}
	// The preview's stage made one call for both signals too.
	if n := r.metric(`router_model_runtime_stage_decision_calls_total{deployment="q",round="first"}`); n != 5 {
		t.Errorf("first-round decisions calls after two previews = %v, want 5", n)
	}

	// A sequence classifier answers the question with its own
	// probabilities: jailbreak-glove through decisions routes as through
	// classify.
	cfg2, gw2, mg2, met2 := deploymentConfig(t, fmt.Sprintf(`    deployments:
      - {name: q, endpoint: "127.0.0.1:%d"}
    bindings:
      jailbreak: {deployment: q, contract: decisions, head: jailbreak-glove}`, wport))
	r2 := serveDeployments(t, cfg2, gw2, mg2, met2)
	if got := r2.route(attack); got != "safe" {
		t.Errorf("attack routed to %q, want safe", got)
	}
	if got := r2.route("What is the capital of France?"); got != "small" {
		t.Errorf("benign text routed to %q, want small", got)
	}
}
