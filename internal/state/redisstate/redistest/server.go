package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/state/redisstate"
)

// Server is a redis-server of a test's own on a free loopback port, in a
// temporary directory, with the append-only file on and fsynced before
// every acknowledgement (appendfsync always): what Junction's deployment
// guidance asks of a production Redis (docs/storage.md). The test can kill
// it and start it again on the same port and directory, where it loads the
// append-only file.
type Server struct {
	t        testing.TB
	port     int
	dir      string
	cmd      *exec.Cmd
	volatile bool // no append-only file
}

// StartServer starts a redis-server, skipping the test when the binary is
// absent (failing under CI, which installs it). It is killed when t ends.
func StartServer(t testing.TB) *Server { return startServer(t, false) }

// StartVolatileServer starts a redis-server without persistence (no
// append-only file, no snapshots), as the cluster nodes of StartCluster
// run and as a Redis that holds only the cache and rate limits may: what
// the benchmarks compare one server with a cluster on.
func StartVolatileServer(t testing.TB) *Server { return startServer(t, true) }

func startServer(t testing.TB, volatile bool) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and redis-server is not installed: %v", err)
		}
		t.Skipf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, port: l.Addr().(*net.TCPAddr).Port, dir: t.TempDir(), volatile: volatile}
	l.Close()
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Start starts the server (again) and waits until it answers PING, which
// it does once it has loaded its append-only file.
func (s *Server) Start() {
	s.t.Helper()
	persist := []string{"--appendonly", "yes", "--appendfsync", "always"}
	if s.volatile {
		persist = []string{"--appendonly", "no"}
	}
	s.cmd = exec.Command("redis-server", append([]string{"--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", ""}, persist...)...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	c, err := redisstate.New(redisstate.Config{Address: s.Addr()}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()) != nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer in 10 s", s.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client is a client of the server under a key prefix of its own, whose
// keys are deleted when t ends.
func (s *Server) Client(t testing.TB) *redisstate.Client {
	t.Helper()
	c, err := redisstate.New(redisstate.Config{Address: s.Addr(), KeyPrefix: freshPrefix()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAll(c) })
	return c
}

// Kill ends the server with SIGKILL: no shutdown, no last write; only what
// the append-only file holds survives.
func (s *Server) Kill() { s.end(syscall.SIGKILL) }

// Stop ends the server with SIGTERM (its orderly shutdown) and waits.
func (s *Server) Stop() { s.end(syscall.SIGTERM) }

func (s *Server) end(sig syscall.Signal) {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(sig)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}
