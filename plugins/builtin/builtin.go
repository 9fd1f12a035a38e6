// Package builtin holds Junction's built-in decision plugins as compiled
// WebAssembly modules, embedded in the binary: system_prompt, request_params,
// header_mutation, fast_response, tools, rag, response_cache,
// context_compression, memory, tool_selection, response_jailbreak and
// hallucination. Each module is built from its guest package under
// plugins/ by `make plugins` (reproducibly: see internal/modbuild), and the
// package's tests fail when an embedded module differs from what its sources
// build to.
//
// The package is Junction's one table of built-in plugin types (Sources):
// serve, the management API, the CLI and the harnesses read it for the types,
// the module bytes (Module, Registry), the configuration checks (CheckConfig)
// and the same code compiled natively (Plugin.Native) for the plugins that
// call no host function or call them through the request (NeedsHost). Loading modules into a plugin host is the host's
// business. It must not build anything at run time, and it holds no state a
// caller can change.
package builtin

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/junction-router/junction/plugins/contextcompression"
	"github.com/junction-router/junction/plugins/fastresponse"
	"github.com/junction-router/junction/plugins/hallucination"
	"github.com/junction-router/junction/plugins/headermutation"
	"github.com/junction-router/junction/plugins/memory"
	"github.com/junction-router/junction/plugins/rag"
	"github.com/junction-router/junction/plugins/requestparams"
	"github.com/junction-router/junction/plugins/responsecache"
	"github.com/junction-router/junction/plugins/responsejailbreak"
	"github.com/junction-router/junction/plugins/systemprompt"
	"github.com/junction-router/junction/plugins/tools"
	"github.com/junction-router/junction/plugins/toolselection"
	"github.com/junction-router/junction/sdk"
)

// Plugin is one built-in plugin: its type, the guest package it is built
// from (relative to the repository root) and the embedded file.
type Plugin struct {
	Type    string `json:"type"`
	Package string `json:"package"`
	File    string `json:"file"`
	// SHA256 is the hex digest of the uncompressed module; Size its length.
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`

	// Check decodes and checks a configuration with the plugin's own code
	// (the code its guest runs), so validating a configuration compiles no
	// module.
	Check func(config []byte) error `json:"-"`
	// Native makes the plugin from a configuration, compiled natively from
	// the same package as its guest; set for the plugins that call no host
	// function (their guest and native runs cannot differ) and for those
	// that call host functions only through the request (NeedsHost), nil
	// otherwise.
	Native sdk.Factory `json:"-"`
	// NeedsHost: the native plugin calls host functions, so it runs natively
	// only with the plugin host's functions (internal/plugin/native with a
	// host: the same mode gate, limits and backends as its module gets).
	NeedsHost bool `json:"-"`
	// Blind: the plugin's request handler reads nothing of the request (its
	// configuration alone says what it does), so the native stage hands it
	// a record without the headers, messages, signals and body, and does not
	// rebuild those after an earlier plugin changed them.
	// TestBlindPluginsReadNothing (internal/plugin/native) holds the claim to
	// the code.
	Blind bool `json:"-"`
}

// Manifest lists the embedded modules and the toolchain that built them.
type Manifest struct {
	GoVersion string   `json:"go_version"`
	Flags     []string `json:"flags"`
	Plugins   []Plugin `json:"plugins"`
}

// Sources are the built-in plugins and their guest packages, in the order
// the manifest lists them.
var Sources = []Plugin{
	{Type: systemprompt.Type, Package: "plugins/systemprompt/guest", Check: check(systemprompt.ParseConfig), Native: factory(systemprompt.ParseConfig)},
	{Type: requestparams.Type, Package: "plugins/requestparams/guest", Check: check(requestparams.ParseConfig), Native: factory(requestparams.ParseConfig)},
	{Type: headermutation.Type, Package: "plugins/headermutation/guest", Check: check(headermutation.ParseConfig), Native: factory(headermutation.ParseConfig), Blind: true},
	{Type: fastresponse.Type, Package: "plugins/fastresponse/guest", Check: check(fastresponse.ParseConfig), Native: factory(fastresponse.ParseConfig), Blind: true},
	{Type: tools.Type, Package: "plugins/tools/guest", Check: check(tools.ParseConfig)},
	{Type: rag.Type, Package: "plugins/rag/guest", Check: check(rag.ParseConfig)},
	{Type: responsecache.Type, Package: "plugins/responsecache/guest", Check: check(responsecache.ParseConfig), Native: factory(responsecache.ParseConfig), NeedsHost: true},
	{Type: contextcompression.Type, Package: "plugins/contextcompression/guest", Check: check(contextcompression.ParseConfig)},
	{Type: memory.Type, Package: "plugins/memory/guest", Check: check(memory.ParseConfig)},
	// The guards and tool selection call host functions (classify, embed)
	// only through the request, so serve runs them natively over the host's
	// functions; their modules are for a --plugin-dir override and the
	// harnesses.
	{Type: toolselection.Type, Package: "plugins/toolselection/guest", Check: check(toolselection.ParseConfig), Native: factory(toolselection.ParseConfig), NeedsHost: true},
	{Type: responsejailbreak.Type, Package: "plugins/responsejailbreak/guest", Check: check(responsejailbreak.ParseConfig), Native: factory(responsejailbreak.ParseConfig), NeedsHost: true},
	{Type: hallucination.Type, Package: "plugins/hallucination/guest", Check: check(hallucination.ParseConfig), Native: factory(hallucination.ParseConfig), NeedsHost: true},
}

func check[C any](parse func([]byte) (C, error)) func([]byte) error {
	return func(b []byte) error { _, err := parse(b); return err }
}

// factory adapts a plugin's configuration parser to sdk.Factory without
// putting a typed nil inside a non-nil interface.
func factory[P sdk.Plugin](parse func([]byte) (P, error)) sdk.Factory {
	return func(b []byte) (sdk.Plugin, error) {
		p, err := parse(b)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

// Lookup returns the table's entry of typ.
func Lookup(typ string) (Plugin, bool) {
	for _, s := range Sources {
		if s.Type == typ {
			return s, true
		}
	}
	return Plugin{}, false
}

// CheckConfig checks a configuration of a built-in type with the plugin's
// own code; known is false (and err nil) for a type that is not built in.
func CheckConfig(typ string, config []byte) (known bool, err error) {
	s, ok := Lookup(typ)
	if !ok {
		return false, nil
	}
	return true, s.Check(config)
}

// FileName is the embedded file of a plugin type.
func FileName(typ string) string { return typ + ".wasm.gz" }

//go:embed modules
var files embed.FS

// ReadManifest returns the embedded manifest.
func ReadManifest() (Manifest, error) {
	raw, err := files.ReadFile("modules/manifest.json")
	if err != nil {
		return Manifest{}, fmt.Errorf("built-in plugins: no manifest (run make plugins): %w", err)
	}
	var man Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return Manifest{}, fmt.Errorf("built-in plugins: the manifest is corrupt (run make plugins): %w", err)
	}
	return man, nil
}

// Types are the built-in plugin types, sorted.
func Types() []string {
	out := make([]string, len(Sources))
	for i, s := range Sources {
		out[i] = s.Type
	}
	sort.Strings(out)
	return out
}

// Module returns the WebAssembly module of a built-in plugin type, checked
// against the manifest's digest. Each call decompresses it afresh (a module
// is loaded once per process, so keeping the bytes would only hold memory).
func Module(typ string) ([]byte, error) {
	man, err := ReadManifest()
	if err != nil {
		return nil, err
	}
	var entry *Plugin
	for i := range man.Plugins {
		if man.Plugins[i].Type == typ {
			entry = &man.Plugins[i]
		}
	}
	if entry == nil {
		return nil, fmt.Errorf("%q is not a built-in plugin type (built in: %v)", typ, Types())
	}
	gz, err := files.ReadFile("modules/" + entry.File)
	if err != nil {
		return nil, fmt.Errorf("built-in plugin %s: %w (run make plugins)", typ, err)
	}
	wasm, err := gunzip(gz)
	if err != nil {
		return nil, fmt.Errorf("built-in plugin %s: the embedded module is corrupt: %w", typ, err)
	}
	sum := sha256.Sum256(wasm)
	if hex.EncodeToString(sum[:]) != entry.SHA256 {
		return nil, fmt.Errorf("built-in plugin %s: the embedded module does not match the manifest's sha256 (run make plugins)", typ)
	}
	return wasm, nil
}

func gunzip(gz []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(r, 64<<20))
}
