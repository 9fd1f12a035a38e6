// Command junction is Junction's one binary: `serve` runs the router, `route`
// explains a routing decision without calling a backend, `config` validates,
// hashes and prints the schema of configuration documents, and `demo-backend`
// runs the demo OpenAI-compatible responder.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `junction — a routing engine for LLM chat traffic

Usage:
  junction serve [--config FILE]            serve the gateway, the Envoy ext_proc hook and the management API
                                            (./config.yaml when present, else the built-in demo recipe)
  junction serve [--config FILE] MODEL [-e native] [-dp N] [--platform cpu|cuda] [--device-ids 0,1]
                                            also serve MODEL from managed workers as deployment "default";
                                            -e native publishes it on the native API (8899); see docs/worker.md
  junction route [--config FILE] PROMPT     print the routing decision for PROMPT; calls no backend
  junction config validate FILE...          check configuration documents; prints every error with its path
  junction config hash FILE                 print a document's canonical hash
  junction config schema                    print the configuration JSON Schema
  junction config builtin                   print the built-in configuration
  junction demo-backend [--listen ADDR]     run the demo OpenAI-compatible backend
  junction worker [flags] [MODEL...]        serve task models over HTTP (127.0.0.1:8100); see docs/worker.md
  junction worker list-models|list-plugins|devices
                                            the built-in models, family plugins, usable devices (JSON)
  junction plugin new|build|inspect|test|preview
                                            write, build and try WebAssembly plugins ('junction plugin help')
  junction operator convert|export|crd|run  the Kubernetes operator (runs junction-operator; see docs/operator.md)
  junction version

Run 'junction COMMAND -h' for a command's flags.
`

// version is set by the linker in release builds.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks errors already explained to the user by a flag set.
var errUsage = errors.New("usage")

// run executes one command; ctx ends long-running ones (serve, demo-backend).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serveCmd(ctx, args[1:], stderr)
	case "route":
		err = routeCmd(args[1:], stdout, stderr)
	case "config":
		err = configCmd(args[1:], stdout, stderr)
	case "demo-backend":
		err = demoCmd(ctx, args[1:], stderr)
	case "worker":
		err = workerCmd(ctx, args[1:], stdout, stderr)
	case "plugin":
		err = pluginCmd(ctx, args[1:], stdout, stderr)
	case "operator":
		err = operatorCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "junction", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "junction: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	default:
		fmt.Fprintln(stderr, "junction:", err)
		return 1
	}
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("junction "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
