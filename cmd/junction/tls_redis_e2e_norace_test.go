//go:build !race

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// TestServeOnTLSRedis: two serve processes share a real redis-server that
// speaks TLS only, requires client certificates and a password, through
// global.state (tls.enabled, ca_file, cert_file, key_file, password_env):
// an answer cached by one is a hit on the other (within awaitHit's 5 s:
// the store follows the answer), and a limit of 4 admits
// exactly 4 of 12 requests sent at once across both, with the keys on
// that server.
func TestServeOnTLSRedis(t *testing.T) {
	t.Setenv("JUNCTION_E2E_REDIS_PASSWORD", "e2e-tls-pw") // serve inherits the environment
	s := redistest.StartServerWith(t, redistest.Options{TLS: true, ClientCerts: "yes", Volatile: true, PasswordEnv: "JUNCTION_E2E_REDIS_PASSWORD"})
	testServeOnTLSRedis(t, fmt.Sprintf("address: %q", s.Addr()), s.TLS, func() int {
		keys, err := s.Client(t).Keys(context.Background(), "tls-e2e:*").Result()
		if err != nil {
			t.Fatalf("keys under tls-e2e: on the TLS server: %v", err)
		}
		return len(keys)
	})
}

// TestServeOnTLSRedisCluster is TestServeOnTLSRedis on a real three-node
// Redis Cluster that speaks TLS only (tls-cluster yes), requires client
// certificates and a password, named by one seed node: the replicas reach
// the nodes its slot map names over TLS.
func TestServeOnTLSRedisCluster(t *testing.T) {
	t.Setenv("JUNCTION_E2E_REDIS_PASSWORD", "e2e-tls-cluster-pw")
	cl := redistest.StartClusterWith(t, 3, redistest.Options{TLS: true, ClientCerts: "yes", PasswordEnv: "JUNCTION_E2E_REDIS_PASSWORD"})
	testServeOnTLSRedis(t, fmt.Sprintf("mode: cluster\n      addresses: [%q]", cl.Addrs()[0]), cl.TLS, func() int {
		n := 0
		for _, k := range cl.KeysPerNode(t, "tls-e2e:") {
			n += k
		}
		return n
	})
}

// testServeOnTLSRedis runs two serve processes on the TLS Redis that where
// (the YAML naming it under global.state.redis) and pki describe; keys
// counts the keys under tls-e2e: there.
func testServeOnTLSRedis(t *testing.T, where string, pki *redistest.TLSFiles, keys func() int) {
	up := newUpstream(t)
	replica := func() *storedServer {
		p := newServePorts(t)
		cfg := writeServeConfig(t, p, replicaRecipe(up.URL, ""), perTeamLimit(4)+fmt.Sprintf(`  state:
    backend: redis
    redis:
      %s
      password_env: JUNCTION_E2E_REDIS_PASSWORD
      key_prefix: "tls-e2e:"
      fail_closed: true
      tls: {enabled: true, ca_file: "%s", cert_file: "%s", key_file: "%s"}
`, where, pki.CA, pki.ClientCert, pki.ClientKey))
		return startServe(t, cfg, filepath.Join(t.TempDir(), "data"), p)
	}
	r := []*storedServer{replica(), replica()}

	if code, h := r[0].ask("cacheme: over TLS", "X-Team", "cache-0"); code != 200 || h.Get("x-cache-status") != "miss" {
		t.Fatalf("first request on replica 0: %d, x-cache-status %q\n%s", code, h.Get("x-cache-status"), r[0].stderr.String())
	}
	var teams atomic.Int64 // a team per ask, so asking again meets no limit
	awaitHit(t, r[1], "cacheme: over TLS", func() []string { return []string{"X-Team", fmt.Sprint("cache-", teams.Add(1))} })

	codes := burst(r, 12)
	if n := admitted(t, codes); n != 4 {
		t.Fatalf("two replicas on a TLS Redis admitted %d of 12 against a shared limit of 4 (fail_closed: a Redis they cannot reach admits none): %v", n, codes)
	}
	if n := keys(); n < 2 {
		t.Fatalf("%d keys under tls-e2e: on the TLS Redis, want the cache's and the limit's", n)
	}
}
