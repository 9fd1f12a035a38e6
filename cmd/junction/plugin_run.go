package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/junction-router/junction/plugins/builtin"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// jsonArg reads a flag value that is JSON, or @FILE holding JSON.
func jsonArg(name, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	raw := []byte(v)
	if strings.HasPrefix(v, "@") {
		var err error
		if raw, err = os.ReadFile(v[1:]); err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("--%s is not valid JSON (give JSON, or @FILE)", name)
	}
	return raw, nil
}

func pluginPreviewCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugin preview", flag.ContinueOnError)
	fs.SetOutput(stderr)
	module := fs.String("module", "", "the plugin module (.wasm) to run")
	typ := fs.String("type", "", "a built-in plugin type to run instead of --module ("+strings.Join(builtin.Types(), ", ")+")")
	config := fs.String("config", "", "the plugin configuration: JSON, or @FILE")
	request := fs.String("request", "", "the chat-completion request body: JSON, or @FILE")
	mode := fs.String("mode", "preview", "preview (no backend calls) or probe (may embed and search, persists nothing)")
	decision := fs.String("decision", "preview", "the decision name the plugin sees")
	model := fs.String("model", "", "the selected model the plugin sees")
	pii := fs.String("pii", "", `the personal data routing detected: "detect" (run the router's detector), or JSON|@FILE {"spans":[{"message","start","end","type","score"}]}`)
	var headers, stores, signals stringList
	fs.Var(&headers, "header", "a request header NAME=VALUE (repeatable)")
	fs.Var(&signals, "signal", "a matched signal KIND:NAME the plugin sees, e.g. language:german (repeatable)")
	fs.Var(&stores, "store", "fill vector store NAME from FILE, one passage a line (NAME=FILE, repeatable; for probe)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if (*module == "") == (*typ == "") || *request == "" {
		fmt.Fprintln(stderr, "usage: junction plugin preview (--module FILE | --type TYPE) --config JSON|@FILE --request JSON|@FILE [--mode preview|probe]")
		return errUsage
	}
	if *mode != "preview" && *mode != "probe" {
		return fmt.Errorf("--mode %q: a preview runs in mode preview or probe, never live", *mode)
	}
	wasmBytes, err := moduleBytes(*module, *typ)
	if err != nil {
		return err
	}
	c := pluginCase{Mode: *mode, Decision: *decision, Model: *model, Headers: map[string]string{}, Signals: signals}
	if c.PII, err = parsePIIFlag(*pii); err != nil {
		return err
	}
	if c.Config, err = jsonArg("config", *config); err != nil {
		return err
	}
	if c.Body, err = jsonArg("request", *request); err != nil {
		return err
	}
	for _, hv := range headers {
		k, v, ok := strings.Cut(hv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--header %q: want NAME=VALUE", hv)
		}
		c.Headers[k] = v
	}
	h, err := newPluginHarness(ctx, stores)
	if err != nil {
		return err
	}
	defer h.close()
	run, err := h.run(ctx, wasmBytes, c)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(run)
}

func moduleBytes(file, typ string) ([]byte, error) {
	if typ != "" {
		return builtin.Module(typ)
	}
	return os.ReadFile(file)
}

// fixture is one request a plugin project's testdata holds, with what the
// plugin must do to it.
type fixture struct {
	Name     string            `json:"name"`
	Mode     string            `json:"mode"`
	Config   json.RawMessage   `json:"config"`
	Decision string            `json:"decision"`
	Model    string            `json:"model"`
	Headers  map[string]string `json:"headers"`
	Signals  []string          `json:"signals"`
	PII      *piiFixture       `json:"pii"`
	Request  json.RawMessage   `json:"request"`
	Expect   struct {
		Status            string              `json:"status"`
		DetailContains    string              `json:"detail_contains"`
		Request           json.RawMessage     `json:"request"`
		RequestContains   []string            `json:"request_contains"`
		RequestLacks      []string            `json:"request_lacks"`
		Headers           map[string][]string `json:"headers"`
		ImmediateContains string              `json:"immediate_contains"`
		BackendCalls      *int                `json:"backend_calls"`
		Values            map[string]string   `json:"values"`
	} `json:"expect"`
}

func pluginTestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugin test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fixtures := fs.String("fixtures", "", "the directory of request fixtures (default DIR/testdata)")
	var stores stringList
	fs.Var(&stores, "store", "fill vector store NAME from FILE (NAME=FILE, repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "usage: junction plugin test [DIR|FILE.wasm] [--fixtures DIR]")
		return errUsage
	}
	target := "."
	if len(pos) == 1 {
		target = pos[0]
	}
	var wasmBytes []byte
	if st, err := os.Stat(target); err == nil && st.IsDir() {
		if *fixtures == "" {
			*fixtures = filepath.Join(target, "testdata")
		}
		out, err := os.MkdirTemp("", "junction-plugin-test-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(out)
		if _, wasmBytes, err = buildPlugin(target, filepath.Join(out, "plugin.wasm")); err != nil {
			return err
		}
	} else {
		if wasmBytes, err = os.ReadFile(target); err != nil {
			return err
		}
		if *fixtures == "" {
			return errors.New("testing a module file needs --fixtures DIR")
		}
	}
	files, err := filepath.Glob(filepath.Join(*fixtures, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no fixtures (*.json) in %s", *fixtures)
	}
	sort.Strings(files)
	h, err := newPluginHarness(ctx, stores)
	if err != nil {
		return err
	}
	defer h.close()
	failed := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var f fixture
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if f.Name == "" {
			f.Name = strings.TrimSuffix(filepath.Base(file), ".json")
		}
		problems := checkFixture(ctx, h, wasmBytes, &f)
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "ok    %s\n", f.Name)
			continue
		}
		failed++
		fmt.Fprintf(stdout, "FAIL  %s\n", f.Name)
		for _, p := range problems {
			fmt.Fprintf(stdout, "      %s\n", p)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d fixtures failed", failed, len(files))
	}
	fmt.Fprintf(stdout, "PASS  %d fixtures\n", len(files))
	return nil
}

func checkFixture(ctx context.Context, h *pluginHarness, wasmBytes []byte, f *fixture) []string {
	run, err := h.run(ctx, wasmBytes, pluginCase{Config: f.Config, Body: f.Request, Mode: f.Mode, Decision: f.Decision, Model: f.Model, Headers: f.Headers, Signals: f.Signals, PII: f.PII})
	if err != nil {
		return []string{err.Error()}
	}
	var p []string
	e := f.Expect
	want := e.Status
	if want == "" {
		want = "applied"
	}
	if run.Status != want {
		p = append(p, fmt.Sprintf("status %s, want %s (%s%s)", run.Status, want, run.Detail, run.Error))
	}
	if e.DetailContains != "" && !strings.Contains(run.Detail, e.DetailContains) {
		p = append(p, fmt.Sprintf("detail %q lacks %q", run.Detail, e.DetailContains))
	}
	if e.Request != nil && canonicalJSON(run.Request) != canonicalJSON(e.Request) {
		p = append(p, fmt.Sprintf("request after the plugin:\n        %s\n      want\n        %s", canonicalJSON(run.Request), canonicalJSON(e.Request)))
	}
	for _, s := range e.RequestContains {
		if !strings.Contains(string(run.Request), s) {
			p = append(p, fmt.Sprintf("request after the plugin lacks %q: %s", s, run.Request))
		}
	}
	for _, s := range e.RequestLacks {
		if strings.Contains(string(run.Request), s) {
			p = append(p, fmt.Sprintf("request after the plugin still holds %q", s))
		}
	}
	for k, v := range e.Headers {
		if got := run.Headers.Values(k); !reflect.DeepEqual(got, v) && !(len(got) == 0 && len(v) == 0) {
			p = append(p, fmt.Sprintf("header %s = %q, want %q", k, got, v))
		}
	}
	if e.ImmediateContains != "" && (run.Immediate == nil || !strings.Contains(run.Immediate.Content, e.ImmediateContains)) {
		p = append(p, fmt.Sprintf("no immediate answer containing %q (%+v)", e.ImmediateContains, run.Immediate))
	}
	if e.BackendCalls != nil && run.BackendCalls != *e.BackendCalls {
		p = append(p, fmt.Sprintf("backend_calls %d, want %d", run.BackendCalls, *e.BackendCalls))
	}
	for k, v := range e.Values {
		if run.Values[k] != v {
			p = append(p, fmt.Sprintf("value %s = %q, want %q", k, run.Values[k], v))
		}
	}
	return p
}

func canonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
