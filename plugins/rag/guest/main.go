// Command guest is the rag plugin as a WebAssembly module (build with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; make plugins does).
package main

import "github.com/junction-router/junction/plugins/rag"

func init() { rag.Register() }

func main() {}
