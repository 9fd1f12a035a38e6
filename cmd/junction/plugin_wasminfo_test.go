package main

import (
	"strings"
	"testing"
)

func TestReadWasmInfo(t *testing.T) {
	// A hand-assembled module: one function import, one memory import, one
	// function export.
	mod := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x04\x01\x60\x00\x00" + // type section: () -> ()
		"\x02\x1b\x02" + // import section, 2 imports
		"\x08junction\x03log\x00\x00" +
		"\x03env\x03mem\x02\x00\x01" +
		"\x03\x02\x01\x00" + // function section
		"\x07\x07\x01\x03run\x00\x01" + // export "run" = func 1
		"\x0a\x04\x01\x02\x00\x0b") // code section
	info, err := readWasmInfo(mod)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(info.Imports, ",") != "junction.log,env.mem (memory)" || strings.Join(info.Exports, ",") != "run" {
		t.Fatalf("%+v", info)
	}
	if _, err := readWasmInfo([]byte("not wasm")); err == nil {
		t.Error("garbage accepted")
	}
	if _, err := readWasmInfo(mod[:20]); err == nil {
		t.Error("a truncated module was accepted")
	}
}

func TestPluginUsage(t *testing.T) {
	if code, _, errOut := runCLI(t, "plugin"); code != 2 || !strings.Contains(errOut, "junction plugin new") {
		t.Errorf("%d %s", code, errOut)
	}
	if code, _, _ := runCLI(t, "plugin", "frobnicate"); code != 2 {
		t.Errorf("unknown subcommand: %d", code)
	}
	if code, _, _ := runCLI(t, "plugin", "inspect"); code != 2 {
		t.Errorf("inspect without a file: %d", code)
	}
	if code, _, errOut := runCLI(t, "plugin", "build", t.TempDir()); code != 1 || !strings.Contains(errOut, "no go.mod") {
		t.Errorf("build outside a project: %d %s", code, errOut)
	}
}
