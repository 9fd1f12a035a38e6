package plugintest

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
	info, err := ReadWasmInfo(mod)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(info.Imports, ",") != "junction.log,env.mem (memory)" || strings.Join(info.Exports, ",") != "run" {
		t.Fatalf("%+v", info)
	}
	if _, err := ReadWasmInfo([]byte("not wasm")); err == nil {
		t.Error("garbage accepted")
	}
	if _, err := ReadWasmInfo(mod[:20]); err == nil {
		t.Error("a truncated module was accepted")
	}
}
