package builtin_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/modbuild"
	"github.com/junction-router/junction/plugins/builtin"
)

// TestModulesMatchSources rebuilds every built-in module from its guest
// package and fails when the embedded module differs: a change to a plugin's
// source must come with `make plugins`.
func TestModulesMatchSources(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds eight wasm modules")
	}
	if _, err := exec.LookPath(modbuild.GoCommand()); err != nil {
		t.Skipf("no go command to rebuild the modules with: %v", err)
	}
	man, err := builtin.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	version, err := modbuild.GoVersion()
	if err != nil {
		t.Fatal(err)
	}
	if version != man.GoVersion {
		t.Fatalf("the embedded modules were built with %s and this toolchain is %s; the bytes cannot be compared. Rebuild them with make plugins (and commit) using the toolchain go.mod names", man.GoVersion, version)
	}
	if len(man.Plugins) != len(builtin.Sources) {
		t.Fatalf("the manifest lists %d plugins, the sources %d: run make plugins", len(man.Plugins), len(builtin.Sources))
	}
	root, _ := filepath.Abs("../..")
	var wg sync.WaitGroup
	for i, src := range builtin.Sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wasm, err := modbuild.Build(root, src.Package)
			if err != nil {
				t.Error(err)
				return
			}
			sum := sha256.Sum256(wasm)
			got := hex.EncodeToString(sum[:])
			entry := man.Plugins[i]
			if entry.Type != src.Type || entry.Package != src.Package {
				t.Errorf("manifest entry %d is %s (%s), the sources say %s (%s): run make plugins", i, entry.Type, entry.Package, src.Type, src.Package)
				return
			}
			if got != entry.SHA256 {
				t.Errorf("%s: %s builds to sha256 %s, the embedded module is %s: run make plugins and commit plugins/builtin/modules", src.Type, src.Package, got[:16], entry.SHA256[:16])
				return
			}
			embedded, err := builtin.Module(src.Type)
			if err != nil {
				t.Error(err)
				return
			}
			if string(embedded) != string(wasm) {
				t.Errorf("%s: the embedded module differs from the build", src.Type)
			}
		}()
	}
	wg.Wait()
}

// TestBuildIsReproducible builds one module twice, in fresh temporary
// directories, and expects the same bytes.
func TestBuildIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm module twice")
	}
	root, _ := filepath.Abs("../..")
	a, err := modbuild.Build(root, "plugins/fastresponse/guest")
	if err != nil {
		t.Fatal(err)
	}
	b, err := modbuild.Build(root, "plugins/fastresponse/guest")
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatal("two builds of the same source differ")
	}
	if g1, g2 := modbuild.Gzip(a), modbuild.Gzip(b); string(g1) != string(g2) {
		t.Fatal("compressing the same module twice gives different bytes")
	}
}
