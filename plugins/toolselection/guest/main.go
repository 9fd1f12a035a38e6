// Command guest is the tool_selection plugin as a WebAssembly module (build
// with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; make plugins
// does).
package main

import (
	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/plugins/toolselection"
)

func init() {
	guest.TuneGC(guest.DefaultGCPercent)
	toolselection.Register()
}

func main() {}
