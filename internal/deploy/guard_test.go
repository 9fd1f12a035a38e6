package deploy

import (
	"strings"
	"testing"

	"github.com/junction-router/junction/recipes"
)

// A configuration change that touches the deployments is refused: workers
// start with serve.
func TestCatalogGuard(t *testing.T) {
	started := &recipes.ModelCatalog{SignalTimeoutMS: 100, Deployments: []recipes.ModelDeployment{{Name: "a", Artifact: "jailbreak-glove"}},
		Bindings: &recipes.ModelBindings{Jailbreak: &recipes.ModelBinding{Deployment: "a"}}}
	guard := CatalogGuard(&recipes.Document{Global: recipes.Global{ModelCatalog: started}})
	same := *started
	same.SignalTimeoutMS = 500 // other catalog settings may change
	if err := guard(&recipes.Document{Global: recipes.Global{ModelCatalog: &same}}); err != nil {
		t.Errorf("unchanged deployments refused: %v", err)
	}
	changed := same
	changed.Deployments = []recipes.ModelDeployment{{Name: "a", Artifact: "domain-glove"}}
	if err := guard(&recipes.Document{Global: recipes.Global{ModelCatalog: &changed}}); err == nil || !strings.Contains(err.Error(), "restart junction serve") {
		t.Errorf("changed deployments: %v", err)
	}
	if err := CatalogGuard(nil)(&recipes.Document{}); err != nil {
		t.Errorf("no deployments before or after: %v", err)
	}
}

// Keys come from their sources at start; a missing one stops the start
// with the key's path, and the configuration checks name every problem.
func TestNativeAPIConfig(t *testing.T) {
	doc := &recipes.Document{Global: recipes.Global{
		ModelCatalog: &recipes.ModelCatalog{Deployments: []recipes.ModelDeployment{{Name: "guard", Endpoint: "127.0.0.1:1"}}},
		Services: recipes.Services{NativeAPI: &recipes.NativeAPI{Enabled: true,
			APIKeys: []recipes.NativeAPIKey{{Name: "k", Env: "JUNCTION_TEST_UNSET_KEY", Models: []string{"guard"}}}}},
	}}
	if _, _, err := NativeAPI(doc, nil); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Errorf("no running deployment: %v", err)
	}
	if _, _, err := NativeAPI(&recipes.Document{}, nil); err != nil {
		t.Errorf("not configured: %v", err)
	}
	guard := NativeAPIGuard(nil)
	if err := guard(&recipes.Document{}); err != nil {
		t.Errorf("no native API before or after: %v", err)
	}
	if err := guard(doc); err == nil || !strings.Contains(err.Error(), "restart junction serve") {
		t.Errorf("a native API added: %v", err)
	}
}
