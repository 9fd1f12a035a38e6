package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
	"github.com/junction-router/junction/recipes"
)

// withCatalog is the built-in configuration with a model catalog and a
// native API (keys granting only guard).
func withCatalog(t *testing.T) *recipes.Document {
	t.Helper()
	doc, _, err := recipes.ParseSource(recipes.BuiltinYAML())
	if err != nil {
		t.Fatal(err)
	}
	doc.Global.ModelCatalog = &recipes.ModelCatalog{Deployments: []recipes.ModelDeployment{
		{Name: "guard", Artifact: "jailbreak-glove"},
		{Name: "default", Artifact: "domain-glove", Device: "cpu"},
	}}
	doc.Global.Services.NativeAPI = &recipes.NativeAPI{APIKeys: []recipes.NativeAPIKey{{Name: "k", Env: "K", Models: []string{"guard"}}}}
	return doc
}

func applyArgs(t *testing.T, doc *recipes.Document, args ...string) (*recipes.Document, error) {
	t.Helper()
	fs := newFlags("serve", io.Discard)
	sm := addServeModelFlags(fs)
	model, err := parseServeArgs(fs, args)
	if err != nil {
		return nil, err
	}
	return sm.options(model).Apply(doc)
}

func deploymentNamed(doc *recipes.Document, name string) recipes.ModelDeployment {
	for _, d := range doc.Global.ModelCatalog.Deployments {
		if d.Name == name {
			return d
		}
	}
	return recipes.ModelDeployment{}
}

func TestServeModelOptions(t *testing.T) {
	base := withCatalog(t)
	if got, err := applyArgs(t, base); err != nil || got != base {
		t.Errorf("no model options: %v (the document should be returned as it is)", err)
	}
	// A model on the built-in configuration adds the default deployment.
	got, err := applyArgs(t, nil, "jailbreak-glove")
	if err != nil {
		t.Fatal(err)
	}
	if d := deploymentNamed(got, "default"); d.Artifact != "jailbreak-glove" || len(d.Replicas) != 0 {
		t.Errorf("built-in + model: %+v", d)
	}
	for _, c := range []struct {
		args  []string
		check func(d recipes.ModelDeployment) bool
	}{
		// Flags before or after the model; only what is given changes.
		{[]string{"--revision", "/opt/pinned", "embed-glove"}, func(d recipes.ModelDeployment) bool {
			return d.Artifact == "embed-glove" && d.Revision == "/opt/pinned" && d.Device == "cpu"
		}},
		{[]string{"jailbreak-glove", "-dp", "2", "--platform", "cpu"}, func(d recipes.ModelDeployment) bool {
			return d.Artifact == "jailbreak-glove" && len(d.Replicas) == 2 && d.Replicas[1].Device == "cpu" && d.Device == ""
		}},
		{[]string{"--device-ids", "0,3"}, func(d recipes.ModelDeployment) bool {
			return d.Artifact == "domain-glove" && len(d.Replicas) == 2 && d.Replicas[0].Device == "cuda:0" && d.Replicas[1].Device == "cuda:3"
		}},
		{[]string{"--platform", "cuda"}, func(d recipes.ModelDeployment) bool { return d.Device == "cuda" }},
		{[]string{"--runtime-profile", "exact"}, func(d recipes.ModelDeployment) bool { return d.Profile == "exact" && d.Device == "cpu" }},
	} {
		got, err := applyArgs(t, withCatalog(t), c.args...)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if d := deploymentNamed(got, "default"); !c.check(d) {
			t.Errorf("%v: %+v", c.args, d)
		}
		if deploymentNamed(got, "guard").Artifact != "jailbreak-glove" {
			t.Errorf("%v changed another deployment", c.args)
		}
	}
	// --engine native publishes the default deployment, and the key that
	// granted guard only still grants guard only.
	got, err = applyArgs(t, withCatalog(t), "-e", "native")
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Global.Services.NativeAPI; !n.Enabled || len(n.APIKeys[0].Models) != 1 || n.APIKeys[0].Models[0] != "guard" {
		t.Errorf("-e native: %+v", n)
	}
	if base.Global.Services.NativeAPI.Enabled {
		t.Error("apply changed the document it was given")
	}
	for _, c := range []struct {
		args []string
		doc  *recipes.Document
		want string
	}{
		{[]string{"jailbreak-glove", "--image", "junction:1"}, nil, "not in containers"},
		{[]string{"--container-runtime", "lxc"}, nil, "docker or podman"},
		{[]string{"--image-pull-policy", "sometimes"}, nil, "always, ifnotpresent or never"},
		{[]string{"--platform", "rocm"}, nil, "no ROCm"},
		{[]string{"--platform", "tpu"}, nil, "auto, cpu or cuda"},
		{[]string{"-e", "vllm"}, nil, "use native"},
		{[]string{"-dp", "0", "x"}, nil, "at least 1"},
		{[]string{"--device-ids", "a,b", "x"}, nil, "non-negative integers"},
		{[]string{"--device-ids", "0", "-dp", "2", "jailbreak-glove"}, nil, "1 GPUs for 2 replicas"},
		{[]string{"--device-ids", "0", "--platform", "cpu", "jailbreak-glove"}, nil, "name GPUs"},
		{[]string{"-dp", "2"}, nil, `deployment named "default"`},
		{[]string{"a", "b"}, nil, "one model"},
		{[]string{"jailbreak-glove", "--revision", "main"}, nil, "40-character commit"},
		{[]string{"-dp", "2"}, func() *recipes.Document {
			d := withCatalog(t)
			d.Global.ModelCatalog.Deployments[1] = recipes.ModelDeployment{Name: "default", Endpoint: "127.0.0.1:8100"}
			return d
		}(), "attaches to the worker"},
	} {
		if _, err := applyArgs(t, c.doc, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
	if code, _, stderr := runCLI(t, "serve", "config.yaml"); code != 2 || !strings.Contains(stderr, "did you mean --config config.yaml") {
		t.Errorf("serve config.yaml: %d %s", code, stderr)
	}
}

// `junction serve MODEL -e native -dp 2 --platform cpu` serves the model
// from two managed workers and publishes it on the native API.
func TestServeModelNative(t *testing.T) {
	orttest.Library(t)
	t.Setenv(envRunMain, "1")
	t.Setenv(supervise.EnvThreads, "1")
	nport := freePort(t)
	cfg, gw, mg, met := deploymentConfig(t, `    signal_timeout_ms: 2000`)
	raw := strings.Replace(mustRead(t, cfg), "  services:\n", fmt.Sprintf("  services:\n    native_api: {port: %d}\n", nport), 1)
	if err := os.WriteFile(cfg, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	r := serveDeployments(t, cfg, gw, mg, met, "jailbreak-glove", "-e", "native", "-dp", "2", "--platform", "cpu")
	st := r.status()
	if len(st.ModelDeployments) != 1 || st.ModelDeployments[0].Name != "default" || strings.Count(st.ModelDeployments[0].Process, "managed") != 2 {
		t.Fatalf("startup-status: %+v", st.ModelDeployments)
	}
	// Serve opens once one replica of each deployment is ready; wait for both.
	for deadline := time.Now().Add(30 * time.Second); r.metric(`router_model_runtime_replica_ready{deployment="default",replica="0"}`) != 1 ||
		r.metric(`router_model_runtime_replica_ready{deployment="default",replica="1"}`) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("both replicas never became ready")
		}
	}
	body := fmt.Sprintf(`{"model":"default","state":%q,"questions":{"q":{"type":"choice","instructions":"attack?","choices":[{"key":"benign","description":"no"},{"key":"jailbreak","description":"yes"}]}}}`, attack)
	for range 2 { // both replicas
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/systemone", nport), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"choice":"jailbreak"`) || !strings.Contains(string(b), `"model":"default"`) {
			t.Errorf("native API: %d %s", resp.StatusCode, b)
		}
	}
	for _, rep := range []string{"0", "1"} {
		if n := r.metric(fmt.Sprintf(`router_model_runtime_replica_requests_total{deployment="default",outcome="ok",replica=%q}`, rep)); n != 1 {
			t.Errorf("replica %s answered %v requests, want 1", rep, n)
		}
	}
}

// Without --config, serve reads ./config.yaml when there is one (the spec's
// default), and the built-in configuration otherwise; without --data-dir it
// keeps stored data in ./junction-data.
func TestServeDefaultConfigFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	gw, mg, met := freePort(t), freePort(t), freePort(t)
	doc := fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models: [{name: small, backend_refs: [{provider: demo}]}]
recipes: [{name: default, decisions: [{name: all, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}]}]}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
`, gw, mg, met)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errOut syncWriter
	go func() {
		done <- run(ctx, []string{"serve", "--extproc=false", "--signal-models", "lexical"}, io.Discard, &errOut)
	}()
	waitFor(t, fmt.Sprintf("http://127.0.0.1:%d/ready", mg))
	if !strings.Contains(errOut.String(), "config=config.yaml") {
		t.Errorf("serve did not say it read ./config.yaml: %s", errOut.String())
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/models", gw))
	if err != nil {
		t.Fatalf("the gateway of ./config.yaml does not listen: %v", err)
	}
	resp.Body.Close()
	// Without --data-dir or global.storage.dir, stored data goes to
	// ./junction-data, created 0700 on first use.
	if st, err := os.Stat(filepath.Join(dir, "junction-data")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("./junction-data: %v %v", st, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d: %s", code, errOut.String())
	}
}

// Built-in model names work wherever a model is named: serve's MODEL argument and a deployment's artifact
// start workers that serve them, even when the workers' models directory ($JUNCTION_WORKER_CACHE_DIR) does
// not hold them, and the management API accepts a document that names them.
func TestServeBuiltinModelsByName(t *testing.T) {
	orttest.Library(t)
	t.Setenv(envRunMain, "1")
	t.Setenv(supervise.EnvThreads, "1")
	t.Setenv(supervise.EnvCacheDir, t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg, gw, mg, met := deploymentConfig(t, `    deployments:
      - {name: guard, artifact: jailbreak-glove, device: cpu}
    bindings:
      jailbreak: {deployment: guard}`)
	r := serveDeployments(t, cfg, gw, mg, met, "domain-glove")
	if st := r.status(); len(st.ModelDeployments) != 2 || !r.deploymentReady("guard") || !r.deploymentReady("default") {
		t.Fatalf("startup-status: %+v", st.ModelDeployments)
	}
	if got := r.route(attack); got != "safe" {
		t.Errorf("attack routed to %q, want safe", got)
	}
	if meth, matched := r.jailbreakMethod(attack); meth != "worker:guard" || !matched {
		t.Errorf("preview: method %q matched %v; want worker:guard, true", meth, matched)
	}
	resp, err := http.Post(r.mgmt+"/api/v1/config/validate", "application/yaml", strings.NewReader(mustRead(t, cfg)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"valid":true`) {
		t.Errorf("validate a document naming jailbreak-glove: %d %s", resp.StatusCode, b)
	}
}
