// Command guest is the fastresponse plugin as a WebAssembly module (build with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; make plugins does).
package main

import (
	"github.com/junction-router/junction/plugins/fastresponse"
	"github.com/junction-router/junction/plugins/internal/guest"
)

func init() {
	guest.TuneGC(guest.DefaultGCPercent)
	fastresponse.Register()
}

func main() {}
