package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
	"github.com/junction-router/junction/internal/mgmt"
)

// A model deployment whose model fails to load (here: a cached built-in
// whose config.json was changed, which the worker refuses) ends start-up at
// once with phase error, the reason on /ready and /startup-status, which
// keep answering it until serve is stopped; serve then exits 1. Both the
// management API (a jailbreak binding) and the interim listener (the
// embeddings binding, awaited before the configuration compiles) report it.
func TestServeReportsAFailedDeployment(t *testing.T) {
	orttest.Library(t)
	t.Setenv(envRunMain, "1")
	t.Setenv(supervise.EnvThreads, "1")
	t.Setenv(supervise.EnvReadyTimeout, "10m") // the failure must not wait for it
	dir, err := defaultmodels.CacheDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{defaultmodels.JailbreakName, defaultmodels.EmbedderName} {
		cfg := filepath.Join(dir, name, "config.json")
		b, _ := os.ReadFile(cfg)
		if err := os.WriteFile(cfg, append(b, ' '), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(supervise.EnvCacheDir, dir)

	for _, c := range []struct{ name, catalog string }{
		{"management API", `    deployments: [{name: guard, artifact: jailbreak-glove, device: cpu}]
    bindings: {jailbreak: {deployment: guard}}`},
		{"interim listener", `    deployments: [{name: guard, artifact: embed-glove, device: cpu}]
    bindings: {embeddings: {deployment: guard}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, gw, mg, _ := deploymentConfig(t, c.catalog)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan int, 1)
			stderr := &syncWriter{}
			go func() {
				done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--extproc=false", "--signal-models", "lexical"}, &bytes.Buffer{}, stderr)
			}()
			base := fmt.Sprintf("http://127.0.0.1:%d", mg)
			deadline := time.Now().Add(90 * time.Second)
			var st mgmt.StartupStatus
			for {
				code := getJSON(base+"/startup-status", &st)
				if code == http.StatusServiceUnavailable && st.Phase == "error" {
					break
				}
				select {
				case code := <-done:
					t.Fatalf("serve exited %d without reporting phase error: %s", code, stderr.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no phase error in 90 s: %+v\n%s", st, stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !strings.Contains(st.Message, "guard") || !strings.Contains(st.Message, "config.json has digest") {
				t.Errorf("startup-status message %q, want the deployment and why", st.Message)
			}
			if len(st.ModelDeployments) != 1 || st.ModelDeployments[0].State != "failed" || !strings.Contains(st.ModelDeployments[0].Reason, "config.json") {
				t.Errorf("model_deployments %+v", st.ModelDeployments)
			}
			// It keeps answering, /ready too.
			time.Sleep(300 * time.Millisecond)
			var ready mgmt.ReadyStatus
			if code := getJSON(base+"/ready", &ready); code != http.StatusServiceUnavailable || ready.Phase != "error" || ready.Message == "" {
				t.Errorf("/ready %d %+v, want 503 phase error with the reason", code, ready)
			}
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", gw)); err == nil {
				c.Close()
				t.Error("the gateway opened although start-up failed")
			}
			cancel()
			select {
			case code := <-done:
				if code != 1 || !strings.Contains(stderr.String(), "failed to load") {
					t.Errorf("serve exited %d: %s", code, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
		})
	}
}

func getJSON(url string, v any) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(v)
	return resp.StatusCode
}
