package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/state/redisstate"
)

// Cluster is a Redis Cluster of a test's own: n redis-server processes
// with cluster-enabled on free loopback ports (client and bus ports both
// chosen free), in temporary directories, masters without replicas and
// without persistence, the 16384 slots split evenly. It is joined with
// CLUSTER ADDSLOTS and CLUSTER MEET, what `redis-cli --cluster create
// --cluster-replicas 0` does, so redis-cli is not needed; StartCluster
// returns once every node reports cluster_state:ok and knows all the
// others.
type Cluster struct {
	t     testing.TB
	addrs []string
	cmds  []*exec.Cmd
	o     Options
	// TLS is the PKI of a TLS cluster (Options.TLS); nil without TLS.
	TLS *TLSFiles
}

// StartCluster starts a cluster of n masters, skipping the test when
// redis-server is absent (failing under CI, which installs it). The
// processes are killed when t ends.
func StartCluster(t testing.TB, n int) *Cluster { return StartClusterWith(t, n, Options{}) }

// StartClusterWith starts a cluster of n masters as o asks (Volatile is
// implied). With TLS every node speaks TLS only, to clients and on the
// cluster bus: --port 0, --tls-port, --tls-cluster yes (the bus is TLS and
// CLUSTER SLOTS announces the TLS ports) and --tls-replication yes, one
// certificate from a fresh CA for all of them (Cluster.TLS); a node dials
// the others' bus with the client certificate (tls-client-cert-file: the
// bus always requires one, whatever tls-auth-clients says of clients).
// With PlainPortsAnnounced the nodes keep a plain port beside the TLS one
// and the bus plain (tls-cluster no), so CLUSTER SLOTS names the plain
// ports even to a TLS client. With PasswordEnv every node requires the
// password (requirepass).
func StartClusterWith(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and redis-server is not installed: %v", err)
		}
		t.Skipf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
	// The bus port is chosen free too (--cluster-port, CLUSTER MEET with
	// it), which Redis 7.0 brought.
	if v, err := exec.Command("redis-server", "--version").Output(); err == nil {
		if m := regexp.MustCompile(`v=(\d+)\.`).FindSubmatch(v); m != nil && atoi(string(m[1])) < 7 {
			msg := fmt.Sprintf("redis-server is %s; StartCluster needs Redis 7.0 or later (cluster-port)", strings.TrimSpace(string(v)))
			if os.Getenv("CI") != "" {
				t.Fatal("CI is set and " + msg)
			}
			t.Skip(msg)
		}
	}
	if o.PasswordEnv != "" && os.Getenv(o.PasswordEnv) == "" {
		t.Fatalf("redistest: Options.PasswordEnv names %s, which is empty: t.Setenv it first", o.PasswordEnv)
	}
	if o.PlainPortsAnnounced && !o.TLS {
		t.Fatal("redistest: Options.PlainPortsAnnounced is a TLS cluster's misconfiguration: set TLS too")
	}
	cl := &Cluster{t: t, o: o}
	if o.TLS {
		cl.TLS = NewTLSFiles(t)
		if o.ClientCerts == "" {
			cl.o.ClientCerts = "optional"
		}
	}
	t.Cleanup(cl.kill)
	dir := t.TempDir()
	const perNode = 3 // client, bus, and a plain port beside TLS (PlainPortsAnnounced)
	ports := freePorts(t, perNode*n)
	for i := range n {
		port, bus, plain := ports[perNode*i], ports[perNode*i+1], ports[perNode*i+2]
		d := filepath.Join(dir, fmt.Sprint(port))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{"--bind", "127.0.0.1", "--dir", d,
			"--cluster-enabled", "yes", "--cluster-port", fmt.Sprint(bus), "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no"}
		switch {
		case cl.TLS == nil:
			args = append(args, "--port", fmt.Sprint(port))
		default:
			tlsCluster, plainPort := "yes", 0
			if o.PlainPortsAnnounced {
				tlsCluster, plainPort = "no", plain
			}
			args = append(args, "--port", fmt.Sprint(plainPort), "--tls-port", fmt.Sprint(port),
				"--tls-cluster", tlsCluster, "--tls-replication", tlsCluster,
				"--tls-cert-file", cl.TLS.ServerCert, "--tls-key-file", cl.TLS.ServerKey, "--tls-ca-cert-file", cl.TLS.CA,
				"--tls-client-cert-file", cl.TLS.ClientCert, "--tls-client-key-file", cl.TLS.ClientKey,
				"--tls-auth-clients", cl.o.ClientCerts)
		}
		if o.PasswordEnv != "" {
			args = append(args, "--requirepass", os.Getenv(o.PasswordEnv))
		}
		cmd := exec.Command("redis-server", args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cl.cmds = append(cl.cmds, cmd)
		cl.addrs = append(cl.addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	ctx := context.Background()
	nodes := make([]*redisstate.Client, n)
	for i, a := range cl.addrs {
		nodes[i] = cl.node(a)
		defer nodes[i].Close()
		waitFor(t, a+" to answer PING", func() bool { return nodes[i].Ping(ctx) == nil })
	}
	for i, c := range nodes {
		lo, hi := i*16384/n, (i+1)*16384/n
		slots := make([]int, 0, hi-lo)
		for s := lo; s < hi; s++ {
			slots = append(slots, s)
		}
		if err := c.ClusterAddSlots(ctx, slots...).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTS on %s: %v", cl.addrs[i], err)
		}
		// Distinct config epochs, as redis-cli sets them, so no
		// collision has to be resolved before the cluster is ok.
		if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			t.Fatalf("CLUSTER SET-CONFIG-EPOCH on %s: %v", cl.addrs[i], err)
		}
	}
	for i := 1; i < n; i++ {
		if err := nodes[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", ports[perNode*i], ports[perNode*i+1]).Err(); err != nil {
			t.Fatalf("CLUSTER MEET %s: %v", cl.addrs[i], err)
		}
	}
	for i, c := range nodes {
		waitFor(t, cl.addrs[i]+" to report cluster_state:ok with every node known", func() bool {
			info, err := c.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d\r", n)) &&
				strings.Contains(info, "cluster_slots_ok:16384\r")
		})
	}
	return cl
}

// Addrs are the nodes' host:port (their TLS ports in a TLS cluster).
func (cl *Cluster) Addrs() []string { return append([]string(nil), cl.addrs...) }

// Config is global.state.redis for the cluster: mode cluster seeded with
// the first node only (as a managed cluster's one endpoint would be), and
// with TLS the CA (and, where the nodes require one, the client
// certificate), with a password the password_env.
func (cl *Cluster) Config() redisstate.Config {
	return redisstate.Config{Mode: redisstate.ModeCluster, Addresses: cl.addrs[:1], PasswordEnv: cl.o.PasswordEnv, TLS: clientTLS(cl.TLS, cl.o.ClientCerts)}
}

// node is a client of the one node at addr (standalone mode: what it
// answers itself, no redirects), over TLS and with the password as the
// cluster asks.
func (cl *Cluster) node(addr string) *redisstate.Client {
	cl.t.Helper()
	c, err := redisstate.New(redisstate.Config{Address: addr, PasswordEnv: cl.o.PasswordEnv, TLS: clientTLS(cl.TLS, cl.o.ClientCerts)}, nil)
	if err != nil {
		cl.t.Fatal(err)
	}
	return c
}

// Client is a cluster-mode client of the cluster (Config) under a key
// prefix of its own, whose keys are deleted when t ends.
func (cl *Cluster) Client(t testing.TB) *redisstate.Client {
	t.Helper()
	cfg := cl.Config()
	cfg.KeyPrefix = freshPrefix()
	c, err := redisstate.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAll(c) })
	return c
}

// KeysPerNode counts the keys under prefix on each node (by address).
func (cl *Cluster) KeysPerNode(t testing.TB, prefix string) map[string]int {
	t.Helper()
	ctx := context.Background()
	out := map[string]int{}
	for _, a := range cl.addrs {
		c := cl.node(a)
		keys, err := c.Keys(ctx, strings.ReplaceAll(prefix, "*", `\*`)+"*").Result()
		c.Close()
		if err != nil {
			t.Fatalf("KEYS on %s: %v", a, err)
		}
		out[a] = len(keys)
	}
	return out
}

// KillNode ends the node at addr (one of Addrs) with SIGKILL: a shard
// down, whose slots no other node serves (the cluster has no replicas).
func (cl *Cluster) KillNode(addr string) {
	cl.t.Helper()
	for i, a := range cl.addrs {
		if a == addr && cl.cmds[i].Process != nil {
			_ = cl.cmds[i].Process.Kill()
			_ = cl.cmds[i].Wait()
			cl.cmds[i].Process = nil
			return
		}
	}
	cl.t.Fatalf("no live node at %s", addr)
}

func (cl *Cluster) kill() {
	for _, c := range cl.cmds {
		if c.Process != nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	cl.cmds = nil
}

// freePorts are n distinct loopback ports free now (held open together
// while chosen, so none is picked twice).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
