//go:build !race

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// TestServeOnTLSRedis: two serve processes share a real redis-server that
// speaks TLS only, requires client certificates and a password, through
// global.state (tls.enabled, ca_file, cert_file, key_file, password_env):
// an answer cached by one is a hit on the other, and a limit of 4 admits
// exactly 4 of 12 requests sent at once across both, with the keys on
// that server.
func TestServeOnTLSRedis(t *testing.T) {
	t.Setenv("JUNCTION_E2E_REDIS_PASSWORD", "e2e-tls-pw") // serve inherits the environment
	s := redistest.StartServerWith(t, redistest.Options{TLS: true, ClientCerts: "yes", Volatile: true, PasswordEnv: "JUNCTION_E2E_REDIS_PASSWORD"})
	up := newUpstream(t)
	replica := func() *storedServer {
		p := newServePorts(t)
		cfg := writeServeConfig(t, p, replicaRecipe(up.URL, ""), perTeamLimit(4)+fmt.Sprintf(`  state:
    backend: redis
    redis:
      address: "%s"
      password_env: JUNCTION_E2E_REDIS_PASSWORD
      key_prefix: "tls-e2e:"
      fail_closed: true
      tls: {enabled: true, ca_file: "%s", cert_file: "%s", key_file: "%s"}
`, s.Addr(), s.TLS.CA, s.TLS.ClientCert, s.TLS.ClientKey))
		return startServe(t, cfg, filepath.Join(t.TempDir(), "data"), p)
	}
	r := []*storedServer{replica(), replica()}

	if code, h := r[0].ask("cacheme: over TLS", "X-Team", "cache-0"); code != 200 || h.Get("x-cache-status") != "miss" {
		t.Fatalf("first request on replica 0: %d, x-cache-status %q\n%s", code, h.Get("x-cache-status"), r[0].stderr.String())
	}
	if code, h := r[1].ask("cacheme: over TLS", "X-Team", "cache-1"); code != 200 || h.Get("x-cache-status") != "hit" {
		t.Fatalf("the same request on replica 1: %d, x-cache-status %q, want a hit from the shared cache\n%s", code, h.Get("x-cache-status"), r[1].stderr.String())
	}

	codes := burst(r, 12)
	if n := admitted(t, codes); n != 4 {
		t.Fatalf("two replicas on a TLS Redis admitted %d of 12 against a shared limit of 4 (fail_closed: a Redis they cannot reach admits none): %v", n, codes)
	}
	keys, err := s.Client(t).Keys(context.Background(), "tls-e2e:*").Result()
	if err != nil || len(keys) < 2 {
		t.Fatalf("keys under tls-e2e: on the TLS server: %v, %v", keys, err)
	}
}
