// Package sdk is what a Junction plugin author imports to write a plugin in Go.
// A plugin is one type with a method per phase; the package turns it into a
// WebAssembly module that Junction's plugin host runs, handling the ABI
// (package hostapi/abi) for it: the exported functions, memory, the request
// record and the result record.
//
//	package main
//
//	import "github.com/junction-router/junction/sdk"
//
//	type greeter struct{ prompt string }
//
//	func (g *greeter) OnRequest(req *sdk.Request, res *sdk.Result) error {
//		res.InsertMessage(0, "system", g.prompt)
//		res.Detail("added a system message")
//		return nil
//	}
//
//	func init() {
//		sdk.Register(sdk.Descriptor{Type: "greeter", Version: "0.1.0", Schema: schema},
//			func(config []byte) (sdk.Plugin, error) { … decode config … })
//	}
//
//	func main() {}
//
// Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o greeter.wasm .
//
// Register must be called from an init function: a reactor's main is never
// run. The module may not use files, the network, environment variables or
// the clock (the host gives none of them); it reaches the outside only through
// the host functions wrapped here (Log, Embed, VectorSearch, CacheLookup, CacheStore,
// Classify, TokenCount, Now, Request.PIISpans for the personal data the router detected,
// Retrieve, Recall and Remember for its stored data), each of which the host may
// refuse in the request's mode (ErrDenied). The same functions are methods of
// the Request (req.Embed, req.CacheLookup, …): a plugin the router may also
// run natively (HandleHost) calls those, which reach the router's host there.
//
// This package imports hostapi/abi and the standard library only; it must
// not grow dependencies a guest would have to link.
package sdk

import (
	"errors"
	"fmt"

	"github.com/junction-router/junction/hostapi/abi"
)

// Plugin handles the request phase. A value is made per instance by the
// factory given to Register, from the binding's configuration, and is only
// ever called by one request at a time.
type Plugin interface {
	OnRequest(req *Request, res *Result) error
}

// ResponsePlugin is a Plugin that also handles the response phase (a
// successful upstream answer): it may report, store in a cache, or fail.
type ResponsePlugin interface {
	Plugin
	OnResponse(resp *Response, res *Result) error
}

// Descriptor says what the plugin is. ABIVersion and Phases are filled in by
// Register.
type Descriptor = abi.Descriptor

// Operation is one thing a plugin does, with its kind.
type Operation = abi.Operation

// Mode is live, probe or preview.
type Mode = abi.Mode

// Modes.
const (
	ModeLive    = abi.ModeLive
	ModeProbe   = abi.ModeProbe
	ModePreview = abi.ModePreview
)

// Factory makes a plugin from its configuration (JSON, "{}" when the recipe
// gives none). Its error fails every call of the binding with that message.
type Factory func(config []byte) (Plugin, error)

type registration struct {
	desc     Descriptor
	factory  Factory
	response bool
}

// The module's one registration and its instance state. A wasm instance is
// single-threaded, and each instance holds one configured plugin.
var (
	reg *registration
	//lint:ignore U1000 reached from the wasm exports (exports.go), which host builds do not call
	plugin Plugin
	//lint:ignore U1000 reached from the wasm exports (exports.go), which host builds do not call
	pluginErr error
)

// Register declares the module's plugin. Call it once, from init. response
// says whether the plugin type implements ResponsePlugin; pass a factory
// that returns the same concrete type every time.
func Register(d Descriptor, factory Factory) {
	if reg != nil {
		panic("sdk: Register called twice; a module holds one plugin")
	}
	if factory == nil {
		panic("sdk: Register needs a factory")
	}
	d.ABIVersion = abi.Version
	reg = &registration{desc: d, factory: factory}
	if len(d.Phases) == 0 {
		reg.desc.Phases = []string{abi.PhaseNameRequest}
	}
	for _, p := range reg.desc.Phases {
		if p == abi.PhaseNameResponse {
			reg.response = true
		}
	}
}

// configured returns the instance's plugin, making it on first use.
//
//lint:ignore U1000 reached from the wasm exports (exports.go), which host builds do not call
func configured() (Plugin, error) {
	if plugin != nil || pluginErr != nil {
		return plugin, pluginErr
	}
	if reg == nil {
		pluginErr = errors.New("the module registered no plugin (call sdk.Register from an init function)")
		return nil, pluginErr
	}
	cfg, err := Config()
	if err != nil {
		pluginErr = fmt.Errorf("reading the configuration: %w", err)
		return nil, pluginErr
	}
	p, err := reg.factory(cfg)
	if err != nil {
		pluginErr = fmt.Errorf("configuration: %w", err)
		return nil, pluginErr
	}
	if p == nil {
		pluginErr = errors.New("the plugin factory returned nil")
	}
	plugin = p
	return plugin, pluginErr
}
