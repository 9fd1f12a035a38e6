package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// OwnServer is a PostgreSQL of a test's own: a cluster made by initdb in a temporary directory, served by postgres
// on a free loopback port (trust auth), stopped and deleted when the test ends. Tests that claim several
// processes share one database use it, so they need no server started for them.
//
// The postgres process runs under a small sh watchdog whose standard input is a pipe from the test binary: when
// the pipe closes (the test's cleanup closes it, and the kernel does when the test binary exits in any way,
// kill -9 included) the watchdog stops postgres (SIGINT, a fast shutdown) and deletes the directory, so no
// server or data directory outlives the tests that started it.
type OwnServer struct {
	port   int
	dir    string        // the cluster's and the socket's; the watchdog deletes it
	stdin  *os.File      // the watchdog's standard input; closing it stops the server
	cmd    *exec.Cmd     // the watchdog
	exited chan struct{} // closed when the watchdog has exited
	log    *tailBuffer   // postgres's output, for messages
}

// errNoBinaries is returned by launch when initdb or postgres is not installed.
var errNoBinaries = errors.New("PostgreSQL's initdb and postgres are not installed (on PATH or in /usr/lib/postgresql/*/bin)")

// StartServer starts a PostgreSQL server, skipping the test when initdb or postgres is not installed (failing
// under CI, whose .ci/run installs Debian's postgresql). PostgreSQL refuses to run as root, so under root the
// server runs as the postgres user the package creates.
func StartServer(t testing.TB) *OwnServer {
	t.Helper()
	s, err := launch()
	if errors.Is(err, errNoBinaries) {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skipf("%v (apt-get install postgresql)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// watchdog runs postgres ($1 -D $2 -p $3) with its socket and data under $4, and when its standard input closes
// stops it and deletes $4. Its background half reads the saved standard input (an asynchronous list's own is
// /dev/null); postgres's output is the script's.
const watchdog = `exec 3<&0
"$1" -D "$2" -p "$3" -k "$4" -c listen_addresses=127.0.0.1 </dev/null &
pid=$!
{ cat <&3 >/dev/null; kill -INT "$pid"; } >/dev/null 2>&1 &
exec 3<&-
wait "$pid"
st=$?
rm -rf "$4"
exit $st
`

// launch makes a cluster with initdb and starts postgres on it under the watchdog, and waits until it answers.
func launch() (*OwnServer, error) {
	initdb, postgres, err := binaries()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*OwnServer, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fail(fmt.Errorf("PostgreSQL does not run as root and there is no postgres user to run it as: %w", err))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return fail(err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %w\n%s", err, out))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	s := &OwnServer{port: l.Addr().(*net.TCPAddr).Port, dir: dir, exited: make(chan struct{}), log: &tailBuffer{max: 64 << 10}}
	l.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	s.stdin = w
	s.cmd = exec.Command("sh", "-c", watchdog, "pgtest-watchdog", postgres, data, strconv.Itoa(s.port), dir)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = r, s.log, s.log
	if err := s.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fail(err)
	}
	r.Close() // the watchdog holds it now
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	db, err := sql.Open("pgx", s.DSN())
	if err != nil {
		s.stop()
		return nil, err
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			s.stop()
			return nil, fmt.Errorf("postgres exited before it answered: %s", s.log)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("postgres on 127.0.0.1:%d did not answer in 30 s: %v\n%s", s.port, err, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop closes the watchdog's input, which stops postgres and deletes the directory, and waits for it.
func (s *OwnServer) stop() {
	s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	if len(b.b) > b.max {
		b.b = append(b.b[:0], b.b[len(b.b)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
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
	return "", "", errNoBinaries
}
