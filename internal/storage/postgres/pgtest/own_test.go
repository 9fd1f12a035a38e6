package pgtest

import (
	"bufio"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needBinaries(t *testing.T) {
	t.Helper()
	if _, _, err := binaries(); errors.Is(err, errNoBinaries) {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skipf("%v (apt-get install postgresql)", err)
	}
}

// TestOwnServerForTheBinary: with JUNCTION_TEST_POSTGRES=own, Schema puts each test's schema on the one server
// the binary starts for itself (the same server for every test), where a table can be made and read.
func TestOwnServerForTheBinary(t *testing.T) {
	needBinaries(t)
	t.Setenv("JUNCTION_TEST_POSTGRES", OwnEnv)
	if Server() != "" {
		t.Fatalf("Server() = %q with JUNCTION_TEST_POSTGRES=own", Server())
	}
	a, b := Schema(t), Schema(t)
	own, err := ownServer()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, own+"&search_path=") || !strings.HasPrefix(b, own+"&search_path=") || a == b {
		t.Fatalf("schemas %s and %s, want two on the binary's own server %s", a, b, own)
	}
	if again, _ := ownServer(); again != own {
		t.Fatalf("a second server %s started (first %s)", again, own)
	}
	db, err := sql.Open("pgx", a)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE kept (v text); INSERT INTO kept VALUES ('written')`); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := db.QueryRow(`SELECT v FROM kept`).Scan(&v); err != nil || v != "written" {
		t.Fatalf("read back %q, %v", v, err)
	}
}

// TestOwnServerEndsWithTheBinary: a test binary killed with SIGKILL (no cleanup runs) leaves no server behind:
// the watchdog sees its input close, stops postgres and deletes the directory.
func TestOwnServerEndsWithTheBinary(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		dsn, err := ownServer()
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(dsn, binaryServer.s.dir)
		select {} // until killed
	}
	needBinaries(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, "-test.run=^TestOwnServerEndsWithTheBinary$")
	child.Env = append(os.Environ(), "PGTEST_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("the child said %q (%v)", line, err)
	}
	dsn, dir := f[0], f[1]
	if db, err := ping(dsn); err != nil {
		t.Fatalf("the child's server does not answer: %v", err)
	} else {
		db.Close()
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		db, err := ping(dsn)
		if db != nil {
			db.Close()
		}
		_, statErr := os.Stat(dir)
		if err != nil && errors.Is(statErr, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the test binary was killed: server answers %v, directory %s stat %v", err == nil, dir, statErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
