package hostapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/tetratelabs/wazero"

	"github.com/junction-router/junction/hostapi/abi"
)

// Module is a plugin module that compiled, follows this ABI version and
// described itself. It is immutable and safe for concurrent use.
type Module struct {
	h          *Host
	wasm       []byte
	hash       string
	desc       abi.Descriptor
	schema     *jsonschema.Schema
	response   bool
	initialize bool
	// trusted: the module's code cannot be interrupted (see LoadTrusted).
	trusted bool
	// CompileTime and FirstInstantiateTime are how long Load spent compiling
	// (near zero on a cache hit) and making the first instance.
	CompileTime, FirstInstantiateTime time.Duration
}

// Load compiles wasm (once per Host and memory limit; the compilation cache
// makes a later Load of the same bytes cheap), checks its imports and exports,
// checks its ABI version, reads its descriptor and compiles its configuration
// schema. Every failure says what is wrong with the module.
func (h *Host) Load(ctx context.Context, wasm []byte) (*Module, error) {
	return h.load(ctx, wasm, false)
}

// LoadTrusted is Load for a module whose code is trusted not to loop
// forever: the router's built-in plugins, compiled into the binary. Its code
// is compiled without wazero's interruption checks (a check at every loop
// and call, which makes a Go guest several times slower), so a call cannot
// be stopped when its deadline passes: a call that returns after its
// deadline is still a deadline fault (its result is dropped and its instance
// discarded), but one that never returns is never stopped. Third-party
// modules must be loaded with Load.
func (h *Host) LoadTrusted(ctx context.Context, wasm []byte) (*Module, error) {
	return h.load(ctx, wasm, true)
}

func (h *Host) load(ctx context.Context, wasm []byte, trusted bool) (*Module, error) {
	r, err := h.runtime(ctx, runtimeKey{pages: h.cfg.Limits.MemoryPages, trusted: trusted})
	if err != nil {
		return nil, err
	}
	m := &Module{h: h, wasm: wasm, hash: moduleHash(wasm), trusted: trusted}
	start := time.Now()
	c, err := r.compile(ctx, m.hash, wasm)
	if err != nil {
		return nil, fmt.Errorf("compiling the plugin module: %w", err)
	}
	m.CompileTime = time.Since(start)
	if err := checkImports(c); err != nil {
		return nil, err
	}
	_, m.initialize = c.ExportedFunctions()[abi.ExportInitialize]
	_, m.response = c.ExportedFunctions()[abi.ExportOnResponse]

	start = time.Now()
	inst, err := m.instantiate(ctx, r.rt, c, h.cfg.Limits)
	if err != nil {
		return nil, fmt.Errorf("instantiating the plugin module: %w", err)
	}
	defer inst.close(ctx)
	m.FirstInstantiateTime = time.Since(start)

	ictx, cancel := context.WithTimeout(ctx, h.cfg.Limits.CallTimeout)
	defer cancel()
	v, err := inst.mod.ExportedFunction(abi.ExportABIVersion).Call(ictx)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", abi.ExportABIVersion, err)
	}
	if got := int32(v[0]); got != abi.Version {
		return nil, fmt.Errorf("the module speaks plugin ABI version %d, this host speaks version %d: rebuild it with a matching SDK", got, abi.Version)
	}
	raw, err := inst.callPacked(ictx, inst.exp.descriptor, h.cfg.Limits.MaxOutput)
	if err != nil {
		return nil, fmt.Errorf("reading the descriptor: %w", err)
	}
	if err := m.readDescriptor(raw); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Module) readDescriptor(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var d struct {
		abi.Descriptor
		Error string `json:"error"`
	}
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("the module's descriptor is not valid JSON: %w", err)
	}
	if d.Error != "" {
		return fmt.Errorf("the module's descriptor reports: %s", d.Error)
	}
	desc := d.Descriptor
	if desc.ABIVersion != abi.Version {
		return fmt.Errorf("the module's descriptor says ABI version %d, its junction_abi_version says %d", desc.ABIVersion, abi.Version)
	}
	if desc.Type == "" {
		return errors.New("the module's descriptor has no type")
	}
	for i, o := range desc.Operations {
		switch o.Kind {
		case abi.KindRead, abi.KindPreview, abi.KindProbe, abi.KindMutation:
		default:
			return fmt.Errorf("the module's descriptor: operations[%d] (%s) has kind %q; want read, preview, probe or mutation", i, o.Name, o.Kind)
		}
	}
	listed := false
	for _, p := range desc.Phases {
		switch p {
		case abi.PhaseNameRequest:
		case abi.PhaseNameResponse:
			if !m.response {
				return fmt.Errorf("the module's descriptor lists the response phase but the module does not export %s", abi.ExportOnResponse)
			}
			listed = true
		default:
			return fmt.Errorf("the module's descriptor lists unknown phase %q", p)
		}
	}
	// The descriptor decides: the SDK exports the response entry point from
	// every module, and a plugin without a response phase must not be handed
	// every answer (it would only fail, after the host had kept the answer).
	m.response = listed
	if len(desc.Schema) == 0 || string(desc.Schema) == "null" {
		return fmt.Errorf("the %s module's descriptor has no config_schema (use {} to accept any configuration)", desc.Type)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	url := "junction:plugin/" + desc.Type + "/config.schema.json"
	if err := c.AddResource(url, bytes.NewReader(desc.Schema)); err != nil {
		return fmt.Errorf("the %s module's config_schema is not valid JSON: %w", desc.Type, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("the %s module's config_schema is not a valid JSON Schema: %w", desc.Type, err)
	}
	m.desc, m.schema = desc, s
	return nil
}

// Descriptor is what the module says about itself.
func (m *Module) Descriptor() abi.Descriptor { return m.desc }

// Type is the plugin type the module implements.
func (m *Module) Type() string { return m.desc.Type }

// Trusted reports whether the module was loaded with LoadTrusted.
func (m *Module) Trusted() bool { return m.trusted }

// HasResponsePhase reports whether the module handles the response phase.
func (m *Module) HasResponsePhase() bool { return m.response }

// ConfigError is a configuration that does not match the module's schema.
// Field is the path inside the plugin reference, "configuration.add[0].name"
// style, as engine.FieldError expects.
type ConfigError struct {
	Type    string
	Field   string
	Message string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("plugin %s: %s: %s", e.Type, e.Field, e.Message)
}

// FieldPath is the offending field inside the plugin reference.
func (e *ConfigError) FieldPath() string { return e.Field }

// ValidateConfig checks a binding's configuration (JSON; empty means {})
// against the module's schema. The error is a *ConfigError naming the
// deepest failing field.
func (m *Module) ValidateConfig(config []byte) error {
	if len(bytes.TrimSpace(config)) == 0 {
		config = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return &ConfigError{Type: m.desc.Type, Field: "configuration", Message: "is not valid JSON: " + err.Error()}
	}
	err := m.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ConfigError{Type: m.desc.Type, Field: "configuration", Message: err.Error()}
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	return &ConfigError{Type: m.desc.Type, Field: "configuration" + pointerToDotted(leaf.InstanceLocation), Message: leaf.Message}
}

// pointerToDotted turns "/add/0/name" into ".add[0].name".
func pointerToDotted(p string) string {
	if p == "" {
		return ""
	}
	var b strings.Builder
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		if part != "" && strings.Trim(part, "0123456789") == "" {
			b.WriteString("[" + part + "]")
			continue
		}
		b.WriteString("." + part)
	}
	return b.String()
}

// compiled returns the module compiled for a runtime with the given memory
// limit.
func (m *Module) compiled(ctx context.Context, pages uint32) (*engineRuntime, wazero.CompiledModule, error) {
	r, err := m.h.runtime(ctx, runtimeKey{pages: pages, trusted: m.trusted})
	if err != nil {
		return nil, nil, err
	}
	c, err := r.compile(ctx, m.hash, m.wasm)
	if err != nil {
		return nil, nil, fmt.Errorf("compiling the %s plugin module: %w", m.desc.Type, err)
	}
	return r, c, nil
}
