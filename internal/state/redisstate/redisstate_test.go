package redisstate_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

func TestNewSaysWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		c    redisstate.Config
		want string
	}{
		{redisstate.Config{}, "address is empty"},
		{redisstate.Config{Address: "x:1", PasswordEnv: "JUNCTION_TEST_SURELY_UNSET"}, "JUNCTION_TEST_SURELY_UNSET, which is not set"},
		{redisstate.Config{Address: "x:1", TLS: redisstate.TLS{CAFile: "/ca.pem"}}, "enabled is false"},
		{redisstate.Config{Address: "x:1", TLS: redisstate.TLS{Enabled: true, CertFile: "/c.pem"}}, "go together"},
		{redisstate.Config{Address: "x:1", TLS: redisstate.TLS{Enabled: true, CAFile: "/nonexistent/ca.pem"}}, "ca_file"},
		{redisstate.Config{Address: "x:1", Addresses: []string{"y:1"}}, "set mode: cluster"},
		{redisstate.Config{Mode: "cluster"}, "addresses is empty"},
		{redisstate.Config{Mode: "cluster", Address: "x:1", Addresses: []string{"y:1"}}, "not both"},
		{redisstate.Config{Mode: "cluster", Addresses: []string{"y:1"}, DB: 2}, "database 0 only"},
		{redisstate.Config{Mode: "sentinel", Address: "x:1"}, "standalone or cluster"},
	} {
		_, err := redisstate.New(tc.c, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}

func TestPasswordFromTheEnvironment(t *testing.T) {
	t.Setenv("JUNCTION_TEST_REDIS_PASSWORD", "s3cret")
	c, err := redisstate.New(redisstate.Config{Address: "127.0.0.1:1", PasswordEnv: "JUNCTION_TEST_REDIS_PASSWORD"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := c.UniversalClient.(*redis.Client).Options()
	if o.Password != "s3cret" || c.Prefix != redisstate.DefaultKeyPrefix {
		t.Fatalf("password %q, prefix %q", o.Password, c.Prefix)
	}
	cl, err := redisstate.New(redisstate.Config{Mode: redisstate.ModeCluster, Address: "127.0.0.1:1", PasswordEnv: "JUNCTION_TEST_REDIS_PASSWORD"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	co := cl.UniversalClient.(*redis.ClusterClient).Options()
	if co.Password != "s3cret" || len(co.Addrs) != 1 || co.Addrs[0] != "127.0.0.1:1" || !cl.Cluster() {
		t.Fatalf("cluster options: password %q, seeds %v", co.Password, co.Addrs)
	}
}

// TestGroupNames: with one server a group is the key names the stores
// always used; in cluster mode it is a hash tag.
func TestGroupNames(t *testing.T) {
	one, err := redisstate.New(redisstate.Config{Address: "127.0.0.1:1", KeyPrefix: "p:"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	many, err := redisstate.New(redisstate.Config{Mode: redisstate.ModeCluster, Addresses: []string{"127.0.0.1:1", "127.0.0.1:2"}, KeyPrefix: "p:"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer many.Close()
	if g := one.Group("rl"); g != "p:rl" {
		t.Errorf("standalone group %q, want p:rl", g)
	}
	if g := many.Group("rl"); g != "p:{rl}" {
		t.Errorf("cluster group %q, want p:{rl}", g)
	}
	if a := many.Addr(); !strings.Contains(a, "127.0.0.1:1,127.0.0.1:2") {
		t.Errorf("cluster Addr %q names no seeds", a)
	}
}

func TestPingAndFailed(t *testing.T) {
	c := redistest.New(t)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	down, err := redisstate.New(redisstate.Config{Address: addr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	if err := down.Ping(context.Background()); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("ping of a closed port: %v", err)
	}
	down.Failed("cache", "lookup", errors.New("boom"))
	down.Failed("cache", "lookup", errors.New("boom"))
	if n := down.Errors("cache", "lookup"); n != 2 {
		t.Fatalf("errors counted: %v", n)
	}
}

// TestCluster: against a real three-node Redis Cluster, Ping checks every
// master, keys without a group spread over the nodes, a group's keys share
// a slot (a multi-key command on them is accepted), and ScanKeys finds the
// keys of every node.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := range n {
		if err := c.Set(ctx, fmt.Sprintf("%sloose:%d", c.Prefix, i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	g := c.Group("g")
	if err := c.MSet(ctx, g+":a", "1", g+":b", "2", g+":c", "3").Err(); err != nil {
		t.Fatalf("a multi-key command on one group's keys: %v", err)
	}
	used := 0
	for _, k := range cl.KeysPerNode(t, c.Prefix) {
		if k > 0 {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("keys landed on %d node(s) of 3: %v", used, cl.KeysPerNode(t, c.Prefix))
	}
	found := 0
	if err := c.ScanKeys(ctx, c.Prefix+"*", 7, func(keys []string) error { found += len(keys); return nil }); err != nil {
		t.Fatal(err)
	}
	if found != n+3 {
		t.Fatalf("ScanKeys found %d keys of %d", found, n+3)
	}
}

// pingWith pings the server with cfg (a fresh prefix is not needed: a
// PING touches no key), within 5 s: a failure must be an error, not a hang.
func pingWith(t *testing.T, cfg redisstate.Config) error {
	t.Helper()
	c, err := redisstate.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err = c.Ping(ctx)
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("a ping took %v (err %v): it should fail fast", d, err)
	}
	return err
}

// TestTLS: against a real redis-server that speaks TLS only, a client
// with tls.enabled and the CA's certificate as ca_file connects and
// stores; with the wrong CA, or without TLS, it fails at once with an
// error that says what to set.
func TestTLS(t *testing.T) {
	s := redistest.StartServerWith(t, redistest.Options{TLS: true, Volatile: true})
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, c.Prefix+"k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, c.Prefix+"k").Result(); err != nil || v != "v" {
		t.Fatalf("get over TLS: %q, %v", v, err)
	}

	wrong := s.Config()
	wrong.TLS.CAFile = redistest.NewTLSFiles(t).CA
	if err := pingWith(t, wrong); err == nil || !strings.Contains(err.Error(), "set global.state.redis.tls.ca_file to the CA certificate that signed it") {
		t.Fatalf("a CA that did not sign the server's certificate: %v", err)
	}
	system := s.Config()
	system.TLS.CAFile = "" // the system's roots do not hold the test CA
	if err := pingWith(t, system); err == nil || !strings.Contains(err.Error(), "tls.ca_file") {
		t.Fatalf("the system's roots for a private CA: %v", err)
	}
	plain := redisstate.Config{Address: s.Addr()}
	if err := pingWith(t, plain); err == nil || !strings.Contains(err.Error(), "set global.state.redis.tls.enabled: true") {
		t.Fatalf("plain TCP to a TLS port: %v", err)
	}

	p := redistest.StartVolatileServer(t)
	tlsToPlain := s.Config()
	tlsToPlain.Address = p.Addr()
	if err := pingWith(t, tlsToPlain); err == nil || !strings.Contains(err.Error(), "does not speak TLS on that port, set global.state.redis.tls.enabled: false") {
		t.Fatalf("TLS to a plain port: %v", err)
	}
}

// TestMutualTLS: a server that requires client certificates
// (tls-auth-clients yes) refuses a client without cert_file and key_file,
// saying to set them, and serves one with a certificate its CA signed, and
// a password from password_env on top.
func TestMutualTLS(t *testing.T) {
	t.Setenv("JUNCTION_TEST_REDIS_TLS_PASSWORD", "tls-s3cret")
	s := redistest.StartServerWith(t, redistest.Options{TLS: true, ClientCerts: "yes", Volatile: true, PasswordEnv: "JUNCTION_TEST_REDIS_TLS_PASSWORD"})
	if err := pingWith(t, s.Config()); err != nil {
		t.Fatalf("a client certificate the server's CA signed: %v", err)
	}
	c := s.Client(t)
	if err := c.Set(context.Background(), c.Prefix+"k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	noCert := s.Config()
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "", ""
	if err := pingWith(t, noCert); err == nil || !strings.Contains(err.Error(), "set global.state.redis.tls.cert_file and key_file") {
		t.Fatalf("no client certificate for a server that requires one: %v", err)
	}
	other := redistest.NewTLSFiles(t)
	strange := s.Config()
	strange.TLS.CertFile, strange.TLS.KeyFile = other.ClientCert, other.ClientKey
	if err := pingWith(t, strange); err == nil || !strings.Contains(err.Error(), "cert_file and key_file") {
		t.Fatalf("a client certificate another CA signed: %v", err)
	}
}

// TestPassword: a server with requirepass refuses a client without a
// password, and one with the wrong password, each with what to set; the
// password in password_env's variable is accepted.
func TestPassword(t *testing.T) {
	t.Setenv("JUNCTION_TEST_REDIS_PASSWORD", "s3cret")
	s := redistest.StartServerWith(t, redistest.Options{Volatile: true, PasswordEnv: "JUNCTION_TEST_REDIS_PASSWORD"})
	if err := pingWith(t, s.Config()); err != nil {
		t.Fatal(err)
	}
	if err := pingWith(t, redisstate.Config{Address: s.Addr()}); err == nil || !strings.Contains(err.Error(), "set global.state.redis.password_env") {
		t.Fatalf("no password: %v", err)
	}
	t.Setenv("JUNCTION_TEST_REDIS_WRONG_PASSWORD", "guess")
	if err := pingWith(t, redisstate.Config{Address: s.Addr(), PasswordEnv: "JUNCTION_TEST_REDIS_WRONG_PASSWORD"}); err == nil ||
		!strings.Contains(err.Error(), "refuses the password in JUNCTION_TEST_REDIS_WRONG_PASSWORD") {
		t.Fatalf("a wrong password: %v", err)
	}
}

// TestClusterOverTLS: against a real three-node Redis Cluster that speaks
// TLS only (tls-cluster yes: the bus too, and CLUSTER SLOTS names the TLS
// ports), requires client certificates and a password, a cluster client
// seeded with one node reaches every node over TLS (keys land on several)
// and a group's keys accept a multi-key command; without the CA, without
// a client certificate, over plain TCP or without the password it fails
// at once saying what to set, as with one server.
func TestClusterOverTLS(t *testing.T) {
	t.Setenv("JUNCTION_TEST_REDIS_CLUSTER_PASSWORD", "cluster-s3cret")
	cl := redistest.StartClusterWith(t, 3, redistest.Options{TLS: true, ClientCerts: "yes", PasswordEnv: "JUNCTION_TEST_REDIS_CLUSTER_PASSWORD"})
	c := cl.Client(t)
	ctx := context.Background()
	const n = 30
	for i := range n {
		if err := c.Set(ctx, fmt.Sprintf("%sloose:%d", c.Prefix, i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	g := c.Group("g")
	if err := c.MSet(ctx, g+":a", "1", g+":b", "2").Err(); err != nil {
		t.Fatalf("a multi-key command on one group's keys: %v", err)
	}
	per := cl.KeysPerNode(t, c.Prefix)
	used, total := 0, 0
	for _, k := range per {
		total += k
		if k > 0 {
			used++
		}
	}
	if used < 2 || total != n+2 {
		t.Fatalf("keys over TLS on %d node(s) of 3, %d of %d: %v", used, total, n+2, per)
	}

	noCA := cl.Config()
	noCA.TLS.CAFile = redistest.NewTLSFiles(t).CA
	if err := pingWith(t, noCA); err == nil || !strings.Contains(err.Error(), "set global.state.redis.tls.ca_file to the CA certificate that signed it") {
		t.Fatalf("a CA that did not sign the nodes' certificate: %v", err)
	}
	noCert := cl.Config()
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "", ""
	if err := pingWith(t, noCert); err == nil || !strings.Contains(err.Error(), "set global.state.redis.tls.cert_file and key_file") {
		t.Fatalf("no client certificate for nodes that require one: %v", err)
	}
	plain := cl.Config()
	plain.TLS = redisstate.TLS{}
	if err := pingWith(t, plain); err == nil || !strings.Contains(err.Error(), "set global.state.redis.tls.enabled: true") {
		t.Fatalf("plain TCP to a TLS cluster: %v", err)
	}
	noPassword := cl.Config()
	noPassword.PasswordEnv = ""
	if err := pingWith(t, noPassword); err == nil || !strings.Contains(err.Error(), "set global.state.redis.password_env") {
		t.Fatalf("no password for a cluster that requires one: %v", err)
	}
}

// TestClusterAnnouncingPlainPorts: a cluster whose nodes serve TLS beside
// a plain port but run tls-cluster no names the plain ports in its slot
// map even to a TLS client: the seed answers over TLS, the masters do
// not, and Ping says to set tls-cluster yes (not tls.enabled: false,
// which the seed's answer shows is right).
func TestClusterAnnouncingPlainPorts(t *testing.T) {
	cl := redistest.StartClusterWith(t, 3, redistest.Options{TLS: true, PlainPortsAnnounced: true})
	c, err := redisstate.New(cl.Config(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A plain port waits for the end of the inline command a ClientHello
	// seems to start: the handshakes end at the deadline (serve gives its
	// Ping 2 s), here 1 s.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = c.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "run every redis-server with tls-cluster yes") {
		t.Fatalf("a TLS client of a cluster announcing its plain ports: %v", err)
	}
}

// TestClosedWhileWaitingIsDialledAgain: a connection the server closed
// (CLIENT KILL, as its idle timeout or a restart would) while it sat in the
// pool for longer than the window in which an answered connection is not
// checked is checked when it is taken again, found closed and replaced: the
// next command succeeds.
func TestClosedWhileWaitingIsDialledAgain(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	ctx := context.Background()
	if err := c.UniversalClient.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	killer := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer killer.Close()
	if n, err := killer.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL: %d killed, %v", n, err)
	}
	time.Sleep(300 * time.Millisecond) // past checkAfter (100 ms)
	if err := c.UniversalClient.Ping(ctx).Err(); err != nil {
		t.Fatalf("a command on the pool whose connection the server closed 300 ms before: %v", err)
	}
}

// TestBound: a context whose deadline comes first is kept as it is (no
// context of Bound's own, no allocation); otherwise the timeout bounds it,
// and cancel ends it, as context.WithTimeout's do.
func TestBound(t *testing.T) {
	parent, cancelParent := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelParent()
	ctx, cancel := redisstate.Bound(parent, time.Second)
	if ctx != parent {
		t.Fatal("a context with a sooner deadline was not kept")
	}
	cancel()
	if parent.Err() != nil {
		t.Fatal("Bound's cancel ended the caller's context")
	}
	if n := testing.AllocsPerRun(100, func() { _, c := redisstate.Bound(parent, time.Second); c() }); n != 0 {
		t.Errorf("Bound of a context with a sooner deadline: %v allocations, want 0", n)
	}

	for _, p := range []context.Context{context.Background(), parent} {
		before := time.Now()
		ctx, cancel := redisstate.Bound(p, 10*time.Millisecond)
		d, ok := ctx.Deadline()
		if !ok || d.Before(before.Add(10*time.Millisecond)) || d.After(time.Now().Add(10*time.Millisecond)) {
			t.Errorf("deadline %v (%v), want 10ms after %v", d, ok, before)
		}
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("err %v, want the deadline's", ctx.Err())
		}
		cancel()
	}
	ctx, cancel = redisstate.Bound(context.Background(), time.Hour)
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("err %v after cancel, want Canceled", ctx.Err())
	}
}
