// Package builtin holds Junction's built-in decision plugins as compiled
// WebAssembly modules, embedded in the binary: system_prompt, request_params,
// header_mutation, fast_response, tools, rag, response_cache and
// context_compression. Each module is built from its guest package under
// plugins/ by `make plugins` (reproducibly: see internal/modbuild), and the
// package's tests fail when an embedded module differs from what its sources
// build to.
//
// The package hands out module bytes and their manifest, and Register adds
// them to a host registry; importing plugins/builtin/register does that for
// the binary's registry. Loading them into a plugin host is the host's
// business. It must not build anything at run time.
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
	"sync"
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
	{Type: "system_prompt", Package: "plugins/systemprompt/guest"},
	{Type: "request_params", Package: "plugins/requestparams/guest"},
	{Type: "header_mutation", Package: "plugins/headermutation/guest"},
	{Type: "fast_response", Package: "plugins/fastresponse/guest"},
	{Type: "tools", Package: "plugins/tools/guest"},
	{Type: "rag", Package: "plugins/rag/guest"},
	{Type: "response_cache", Package: "plugins/responsecache/guest"},
	{Type: "context_compression", Package: "plugins/contextcompression/guest"},
}

// FileName is the embedded file of a plugin type.
func FileName(typ string) string { return typ + ".wasm.gz" }

//go:embed modules
var files embed.FS

var (
	manifestOnce sync.Once
	manifest     Manifest
	manifestErr  error

	mu      sync.Mutex
	modules = map[string][]byte{}
)

// ReadManifest returns the embedded manifest.
func ReadManifest() (Manifest, error) {
	manifestOnce.Do(func() {
		raw, err := files.ReadFile("modules/manifest.json")
		if err != nil {
			manifestErr = fmt.Errorf("built-in plugins: no manifest (run make plugins): %w", err)
			return
		}
		manifestErr = json.Unmarshal(raw, &manifest)
	})
	return manifest, manifestErr
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
// against the manifest's digest. The bytes are shared: do not modify them.
func Module(typ string) ([]byte, error) {
	mu.Lock()
	defer mu.Unlock()
	if m, ok := modules[typ]; ok {
		return m, nil
	}
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
	modules[typ] = wasm
	return wasm, nil
}

func gunzip(gz []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(r, 64<<20))
}
