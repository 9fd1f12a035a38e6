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
	"sort"
	"strings"

	"github.com/junction-router/junction/hostapi/plugintest"
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
	c := plugintest.Case{Mode: *mode, Decision: *decision, Model: *model, Headers: map[string]string{}, Signals: signals}
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
	h, err := plugintest.NewHarness(ctx, stores)
	if err != nil {
		return err
	}
	defer h.Close()
	run, err := h.Run(ctx, wasmBytes, c)
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
	h, err := plugintest.NewHarness(ctx, stores)
	if err != nil {
		return err
	}
	defer h.Close()
	failed := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var f plugintest.FixtureFile
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if f.Name == "" {
			f.Name = strings.TrimSuffix(filepath.Base(file), ".json")
		}
		problems := plugintest.CheckFixture(ctx, h, wasmBytes, &f)
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
