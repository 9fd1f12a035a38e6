package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi/plugintest"
)

// The set-up the tests of `junction serve` share: free ports for a
// process's three listeners, a configuration on them, and serve run as a
// separate process (this test binary, which runs main() under envRunMain,
// as managed workers do) that a test can kill with SIGKILL and start again
// on the same data directory.

// servePorts are one serve process's gateway listener, management API and
// metrics ports, free on loopback.
type servePorts struct{ gw, mgmt, metrics int }

func newServePorts(t *testing.T) servePorts {
	t.Helper()
	return servePorts{gw: freePort(t), mgmt: freePort(t), metrics: freePort(t)}
}

// writeServeConfig writes a configuration with the listener "public" on
// p.gw, body (the providers and recipes sections, top-level YAML), and
// global: with the lines of global (indented two spaces, may be empty)
// and services: with the management API and metrics on p's ports and the
// entries of services ("response_api: {enabled: true}").
func writeServeConfig(t *testing.T, p servePorts, body, global string, services ...string) string {
	t.Helper()
	if global != "" && !strings.HasSuffix(global, "\n") {
		global += "\n"
	}
	extra := ""
	for _, s := range services {
		extra += "    " + s + "\n"
	}
	return writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
%s
global:
%s  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
%s`, p.gw, strings.TrimSuffix(body, "\n"), global, p.mgmt, p.metrics, extra))
}

// waitReady waits until the management API at api says /ready: the gateway listens from then on (the
// management API answers /health earlier, while serve starts).
func waitReady(t *testing.T, api string) {
	t.Helper()
	waitFor(t, api+"/health")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(api + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("/ready never answered 200")
		}
	}
}

// storedServer is one `junction serve` process over a data directory.
type storedServer struct {
	t                 *testing.T
	cfg, data         string
	gw, mgmt, metrics string // base URLs; metrics is the /metrics URL
	cmd               *exec.Cmd
	stderr            *syncWriter
	exited            chan struct{}
}

// startServe runs junction serve on cfg (whose ports are p) and data as a
// process and waits until it is ready; it is killed when the test ends.
func startServe(t *testing.T, cfg, data string, p servePorts) *storedServer {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &storedServer{t: t, cfg: cfg, data: data, gw: fmt.Sprintf("http://127.0.0.1:%d", p.gw), mgmt: fmt.Sprintf("http://127.0.0.1:%d", p.mgmt),
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metrics), stderr: &syncWriter{}, exited: make(chan struct{})}
	s.cmd = exec.Command(exe, "serve", "--config", cfg, "--data-dir", data, "--extproc=false", "--signal-models", "lexical",
		"--log-level", "warn", "--plugin-cache-dir", plugintest.CacheDir(), "--config-watch", "0")
	s.cmd.Env = append(os.Environ(), envRunMain+"=1")
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.kill() })
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-s.exited:
			t.Fatalf("serve exited before it was ready: %s", s.stderr.String())
		default:
		}
		if resp, err := http.Get(s.mgmt + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve was not ready in 90s: %s", s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends serve with SIGTERM and waits.
func (s *storedServer) stop() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("serve did not stop on SIGTERM: %s", s.stderr.String())
	}
}

// kill ends serve with SIGKILL (kill -9) and waits.
func (s *storedServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// call sends a management API request and decodes a JSON answer into out
// (when not nil), failing the test unless the status is want.
func (s *storedServer) call(method, path string, body any, want int, out any) {
	s.t.Helper()
	var r io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case *multipartBody:
		r, ctype = bytes.NewReader(b.data), b.ctype
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.mgmt+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// multipartBody is a request body of call's in multipart form.
type multipartBody struct {
	data  []byte
	ctype string
}

// post sends a data-plane request (header: name, value pairs) and returns
// its status, headers and body.
func (s *storedServer) post(path, body string, header ...string) (int, http.Header, []byte) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.gw+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// get sends a data-plane GET and returns its status and body.
func (s *storedServer) get(path string) (int, []byte) {
	s.t.Helper()
	resp, err := http.Get(s.gw + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// ask sends a chat completion of one user message (header: name, value
// pairs) and returns its status and headers, whatever they are.
func (s *storedServer) ask(text string, header ...string) (int, http.Header) {
	s.t.Helper()
	content, _ := json.Marshal(text)
	code, h, _ := s.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":`+string(content)+`}]}`, header...)
	return code, h
}
