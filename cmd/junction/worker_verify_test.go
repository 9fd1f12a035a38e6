package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// workerRefuses runs `junction worker args...` until its log says want
// (or 60 s pass) and returns the log.
func workerRefuses(t *testing.T, want string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	stderr := &syncWriter{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"worker", "--threads", "1"}, args...), &bytes.Buffer{}, stderr)
	}()
	for !strings.Contains(stderr.String(), want) {
		select {
		case <-done:
			if !strings.Contains(stderr.String(), want) {
				t.Fatalf("the worker ended without refusing (%q): %s", want, stderr.String())
			}
			return stderr.String()
		case <-ctx.Done():
			t.Fatalf("no refusal (%q) in 60 s: %s", want, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	<-done
	return stderr.String()
}

// A built-in model whose cached config.json had its labels swapped is
// refused by the worker, which checks every file against the manifest.
func TestWorkerRefusesAChangedBuiltinModel(t *testing.T) {
	orttest.Library(t)
	dir, err := defaultmodels.CacheDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, defaultmodels.DomainName, "config.json")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, bytes.Replace(b, []byte(`"0": "`), []byte(`"0": "x`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	workerRefuses(t, "config.json has digest", "--cache-dir", dir, "--port", fmt.Sprint(freePort(t)), defaultmodels.DomainName)
}

// A 40-character revision the files do not show is refused.
func TestWorkerRefusesARevisionTheFilesAreNot(t *testing.T) {
	orttest.Library(t)
	dir, err := defaultmodels.CacheDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Repeat("ab", 20)
	workerRefuses(t, "not at the pinned revision "+wrong, "--cache-dir", dir, "--port", fmt.Sprint(freePort(t)), defaultmodels.JailbreakName+"@"+wrong)
}
