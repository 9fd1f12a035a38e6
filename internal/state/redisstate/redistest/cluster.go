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

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/state/redisstate"
)

// Cluster is a Redis Cluster of a test's own: n redis-server processes
// with cluster-enabled on free loopback ports (client and bus ports both
// chosen free), in temporary directories, masters without replicas, the
// 16384 slots split evenly. It is joined with CLUSTER ADDSLOTS and
// CLUSTER MEET, what `redis-cli --cluster create --cluster-replicas 0`
// does, so redis-cli is not needed; StartCluster returns once every node
// reports cluster_state:ok and knows all the others.
type Cluster struct {
	t     testing.TB
	addrs []string
	cmds  []*exec.Cmd
}

// StartCluster starts a cluster of n masters, skipping the test when
// redis-server is absent (failing under CI, which installs it). The
// processes are killed when t ends.
func StartCluster(t testing.TB, n int) *Cluster {
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
	cl := &Cluster{t: t}
	t.Cleanup(cl.kill)
	dir := t.TempDir()
	ports := freePorts(t, 2*n)
	for i := range n {
		port, bus := ports[2*i], ports[2*i+1]
		d := filepath.Join(dir, fmt.Sprint(port))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", d,
			"--cluster-enabled", "yes", "--cluster-port", fmt.Sprint(bus), "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cl.cmds = append(cl.cmds, cmd)
		cl.addrs = append(cl.addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	ctx := context.Background()
	nodes := make([]*redis.Client, n)
	for i, a := range cl.addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		defer nodes[i].Close()
		waitFor(t, a+" to answer PING", func() bool { return nodes[i].Ping(ctx).Err() == nil })
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
		if err := nodes[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", ports[2*i], ports[2*i+1]).Err(); err != nil {
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

// Addrs are the nodes' host:port.
func (cl *Cluster) Addrs() []string { return append([]string(nil), cl.addrs...) }

// Client is a cluster-mode client of the cluster (seeded with the first
// node only, as a managed cluster's one endpoint would be) under a key
// prefix of its own, whose keys are deleted when t ends.
func (cl *Cluster) Client(t testing.TB) *redisstate.Client {
	t.Helper()
	c, err := redisstate.New(redisstate.Config{Mode: redisstate.ModeCluster, Addresses: cl.addrs[:1], KeyPrefix: freshPrefix()}, nil)
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
		c := redis.NewClient(&redis.Options{Addr: a})
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
