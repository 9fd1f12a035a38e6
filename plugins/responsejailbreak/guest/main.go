// Command guest is the response_jailbreak plugin as a WebAssembly module
// (build with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; make
// plugins does).
package main

import (
	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/plugins/responsejailbreak"
)

func init() {
	guest.TuneGC(guest.DefaultGCPercent)
	responsejailbreak.Register()
}

func main() {}
