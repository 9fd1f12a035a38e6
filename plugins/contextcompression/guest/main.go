// Command guest is the contextcompression plugin as a WebAssembly module (build with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; make plugins does).
package main

import (
	"github.com/junction-router/junction/plugins/contextcompression"
	"github.com/junction-router/junction/plugins/internal/guest"
)

func init() {
	guest.TuneGC(guest.DefaultGCPercent)
	contextcompression.Register()
}

func main() {}
