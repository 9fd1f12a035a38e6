package deploy

import (
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// Changed deployments pass the guard (a Fleet starts them); switching the
// model runtime on or off does not.
func TestCatalogGuard(t *testing.T) {
	started := &recipes.ModelCatalog{SignalTimeoutMS: 100, Deployments: []recipes.ModelDeployment{{Name: "a", Artifact: "jailbreak-glove"}},
		Bindings: &recipes.ModelBindings{Jailbreak: &recipes.ModelBinding{Deployment: "a"}}}
	guard := CatalogGuard(&recipes.Document{Global: recipes.Global{ModelCatalog: started}})
	changed := *started
	changed.Deployments = []recipes.ModelDeployment{{Name: "a", Artifact: "domain-glove"}}
	if err := guard(&recipes.Document{Global: recipes.Global{ModelCatalog: &changed}}); err != nil {
		t.Errorf("changed deployments refused: %v", err)
	}
	off := false
	if err := guard(&recipes.Document{Global: recipes.Global{ModelCatalog: started, Router: &recipes.Router{Enabled: &off}}}); err == nil || !strings.Contains(err.Error(), "restart junction serve") {
		t.Errorf("router.enabled switched off: %v", err)
	}
	if err := CatalogGuard(nil)(&recipes.Document{}); err != nil {
		t.Errorf("no deployments before or after: %v", err)
	}
}

// CheckCatalog refuses what starting the deployments would, without
// starting them.
func TestCheckCatalog(t *testing.T) {
	ok := &recipes.Document{Global: recipes.Global{ModelCatalog: &recipes.ModelCatalog{Deployments: []recipes.ModelDeployment{{Name: "a", Artifact: "jailbreak-glove"}},
		Bindings: &recipes.ModelBindings{Jailbreak: &recipes.ModelBinding{Deployment: "a"}}}}}
	if err := CheckCatalog(ok); err != nil {
		t.Errorf("a built-in artifact: %v", err)
	}
	bad := &recipes.Document{Global: recipes.Global{ModelCatalog: &recipes.ModelCatalog{Deployments: []recipes.ModelDeployment{{Name: "a", Artifact: "no-such-model"}},
		Bindings: &recipes.ModelBindings{Domain: &recipes.ModelBinding{Deployment: "b"}}}}}
	if err := CheckCatalog(bad); err == nil || !strings.Contains(err.Error(), "no-such-model") || !strings.Contains(err.Error(), `deployment "b"`) {
		t.Errorf("bad catalog: %v", err)
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

// A check (validate, plan) of a changed catalog starts nothing: it is
// checked and compiled over the in-process models; a catalog the fleet
// started with is served by the first Set.
func TestFleetCheckStartsNothing(t *testing.T) {
	started := &recipes.Document{}
	f := NewFleet(nil, started, Options{}, nil)
	changed := &recipes.Document{Global: recipes.Global{ModelCatalog: &recipes.ModelCatalog{Deployments: []recipes.ModelDeployment{{Name: "a", Artifact: "jailbreak-glove"}},
		Bindings: &recipes.ModelBindings{Jailbreak: &recipes.ModelBinding{Deployment: "a"}}}}}
	set, release, err := f.Acquire(mgmt.WithCheckOnly(t.Context()), changed)
	if err != nil || set != nil {
		t.Fatalf("check of a changed catalog: %v %v", set, err)
	}
	release()
	if len(f.sets) != 0 {
		t.Errorf("a check started deployments: %v", f.sets)
	}
	bad := &recipes.Document{Global: recipes.Global{ModelCatalog: &recipes.ModelCatalog{Deployments: []recipes.ModelDeployment{{Name: "a", Artifact: "no-such-model"}}}}}
	if _, _, err := f.Acquire(mgmt.WithCheckOnly(t.Context()), bad); err == nil {
		t.Error("a check of an unknown artifact passed")
	}
	if set, _, err := f.Acquire(t.Context(), &recipes.Document{}); err != nil || set != nil {
		t.Errorf("the started catalog: %v %v", set, err)
	}
}
