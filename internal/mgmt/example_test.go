package mgmt_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// Open a configuration file through the lifecycle, serve the management API
// and change the configuration with the ETag it answers.
func Example() {
	dir, _ := os.MkdirTemp("", "junction-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "junction.yaml")
	_ = os.WriteFile(path, []byte(`version: v1
providers:
  defaults: {default_model: small}
  models: [{name: small, backend_refs: [{provider: demo}]}, {name: big, backend_refs: [{provider: demo}]}]
recipes:
  - name: default
    decisions: [{name: all, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}]}]
`), 0o600)

	cfg, err := mgmt.OpenConfig(context.Background(), mgmt.ConfigOptions{
		Path: path,
		Compile: func(_ context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
			return engine.Compile(doc, hash, engine.Options{})
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	api, _ := mgmt.New(mgmt.Options{Config: cfg})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()

	resp, _ := http.Get(srv.URL + "/api/v1/config")
	resp.Body.Close()
	req, _ := http.NewRequest("PATCH", srv.URL+"/api/v1/config", strings.NewReader(`{"providers":{"defaults":{"default_model":"big"}}}`))
	req.Header.Set("If-Match", resp.Header.Get("ETag"))
	resp, _ = http.DefaultClient.Do(req)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"activation_status":"active"`))
	fmt.Println("serving default model:", cfg.Runtime().Current().Document().Providers.Defaults.DefaultModel)
	fmt.Println("config_version:", cfg.Hashes().ConfigVersion)
	// Output:
	// 200 true
	// serving default model: big
	// config_version: 2
}
