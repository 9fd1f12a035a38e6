package redistest

import (
	"bytes"
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
	t      testing.TB
	port   int
	dir    string
	cmd    *exec.Cmd
	exited <-chan error // cmd's Wait
	o      Options
	// TLS is the PKI of a TLS server (Options.TLS); nil without TLS.
	TLS *TLSFiles
}

// Options are what StartServerWith (or StartClusterWith) starts.
type Options struct {
	// Volatile: no append-only file, no snapshots (a cluster's nodes
	// always run so).
	Volatile bool
	// TLS: the server speaks TLS only (--port 0, --tls-port), with a
	// certificate from a fresh CA (Server.TLS).
	TLS bool
	// ClientCerts is --tls-auth-clients: "no", "optional" or "yes" (the
	// server refuses a client without a certificate its CA signed). Empty
	// is "optional".
	ClientCerts string
	// PasswordEnv names an environment variable the test has set: the
	// server requires its value (--requirepass), and Config carries it as
	// password_env.
	PasswordEnv string
	// PlainPortsAnnounced (StartClusterWith only, with TLS) is a TLS
	// cluster misconfigured: each node keeps a plain port beside its TLS
	// one and runs tls-cluster no, so CLUSTER SLOTS names the plain ports
	// even to a client connected over TLS.
	PlainPortsAnnounced bool
}

// StartServer starts a redis-server, skipping the test when the binary is
// absent (failing under CI, which installs it). It is killed when t ends.
func StartServer(t testing.TB) *Server { return StartServerWith(t, Options{}) }

// StartVolatileServer starts a redis-server without persistence (no
// append-only file, no snapshots), as the cluster nodes of StartCluster
// run and as a Redis that holds only the cache and rate limits may: what
// the benchmarks compare one server with a cluster on.
func StartVolatileServer(t testing.TB) *Server { return StartServerWith(t, Options{Volatile: true}) }

// StartServerWith starts a redis-server as o asks, skipping the test when
// the binary is absent (failing under CI, which installs it). It is killed
// when t ends.
func StartServerWith(t testing.TB, o Options) *Server {
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
	s := &Server{t: t, port: l.Addr().(*net.TCPAddr).Port, dir: t.TempDir(), o: o}
	l.Close()
	if o.PasswordEnv != "" && os.Getenv(o.PasswordEnv) == "" {
		t.Fatalf("redistest: Options.PasswordEnv names %s, which is empty: t.Setenv it first", o.PasswordEnv)
	}
	if o.TLS {
		s.TLS = NewTLSFiles(t)
		if o.ClientCerts == "" {
			s.o.ClientCerts = "optional"
		}
	}
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
	args := []string{"--bind", "127.0.0.1", "--dir", s.dir, "--save", ""}
	if s.o.Volatile {
		args = append(args, "--appendonly", "no")
	} else {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	if s.TLS != nil {
		args = append(args, "--port", "0", "--tls-port", fmt.Sprint(s.port),
			"--tls-cert-file", s.TLS.ServerCert, "--tls-key-file", s.TLS.ServerKey, "--tls-ca-cert-file", s.TLS.CA,
			"--tls-auth-clients", s.o.ClientCerts)
	} else {
		args = append(args, "--port", fmt.Sprint(s.port))
	}
	if s.o.PasswordEnv != "" {
		args = append(args, "--requirepass", os.Getenv(s.o.PasswordEnv))
	}
	var stderr bytes.Buffer
	s.cmd = exec.Command("redis-server", args...)
	s.cmd.Stdout, s.cmd.Stderr = &stderr, &stderr
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	s.exited = exited
	c, err := redisstate.New(s.Config(), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()) != nil {
		select {
		case err := <-exited:
			s.cmd = nil
			s.t.Fatalf("redis-server %v exited (%v): %s", args, err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer in 10 s", s.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Config is global.state.redis for the server: its address, and with TLS
// the CA (and, where the server requires one, the client certificate),
// with a password the password_env.
func (s *Server) Config() redisstate.Config {
	return redisstate.Config{Address: s.Addr(), PasswordEnv: s.o.PasswordEnv, TLS: clientTLS(s.TLS, s.o.ClientCerts)}
}

// clientTLS is global.state.redis.tls for a server (or cluster) with the
// PKI f (nil: no TLS): the CA, and the client certificate where
// clientCerts (tls-auth-clients) is "yes".
func clientTLS(f *TLSFiles, clientCerts string) redisstate.TLS {
	if f == nil {
		return redisstate.TLS{}
	}
	t := redisstate.TLS{Enabled: true, CAFile: f.CA}
	if clientCerts == "yes" {
		t.CertFile, t.KeyFile = f.ClientCert, f.ClientKey
	}
	return t
}

// Client is a client of the server under a key prefix of its own, whose
// keys are deleted when t ends.
func (s *Server) Client(t testing.TB) *redisstate.Client {
	t.Helper()
	cfg := s.Config()
	cfg.KeyPrefix = freshPrefix()
	c, err := redisstate.New(cfg, nil)
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
		<-s.exited
		s.cmd = nil
	}
}
