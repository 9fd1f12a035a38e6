// Package junction is the Junction server as a library, and the plugin SDK
// the junction binary writes into new plugin projects.
//
// New, Run and Shutdown start a whole Junction from Go: the gateway
// listeners, the Envoy ext_proc hook, the management API, /metrics, the model
// deployments (managed or attached workers, signal binding, the native API),
// the plugin system and the stored data (uploaded files, vector stores and
// memories in an embedded store in Options.DataDir, with ingestion and the
// retrieval behind the rag and memory plugins), configured by Options as
// `junction serve` is by its flags (cmd/junction is those flags and nothing
// more):
//
//	srv, err := junction.New(junction.Options{ConfigPath: "config.yaml"})
//	...
//	err = srv.Run(ctx) // until ctx ends or srv.Shutdown
//
// Managed model workers are this executable run as `junction worker`: an
// embedding program that configures managed deployments must dispatch that
// subcommand as cmd/junction does, or attach workers by endpoint instead.
//
// PluginSDK carries sdk/ and hostapi/abi/, which `junction plugin new`
// writes into a new plugin project so that it builds without fetching
// anything (Junction's module is not published on a module proxy).
//
// What must not happen here: routing, protocol and plugin logic (they live
// in engine, internal/dataplane, internal/gateway, internal/extproc and
// internal/pluginsys; this package only assembles them), flag parsing, and
// process-wide state (no signal handlers, no os.Exit, no global registries:
// each Server owns its listeners, metrics registry and plugin host).
package junction

import "embed"

// PluginSDK holds the files of sdk/ and hostapi/abi/ with their
// subpackages (tests included; writers skip them), at the paths they have in
// this module.
//
//go:embed sdk hostapi/abi
var PluginSDK embed.FS
