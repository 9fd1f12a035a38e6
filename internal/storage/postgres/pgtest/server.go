package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// OwnServer is a PostgreSQL of a test's own: a cluster made by initdb in a temporary directory, served by postgres
// on a free loopback port (trust auth), stopped and deleted when the test ends. Tests that claim several
// processes share one database use it, so they need no server started for them.
type OwnServer struct {
	port int
}

// StartServer starts a PostgreSQL server, skipping the test when initdb or postgres is not installed (failing
// under CI, whose .ci/run installs Debian's postgresql). PostgreSQL refuses to run as root, so under root the
// server runs as the postgres user the package creates.
func StartServer(t testing.TB) *OwnServer {
	t.Helper()
	initdb, postgres, err := binaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skipf("%v (apt-get install postgresql)", err)
	}
	var cred *syscall.Credential
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("PostgreSQL does not run as root and there is no postgres user to run it as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &OwnServer{port: l.Addr().(*net.TCPAddr).Port}
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	srv := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(s.port), "-k", dir, "-c", "listen_addresses=127.0.0.1")
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGINT) // fast shutdown: roll back, disconnect, stop
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-exited
		}
	})
	db, err := sql.Open("pgx", s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return s
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("postgres exited before it answered: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("postgres on 127.0.0.1:%d did not answer in 30 s: %v\n%s", s.port, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DSN reaches the server's postgres database as the superuser postgres.
func (s *OwnServer) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// binaries finds initdb and postgres on PATH or where Debian's postgresql packages put them.
func binaries() (initdb, postgres string, err error) {
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return initdb, postgres, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- { // the newest version: the glob sorts them
		a, b := filepath.Join(dirs[i], "initdb"), filepath.Join(dirs[i], "postgres")
		if _, err := os.Stat(a); err == nil {
			if _, err := os.Stat(b); err == nil {
				return a, b, nil
			}
		}
	}
	return "", "", fmt.Errorf("PostgreSQL's initdb and postgres are not installed (on PATH or in /usr/lib/postgresql/*/bin)")
}
