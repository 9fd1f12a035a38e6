package junction

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

// keyedDoc has a model whose backend takes its key from env.
func keyedDoc(t *testing.T, env string) *recipes.Document {
	t.Helper()
	doc, err := recipes.Parse([]byte(`{version: v1, providers: {defaults: {default_model: m}, models: [
  {name: m, backend_refs: [{provider: demo}]},
  {name: keyed, backend_refs: [{base_url: "http://127.0.0.1:9/v1", provider: openai, api_key_env: ` + env + `}]}]},
  recipes: [{name: default}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// serve refuses to start on a document whose backend key is missing from
// the environment, naming the variable and where the document names it.
func TestServeRefusesAnUnsetBackendKey(t *testing.T) {
	t.Setenv("JUNCTION_ROOT_TEST_KEY", "")
	s, err := New(Options{Document: keyedDoc(t, "JUNCTION_ROOT_TEST_KEY"), DataDir: t.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"},
		DisableExtproc: true, ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = s.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "JUNCTION_ROOT_TEST_KEY") ||
		!strings.Contains(err.Error(), "/providers/models/1/backend_refs/0/api_key_env") {
		t.Fatalf("Run = %v, want a refusal naming JUNCTION_ROOT_TEST_KEY and its path", err)
	}
}

// A running server refuses to validate or activate such a document through
// the management API too.
func TestManagementRefusesAnUnsetBackendKey(t *testing.T) {
	doc, err := recipes.Parse([]byte(`{version: v1, providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}, recipes: [{name: default}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Document: doc, DataDir: t.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"},
		DisableExtproc: true, ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	<-s.Ready()
	if s.ManagementAddr() == "" {
		t.Fatalf("not serving: %v", <-errc)
	}
	defer func() {
		_ = s.Shutdown(context.Background())
		<-errc
	}()
	t.Setenv("JUNCTION_ROOT_TEST_KEY2", "")
	canon, err := recipes.Canonical(keyedDoc(t, "JUNCTION_ROOT_TEST_KEY2"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+s.ManagementAddr()+"/api/v1/config/validate", "application/json", strings.NewReader(string(canon)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v struct{ Valid bool }
	if err := json.Unmarshal(b, &v); err != nil || v.Valid || !strings.Contains(string(b), "JUNCTION_ROOT_TEST_KEY2") {
		t.Fatalf("validate: %d %s, want invalid naming JUNCTION_ROOT_TEST_KEY2", resp.StatusCode, b)
	}
}
