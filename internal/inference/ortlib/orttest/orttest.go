// Package orttest gives tests the ONNX Runtime library or a decision about its absence: without the library a
// test is skipped on a developer machine, and fails when $JUNCTION_REQUIRE_ORT is set (CI sets it), so no
// ONNX test silently stops running. Only tests import it.
package orttest

import (
	"os"
	"testing"

	"github.com/junction-router/junction/internal/inference/ortlib"
)

// EnvRequire names the variable that turns a missing library into a test failure.
const EnvRequire = "JUNCTION_REQUIRE_ORT"

// Library returns the library's path, or skips (fails under $JUNCTION_REQUIRE_ORT) when it is missing.
func Library(t testing.TB) string {
	t.Helper()
	path, err := ortlib.Find("")
	if err != nil {
		if os.Getenv(EnvRequire) != "" {
			t.Fatalf("%s is set and %v", EnvRequire, err)
		}
		t.Skipf("skipping ONNX Runtime test: %v", err)
	}
	return path
}

// Environment starts the ONNX Runtime environment for the test and releases it when the test ends.
func Environment(t testing.TB) {
	t.Helper()
	path := Library(t)
	_, release, err := ortlib.Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}
