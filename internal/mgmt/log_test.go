package mgmt_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/mgmt"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Tokens and request text never reach the logs, even at debug level.
func TestLogsHoldNoTokensOrBodies(t *testing.T) {
	t.Setenv("JUNCTION_TEST_LOG_TOKEN", "very-secret-token-789")
	base, _ := os.ReadFile("testdata/base.yaml")
	doc := strings.Replace(string(base), "    api: {batch_classification: {max_batch_size: 4}}", `    api: {batch_classification: {max_batch_size: 4}}
    management_api:
      auth:
        mode: bearer
        roles: [{name: admin, permissions: ["*"]}]
        tokens: [{name: ops, roles: [admin], env: JUNCTION_TEST_LOG_TOKEN}]`, 1)
	cfg, err := mgmt.OpenConfig(context.Background(), mgmt.ConfigOptions{Path: writeConfig(t, doc), Compile: compiler(t)})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	api, err := mgmt.New(mgmt.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	for _, tok := range []string{"very-secret-token-789", "wrong-token-000"} {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/routing/preview?x=query-marker", strings.NewReader(`{"text":"my private body marker"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	out := logs.String()
	if !strings.Contains(out, "/api/v1/routing/preview") || !strings.Contains(out, "principal=ops") {
		t.Fatalf("no access log: %s", out)
	}
	for _, secret := range []string{"very-secret-token-789", "wrong-token-000", "private body marker", "query-marker"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds %q:\n%s", secret, out)
		}
	}
}
