// Command guest is the hallucination plugin as a WebAssembly module (build
// with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; make plugins
// does).
package main

import (
	"github.com/junction-router/junction/plugins/hallucination"
	"github.com/junction-router/junction/plugins/internal/guest"
)

func init() {
	guest.TuneGC(guest.DefaultGCPercent)
	hallucination.Register()
}

func main() {}
