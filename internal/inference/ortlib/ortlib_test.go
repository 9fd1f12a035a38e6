package ortlib_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/inference/ortlib"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libonnxruntime.so.1")
	if err := os.WriteFile(lib, []byte("not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ortlib.Find(lib); err != nil || got != lib {
		t.Fatalf("explicit path: %q %v", got, err)
	}
	t.Setenv(ortlib.EnvLibrary, lib)
	if got, err := ortlib.Find(""); err != nil || got != lib {
		t.Fatalf("environment: %q %v", got, err)
	}
	t.Setenv(ortlib.EnvLibrary, filepath.Join(dir, "missing.so"))
	_, err := ortlib.Find("")
	if !errors.Is(err, ortlib.ErrNotFound) || !strings.Contains(err.Error(), "make onnxruntime") || !strings.Contains(err.Error(), ortlib.EnvLibrary) {
		t.Fatalf("a missing file named by the environment: %v", err)
	}
	// An explicit path wins over the environment, and must exist.
	if _, err := ortlib.Find(filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "make onnxruntime") {
		t.Fatalf("missing explicit path: %v", err)
	}
}

func TestAcquireRefusesAnotherLibrary(t *testing.T) {
	lib := orttest.Library(t)
	_, release, err := ortlib.Acquire(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if _, _, err := ortlib.Acquire(other); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second library: %v", err)
	}
	version, release2, err := ortlib.Acquire(lib)
	if err != nil || !strings.HasPrefix(version, "1.24") {
		t.Fatalf("joining: %q %v", version, err)
	}
	release2()
	release2() // idempotent
}
