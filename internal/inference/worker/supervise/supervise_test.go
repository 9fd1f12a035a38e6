package supervise_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/ortlib"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/synthetic"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
)

// buildFlags are extra `go build` flags for the junction binary.
var buildFlags []string

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildJunction compiles the real junction binary once for the tests.
func buildJunction(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "junction-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "junction")
		args := append(append([]string{"build"}, buildFlags...), "-o", binPath, "github.com/junction-router/junction/cmd/junction")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestSupervisedWorkerRestartsAfterKill(t *testing.T) {
	lib := orttest.Library(t)
	bin := buildJunction(t)
	model := filepath.Join(t.TempDir(), "guard")
	if _, err := synthetic.Write(model, synthetic.Spec{Task: synthetic.SequenceClassification, Labels: []string{"benign", "jailbreak"}, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	w, err := supervise.Start(supervise.Options{
		Command: []string{bin, "worker"}, Args: []string{model, "--threads", "1"},
		Env:        []string{ortlib.EnvLibrary + "=" + lib},
		MinBackoff: 50 * time.Millisecond, HealthEvery: 50 * time.Millisecond, ReadyTimeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx := context.Background()
	if err := w.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Dir(w.Socket()))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory mode %v (%v); want 0700", st.Mode().Perm(), err)
	}
	classify := func() int {
		resp, err := w.Client().Post(w.BaseURL()+"/v1/classify", "application/json", strings.NewReader(`{"input":"hello world"}`))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := classify(); code != http.StatusOK {
		t.Fatalf("classify over the socket: %d", code)
	}
	if _, err := supervise.Attach(ctx, "unix:"+w.Socket()); err != nil {
		t.Fatalf("attach by address: %v", err)
	}

	first := w.PID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for w.Restarts() < 1 || w.PID() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the killed worker was not restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := w.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if w.PID() == first || classify() != http.StatusOK {
		t.Fatalf("after restart: pid %d (was %d)", w.PID(), first)
	}
	dir := filepath.Dir(w.Socket())
	pid := w.PID()
	w.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s behind", dir)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("worker %d still runs after Stop", pid)
	}
}

func TestWorkerWhoseModelsAllFailIsRestarted(t *testing.T) {
	lib := orttest.Library(t)
	bin := buildJunction(t)
	w, err := supervise.Start(supervise.Options{
		Command: []string{bin, "worker"}, Args: []string{filepath.Join(t.TempDir(), "missing-model")},
		Env:        []string{ortlib.EnvLibrary + "=" + lib},
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, HealthEvery: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.Now().Add(60 * time.Second)
	for w.Restarts() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("a worker whose every model failed was not restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRestartBackoffDoublesUpToTheMaximum(t *testing.T) {
	// A command that exits at once: restarts wait 40, 80, 160, 160, ... ms.
	w, err := supervise.Start(supervise.Options{
		Command:    []string{"/bin/sh", "-c", "exit 3", "sh"},
		MinBackoff: 40 * time.Millisecond, MaxBackoff: 160 * time.Millisecond, HealthEvery: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1000 * time.Millisecond)
	w.Stop()
	// 40+80+160+160+160+160 = 760 ms → about 6 restarts in a second; without
	// doubling there would be about 25, without a cap about 4.
	if n := w.Restarts(); n < 4 || n > 8 {
		t.Fatalf("%d restarts in 1s; want 4 to 8 with backoff 40ms doubling to 160ms", n)
	}
}

func TestAttachByTCPAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health/live" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":"alive","api_version":"v1"}`))
	}))
	defer srv.Close()
	for _, addr := range []string{srv.URL, strings.TrimPrefix(srv.URL, "http://")} {
		r, err := supervise.Attach(context.Background(), addr)
		if err != nil || r.BaseURL() != srv.URL {
			t.Fatalf("attach %s: %v", addr, err)
		}
	}
}

func TestAttachRefusesADeadAddress(t *testing.T) {
	if _, err := supervise.Attach(context.Background(), "unix:"+filepath.Join(t.TempDir(), "none.sock")); err == nil {
		t.Fatal("attached to nothing")
	}
	if _, err := supervise.Attach(context.Background(), ""); err == nil {
		t.Fatal("attached to an empty address")
	}
}
