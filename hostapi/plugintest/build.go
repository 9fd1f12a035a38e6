// Package plugintest runs a plugin module against the real plugin host in a
// plain `go test`, the way proxy-wasm's proxytest does for Envoy filters:
// Build compiles a plugin package to WebAssembly (once per test binary), New
// loads it into a hostapi.Host with recording backends, and a Binding runs
// request fixtures in any mode and returns the plugin's result, what the host
// counted, and the host calls it made. Harness, CheckFixture and
// ReadWasmInfo are the same host and stage for the author commands
// (`junction plugin test|preview|inspect`): a module run on a request, and
// a project's JSON fixtures checked.
//
// It is a test helper: it shells out to the go command and must not be
// imported by anything that serves traffic. It lives with the plugin side and
// must not import the serving engine (engine/..., the front ends, mgmt,
// inference, internal/pluginsys): it runs the plugin stage
// (internal/plugin), its wasm runner and the model-free backends
// (wasm.Backends) and the router's pii scan (internal/pii) directly, and
// TestDoesNotImportTheServingEngine holds it to that.
package plugintest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var builds sync.Map // absolute package dir or import path → *buildResult

type buildResult struct {
	once sync.Once
	wasm []byte
	err  error
}

// Build compiles the Go plugin package pkg (a directory, relative to the
// test's working directory, or an import path) with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
//
// and returns the module's bytes. Each package is built once per test
// binary; the go command's own cache makes later runs fast. It fails tb when
// the build fails, with the compiler's output.
func Build(tb testing.TB, pkg string) []byte {
	tb.Helper()
	wasm, err := BuildPackage(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return wasm
}

// BuildPackage is Build without a testing.TB (for benchmarks' setup and
// tools).
//
// When the environment variable JUNCTION_PLUGINTEST_WASM names a directory,
// the module is read from <dir>/<last element of pkg>.wasm instead of being
// built: for running test binaries on a machine without a Go toolchain.
func BuildPackage(pkg string) ([]byte, error) {
	if dir := os.Getenv("JUNCTION_PLUGINTEST_WASM"); dir != "" {
		return os.ReadFile(filepath.Join(dir, filepath.Base(pkg)+".wasm"))
	}
	key := pkg
	if abs, err := filepath.Abs(pkg); err == nil {
		if st, err := os.Stat(abs); err == nil && st.IsDir() {
			key = abs
		}
	}
	v, _ := builds.LoadOrStore(key, &buildResult{})
	br := v.(*buildResult)
	br.once.Do(func() { br.wasm, br.err = build(key) })
	return br.wasm, br.err
}

func build(pkg string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "junction-plugintest-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "plugin.wasm")
	target := pkg
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
	if filepath.IsAbs(pkg) {
		cmd.Dir = pkg
	} else {
		cmd.Args[len(cmd.Args)-1] = target
	}
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building plugin %s for wasip1/wasm: %v\n%s", pkg, err, stderr.String())
	}
	return os.ReadFile(out)
}

// CacheDir is a directory for the host's compilation cache shared by tests
// on this machine (under the user's cache directory, like the go command's
// build cache), so that each module is compiled once rather than once per
// test. It returns "" (no disk cache) when no such directory can be made.
func CacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "junction", "plugintest-wazero")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	return dir
}
