package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction"
	"github.com/junction-router/junction/internal/docstest"
	"github.com/junction-router/junction/internal/inference/ortlib"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/worker"
	"github.com/junction-router/junction/recipes"
)

// TestDocs runs the examples of README.md and docs/*.md as their docs-test
// annotations say (the convention is internal/docstest's; docs/architecture.md
// lists the kinds): configuration blocks go through `junction config
// validate`, fragments are merged into the configuration they belong to and
// validated, and shell blocks run — `junction …` through this binary's run
// function, `junction serve` as an in-process server on free ports, curl
// against that server. A failure names the document and the line of the
// block's opening fence.
//
// Outcomes that depend on the default ONNX models (annotated onnx) run only
// where ONNX Runtime is found (and fail without it under
// JUNCTION_REQUIRE_ORT=1); every other route example runs twice, with the
// models this machine has and with the lexical fallbacks, because a reader
// without ONNX Runtime gets the same answer.
func TestDocs(t *testing.T) {
	const root = "../.."
	files, err := docstest.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) { // "docs/x.md" would be two levels of -run
			blocks, err := docstest.ParseFile(filepath.Join(root, name), name)
			if err != nil {
				t.Fatal(err)
			}
			d := &docRun{root: root, dir: t.TempDir(), files: map[string]string{}}
			for _, b := range blocks {
				t.Run("line"+strconv.Itoa(b.Line), func(t *testing.T) { d.block(t, b) })
			}
		})
	}
}

// docRun is one document's state: the configuration files its blocks named.
type docRun struct {
	root  string
	dir   string
	files map[string]string // name in the document → path written
}

func (d *docRun) block(t *testing.T, b docstest.Block) {
	a := b.Ann
	switch a.Kind {
	case "":
		return // a listing (go, c, untagged) nobody annotated
	case "skip":
		r, _ := a.Get("reason")
		t.Skipf("%s: %s", b.Pos(), r)
	case "json":
		if !json.Valid([]byte(b.Text)) {
			var v any
			t.Errorf("%s: not JSON: %v", b.Pos(), json.Unmarshal([]byte(b.Text), &v))
		}
	case "config":
		name, ok := a.Get("as")
		if !ok {
			name = fmt.Sprintf("line%d.yaml", b.Line)
		}
		d.validate(t, b, d.write(t, name, []byte(b.Text)))
	case "fragment":
		at, ok := a.Get("at")
		if !ok {
			t.Fatalf("%s: a fragment needs at=POINTER (where it goes in the configuration; \"\" for top-level sections)", b.Pos())
		}
		base := recipes.BuiltinYAML()
		if into, ok := a.Get("into"); ok {
			p, ok := d.files[into]
			if !ok {
				t.Fatalf("%s: into=%s names no earlier config block (as=%s; run the whole document, its blocks build on each other)", b.Pos(), into, into)
			}
			var err error
			if base, err = os.ReadFile(p); err != nil {
				t.Fatal(err)
			}
		}
		merged, err := docstest.Merge(base, []byte(b.Text), at)
		if err != nil {
			t.Fatalf("%s: %v", b.Pos(), err)
		}
		name, ok := a.Get("as")
		if !ok {
			name = fmt.Sprintf("line%d.json", b.Line)
		}
		d.validate(t, b, d.write(t, name, merged))
	case "worker-models":
		if _, err := worker.ReadModelsFile(d.write(t, fmt.Sprintf("line%d.yaml", b.Line), []byte(b.Text))); err != nil {
			t.Errorf("%s: %v", b.Pos(), err)
		}
	case "run":
		d.run(t, b)
	default:
		t.Fatalf("%s: TestDocs does not run kind %q", b.Pos(), a.Kind)
	}
}

func (d *docRun) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(d.dir, filepath.Base(name))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d.files[name] = p
	return p
}

// validate runs `junction config validate` on path.
func (d *docRun) validate(t *testing.T, b docstest.Block, path string) {
	t.Helper()
	code, out, errOut := runCLI(t, "config", "validate", path)
	if code != 0 || !strings.Contains(out, ": valid (") {
		t.Errorf("%s: the configuration is not valid (exit %d):\n%s%s", b.Pos(), code, out, errOut)
	}
}

// run runs a shell block's commands in order. Checks, from the annotation:
// route=D[,D…] the decision of each `junction route` (one name: all of them;
// "blocked" for a request a signal blocks), exit=N the exit status of the
// junction commands (default 0), builtin-as=FILE the built-in configuration
// written as FILE for the commands to name, contains=TEXT (repeatable) in what the
// commands printed, server=builtin|FILE a server the curl commands talk to,
// worker a `junction worker` serving the default models on a free port for
// the curl commands (it needs ONNX Runtime: give onnx too), onnx when the
// outcome needs the default ONNX models.
func (d *docRun) run(t *testing.T, b docstest.Block) {
	a := b.Ann
	onnx := a.Has("onnx")
	if onnx {
		if _, err := ortlib.Find(""); err != nil {
			if os.Getenv(orttest.EnvRequire) != "" {
				t.Fatalf("%s: the block needs ONNX Runtime (annotated onnx) and %s is set: %v", b.Pos(), orttest.EnvRequire, err)
			}
			t.Skipf("%s: skipped, the block needs ONNX Runtime (annotated onnx): %v", b.Pos(), err)
		}
	}
	cmds, err := docstest.Commands(b.Text)
	if err != nil {
		t.Fatalf("%s: %v", b.Pos(), err)
	}
	wantExit := 0
	if v, ok := a.Get("exit"); ok {
		if wantExit, err = strconv.Atoi(v); err != nil {
			t.Fatalf("%s: exit=%q is not a number", b.Pos(), v)
		}
	}
	var routes []string
	if v, ok := a.Get("route"); ok {
		routes = strings.Split(v, ",")
	}
	if name, ok := a.Get("builtin-as"); ok {
		d.write(t, name, recipes.BuiltinYAML())
	}
	var srv *docServer
	if v, ok := a.Get("server"); ok {
		srv = d.serve(t, b, v, nil)
	}
	if a.Has("worker") {
		srv = startWorker(t, b)
	}
	var printed strings.Builder
	nRoute := 0
	for _, c := range cmds {
		pos := fmt.Sprintf("%s:%d", b.File, b.Line+c.Line)
		for k, v := range c.Env {
			t.Setenv(k, v)
		}
		switch c.Words[0] {
		case "junction", "bin/junction":
			if c.Shell {
				t.Fatalf("%s: %q uses the shell; TestDocs runs junction commands as plain words", pos, c.Raw)
			}
			args := d.args(c.Words[1:])
			if len(args) > 0 && args[0] == "serve" {
				srv = d.serve(t, b, "", args[1:])
				continue
			}
			code, out, errOut := runCLI(t, args...)
			printed.WriteString(out)
			if code != wantExit {
				t.Errorf("%s: `%s` exited %d, want %d:\n%s%s", pos, c.Raw, code, wantExit, out, errOut)
				continue
			}
			if len(args) == 0 || args[0] != "route" || routes == nil {
				continue
			}
			want := routes[0]
			if len(routes) > 1 {
				if nRoute >= len(routes) {
					t.Fatalf("%s: route= names %d decisions and the block has more route commands", b.Pos(), len(routes))
				}
				want = routes[nRoute]
			}
			nRoute++
			if got := routedTo(out, slices.Contains(args, "--json")); got != want {
				t.Errorf("%s: `%s` chose %q, the document says %q:\n%s", pos, c.Raw, got, want, out)
			}
			if onnx {
				continue
			}
			// The same answer without ONNX Runtime: the lexical fallbacks.
			lex := append([]string{"route", "--signal-models", "lexical"}, args[1:]...)
			code, out, errOut = runCLI(t, lex...)
			if got := routedTo(out, slices.Contains(args, "--json")); code != 0 || got != want {
				t.Errorf("%s: `%s` with --signal-models lexical (a machine without ONNX Runtime) chose %q (exit %d), the document says %q; annotate the block onnx if only the ONNX models answer so:\n%s%s", pos, c.Raw, got, code, want, out, errOut)
			}
		case "curl", "open":
			if srv == nil {
				t.Fatalf("%s: %q needs a server: give the block server=builtin (or a config name), or start one with `junction serve` earlier in it", pos, c.Words[0])
			}
			out := srv.curl(t, pos, c)
			printed.WriteString(out)
		default:
			t.Fatalf("%s: TestDocs cannot run %q; annotate the block skip reason=\"…\" or teach TestDocs the command", pos, c.Words[0])
		}
	}
	if len(routes) > 1 && nRoute != len(routes) {
		t.Errorf("%s: route= names %d decisions, the block has %d route commands", b.Pos(), len(routes), nRoute)
	}
	for _, want := range a.Args["contains"] {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("%s: the commands did not print %q; they printed:\n%s", b.Pos(), want, printed.String())
		}
	}
}

// args replaces the names of files the document wrote with their paths.
func (d *docRun) args(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if p, ok := d.files[w]; ok {
			w = p
		}
		out[i] = w
	}
	return out
}

// routedTo reads the decision from `junction route`'s output.
func routedTo(out string, asJSON bool) string {
	if asJSON {
		var res struct {
			Decision string
			Block    *struct{ Code string }
		}
		if json.Unmarshal([]byte(out), &res) != nil {
			return ""
		}
		if res.Block != nil {
			return "blocked"
		}
		return res.Decision
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "blocked":
			return "blocked"
		case len(f) >= 2 && f[0] == "decision":
			if f[1] == "none" {
				return ""
			}
			return f[1]
		}
	}
	return ""
}

// docServer is a `junction serve` started in-process on free ports.
type docServer struct {
	srv   *junction.Server
	ports map[string]string // the port the document uses → the bound address
	log   *syncBuffer
}

// serve starts the server of config ("builtin", a file the document wrote,
// or `junction serve` flags in args) and stops it when the test ends.
func (d *docRun) serve(t *testing.T, b docstest.Block, config string, args []string) *docServer {
	t.Helper()
	fs := newFlags("serve", io.Discard)
	cfg := fs.String("config", "", "")
	sig := fs.String("signal-models", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		t.Fatalf("%s: TestDocs serves --config and --signal-models only, not %q", b.Pos(), args)
	}
	if config != "" && config != "builtin" {
		p, ok := d.files[config]
		if !ok {
			t.Fatalf("%s: server=%s names no earlier config block (as=%s)", b.Pos(), config, config)
		}
		*cfg = p
	}
	var doc *recipes.Document
	var err error
	if *cfg == "" {
		doc, err = recipes.Builtin()
	} else {
		doc, _, err = recipes.LoadFile(*cfg)
	}
	if err != nil {
		t.Fatalf("%s: %v", b.Pos(), err)
	}
	addrs := map[string]string{}
	for _, l := range doc.Listeners {
		addrs[l.Name] = "127.0.0.1:0"
	}
	log := &syncBuffer{}
	srv, err := junction.New(junction.Options{
		ConfigPath: *cfg, ListenerAddrs: addrs, ExtprocAddr: "127.0.0.1:0",
		ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		SignalModels: *sig, DataDir: t.TempDir(), PluginCacheDir: "off",
		Logger: slog.New(slog.NewTextHandler(log, nil)),
	})
	if err != nil {
		t.Fatalf("%s: junction serve: %v", b.Pos(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		sctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = srv.Shutdown(sctx)
		cancel()
		<-done
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("%s: junction serve stopped: %v\n%s", b.Pos(), err, log)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: junction serve not ready after 60s\n%s", b.Pos(), log)
	}
	s := &docServer{srv: srv, log: log, ports: map[string]string{"8080": srv.ManagementAddr()}}
	if len(doc.Listeners) > 0 {
		s.ports[strconv.Itoa(doc.Listeners[0].Port)] = srv.GatewayAddr()
	}
	return s
}

// startWorker runs `junction worker` (the built-in default models) through
// the CLI on a free port until the test ends; port 8100 of the document
// names it.
func startWorker(t *testing.T, b docstest.Block) *docServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the worker takes the port; nothing else on this machine asks for a fixed one in between
	port := addr[strings.LastIndex(addr, ":")+1:]
	log := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"worker", "--port", port}, log, log) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("%s: junction worker exited %d:\n%s", b.Pos(), code, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: junction worker not ready after 60s:\n%s", b.Pos(), log)
		}
	}
	return &docServer{ports: map[string]string{"8100": addr}, log: log}
}

var hostPort = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):([0-9]+)`)

// curl runs a curl command through sh against the in-process server, its
// host:port replaced by the bound address; `open URL` (a browser) is a GET
// that must answer 200.
func (s *docServer) curl(t *testing.T, pos string, c docstest.Command) string {
	t.Helper()
	var unknown string
	raw := hostPort.ReplaceAllStringFunc(c.Raw, func(m string) string {
		port := m[strings.LastIndex(m, ":")+1:]
		if a, ok := s.ports[port]; ok {
			return a
		}
		unknown = m
		return m
	})
	if unknown != "" {
		t.Fatalf("%s: %s is neither the gateway's first listener nor the management API", pos, unknown)
	}
	if c.Words[0] == "open" {
		u := hostPort.ReplaceAllStringFunc(c.Words[1], func(m string) string { return s.ports[m[strings.LastIndex(m, ":")+1:]] })
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("%s: %v", pos, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET %s: %s", pos, c.Words[1], resp.Status)
		}
		return ""
	}
	for _, tool := range []string{"curl", "jq"} {
		if strings.Contains(" "+c.Raw, " "+tool+" ") || strings.HasPrefix(c.Raw, tool+" ") {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s: %s is not installed here", pos, tool)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// bash when there is one, so that a failure anywhere in a pipe fails the
	// command; sh runs the rest.
	shell, script := "bash", "set -eo pipefail\n"+raw
	if _, err := exec.LookPath(shell); err != nil {
		shell, script = "sh", "set -e\n"+raw
	}
	cmd := exec.CommandContext(ctx, shell, "-c", script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Errorf("%s: `%s`: %v\n%s%s\nserver log:\n%s", pos, c.Raw, err, out.String(), errb.String(), s.log)
	}
	return out.String()
}

// syncBuffer is a log destination the server writes from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
