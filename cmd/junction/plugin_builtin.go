//go:build wasmbuiltins

package main

// The built-in decision plugins, compiled to WebAssembly and embedded in the
// binary, register themselves with the plugin host; serve then runs them in
// the wasm host instead of engine/plugin's native stand-ins.
//
// Behind a build tag for now (go build -tags wasmbuiltins; make build-wasm):
// the host compiles every registered module when serve starts, about 4 s per
// module natively and 30 s under the race detector, which the serve tests
// cannot wait for. See docs/plugins-builtin.md.
import _ "github.com/junction-router/junction/plugins/builtin/register"
