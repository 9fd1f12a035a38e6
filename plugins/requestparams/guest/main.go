// Command guest is the requestparams plugin as a WebAssembly module (build with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; make plugins does).
package main

import "github.com/junction-router/junction/plugins/requestparams"

func init() { requestparams.Register() }

func main() {}
