// Package junction carries what the junction binary needs of its own source:
// the plugin SDK (sdk/) and the plugin ABI (hostapi/abi/), which
// `junction plugin new` writes into a new plugin project so that it builds
// without fetching anything — Junction's module is not published on a module
// proxy, and plugin authors often work outside a checkout.
//
// Everything else of Junction's public API lives in its packages: hostapi
// (the plugin host), sdk (the guest SDK), recipes (the configuration) and
// engine (routing).
package junction

import "embed"

// PluginSDK holds the files of sdk/ and hostapi/abi/ with their
// subpackages (tests included; writers skip them), at the paths they have in
// this module.
//
//go:embed sdk hostapi/abi
var PluginSDK embed.FS
