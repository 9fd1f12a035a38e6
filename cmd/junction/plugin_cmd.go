package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/modbuild"
)

const pluginUsage = `junction plugin — write, build and try WebAssembly decision plugins

Usage:
  junction plugin new NAME [--dir DIR] [--module PATH] [--sdk DIR]
                                      scaffold a Go plugin project in DIR/NAME
  junction plugin build [DIR] [-o FILE]
                                      compile the plugin in DIR (default .) to a wasm module
  junction plugin inspect FILE        print a module's descriptor, imports, exports and sha256
  junction plugin test [DIR|FILE] [--fixtures DIR]
                                      run the request fixtures (DIR/testdata/*.json) through the module
  junction plugin preview (--module FILE | --type TYPE) --config JSON|@FILE --request JSON|@FILE
                          [--mode preview|probe] [--decision NAME] [--model NAME] [--header K=V]...
                          [--signal KIND:NAME]... [--store NAME=FILE]...
                                      run one request through a plugin and print its mutations
`

// pluginCmd dispatches the plugin subcommands.
func pluginCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginUsage)
		return errUsage
	}
	switch args[0] {
	case "new":
		return pluginNewCmd(args[1:], stdout, stderr)
	case "build":
		return pluginBuildCmd(args[1:], stdout, stderr)
	case "inspect":
		return pluginInspectCmd(ctx, args[1:], stdout, stderr)
	case "test":
		return pluginTestCmd(ctx, args[1:], stdout, stderr)
	case "preview":
		return pluginPreviewCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, pluginUsage)
		return nil
	}
	fmt.Fprintf(stderr, "junction plugin: unknown command %q\n\n%s", args[0], pluginUsage)
	return errUsage
}

// parseInterleaved parses flags that may come before or after the
// positional arguments (flag stops at the first positional one).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func pluginBuildCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugin build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "the module file to write (default DIR/<directory name>.wasm)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fmt.Fprintln(stderr, "usage: junction plugin build [DIR] [-o FILE]")
		return errUsage
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	file, wasm, err := buildPlugin(dir, *out)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(wasm)
	fmt.Fprintf(stdout, "%s\t%d bytes\tsha256 %s\n", file, len(wasm), hex.EncodeToString(sum[:]))
	return nil
}

// buildPlugin compiles the Go plugin package in dir (GOOS=wasip1
// GOARCH=wasm, c-shared, reproducible flags) and writes it to out (default
// dir/<base>.wasm).
func buildPlugin(dir, out string) (string, []byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
		return "", nil, fmt.Errorf("%s has no go.mod: run junction plugin build in a plugin project (junction plugin new makes one)", dir)
	}
	wasm, err := modbuild.Build(abs, ".")
	if err != nil {
		return "", nil, err
	}
	if out == "" {
		out = filepath.Join(abs, filepath.Base(abs)+".wasm")
	}
	if err := os.WriteFile(out, wasm, 0o644); err != nil {
		return "", nil, err
	}
	return out, wasm, nil
}

func pluginInspectCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugin inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: junction plugin inspect FILE")
		return errUsage
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	info, err := plugintest.ReadWasmInfo(wasm)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	h, err := plugintest.NewHarness(ctx, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	mod, err := h.Load(wasm)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	sum := sha256.Sum256(wasm)
	out := struct {
		File       string   `json:"file"`
		Size       int      `json:"size"`
		SHA256     string   `json:"sha256"`
		Descriptor any      `json:"descriptor"`
		Imports    []string `json:"imports"`
		Exports    []string `json:"exports"`
		Response   bool     `json:"response_phase"`
	}{pos[0], len(wasm), hex.EncodeToString(sum[:]), mod.Descriptor(), info.Imports, info.Exports, mod.HasResponsePhase()}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
