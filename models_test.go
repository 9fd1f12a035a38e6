package junction

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// modelFreeConfig routes on keywords and pii only, with two plugins that
// run in process: it needs no model, no ONNX Runtime and no lingua.
// EXTRA is where a test adds signals and decisions that need them.
const modelFreeConfig = `version: v1
listeners:
  - {name: public, address: 127.0.0.1, port: 8801, entrypoint: default}
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
    - {name: big, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      keywords: [{name: refund, keywords: [refund]}]
      pii: [{name: contact, types: [EMAIL]}]
      language: [{name: german, languages: [de]}]
      domains: [{name: math, mmlu_categories: [math]}]
    decisions:
      - name: refund
        priority: 100
        rules: {operator: OR, conditions: [{type: keyword, name: refund}, {type: pii, name: contact}]}
        modelRefs: [{model: big}]
        plugins:
          - {type: system_prompt, configuration: {system_prompt: "You handle refunds."}}
          - {type: header_mutation, configuration: {add: [{name: x-route, value: refund}]}}
EXTRA      - name: general
        priority: 1
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
`

// A recipe whose decisions read no model-backed signal loads no model, ONNX
// Runtime or lingua (it declares a language and a domain signal that no
// decision reads); a live change that reads one loads it before its
// activation answers, a later generation reading it too shares the load,
// and switching back releases it.
func TestModelsLoadWhenARecipeNeedsThem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	src := strings.Replace(modelFreeConfig, "EXTRA", "", 1)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := New(Options{ConfigPath: path, DataDir: t.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"}, DisableExtproc: true,
		ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Registry: reg, modelGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	select {
	case <-s.Ready():
	case err := <-errc:
		t.Fatalf("the server did not start: %v", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}()
	mgmt, gw := "http://"+s.ManagementAddr(), "http://"+s.GatewayAddr()
	value := func(name, model string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == name && m.GetLabel()[0].GetValue() == model {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	loaded := func(model string) bool { return value("router_local_model_loaded", model) == 1 }
	all := []string{deploy.ModelLingua, deploy.ModelONNXRuntime, defaultmodels.DomainName, defaultmodels.JailbreakName, defaultmodels.EmbedderName}
	for _, m := range all {
		if value("router_local_model_loads_total", m) != 0 {
			t.Fatalf("the model-free recipe loaded %s", m)
		}
	}
	decision := func(text string) string {
		t.Helper()
		resp, err := http.Post(gw+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":"`+text+`"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", text, resp.StatusCode, b)
		}
		return resp.Header.Get("X-Junction-Decision")
	}
	put := func(extra string) {
		t.Helper()
		req, _ := http.NewRequest("GET", mgmt+"/api/v1/config", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		req, _ = http.NewRequest("PUT", mgmt+"/api/v1/config", strings.NewReader(strings.Replace(modelFreeConfig, "EXTRA", extra, 1)))
		req.Header.Set("Content-Type", "application/yaml")
		req.Header.Set("If-Match", resp.Header.Get("ETag"))
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT /api/v1/config: %d %s", resp.StatusCode, b)
		}
	}
	released := func(model string) {
		t.Helper()
		for range 500 {
			if !loaded(model) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s is still loaded after no configuration uses it", model)
	}
	const german = `      - name: german
        priority: 50
        rules: {operator: AND, conditions: [{type: language, name: german}]}
        modelRefs: [{model: small}]
`
	if got := decision("Wie spät ist es heute in Berlin, bitte?"); got != "general" {
		t.Fatalf("German text before the change: decision %q", got)
	}
	put(german)
	// The activation answered once the detector was loaded: the next
	// request is routed with it.
	if !loaded(deploy.ModelLingua) || value("router_local_model_loads_total", deploy.ModelLingua) != 1 {
		t.Fatal("the change that reads a language signal did not load lingua before it answered")
	}
	if got := decision("Wie spät ist es heute in Berlin, bitte?"); got != "german" {
		t.Fatalf("German text after the change: decision %q", got)
	}
	put(strings.Replace(german, "priority: 50", "priority: 60", 1))
	if value("router_local_model_loads_total", deploy.ModelLingua) != 1 {
		t.Fatal("a second generation reading the same language loaded lingua again")
	}
	put("")
	released(deploy.ModelLingua)
	if loaded(deploy.ModelONNXRuntime) {
		t.Fatal("ONNX Runtime was loaded for a language signal")
	}

	orttest.Library(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	put(`      - name: math
        priority: 50
        rules: {operator: AND, conditions: [{type: domain, name: math}]}
        modelRefs: [{model: small}]
`)
	if !loaded(defaultmodels.DomainName) || !loaded(deploy.ModelONNXRuntime) || loaded(defaultmodels.EmbedderName) || loaded(defaultmodels.JailbreakName) {
		t.Fatal("a change that reads a domain signal did not load the domain model (and only it) before it answered")
	}
	if got := decision("Compute the integral of x squared from 0 to 3 and simplify the polynomial."); got != "math" {
		t.Fatalf("a math question after the change: decision %q", got)
	}
	put("")
	released(defaultmodels.DomainName)
	released(deploy.ModelONNXRuntime)
}
