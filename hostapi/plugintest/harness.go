package plugintest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/recipes"
)

// Harness runs one module through the real plugin stage, the way serve
// does, for `junction plugin test|preview|inspect`, with the router's default backends (wasm.Backends): the hashed
// n-gram embedder, the naive Bayes classifiers, an in-memory response cache and in-memory vector stores (which
// --store fills), searched by text for retrieve; memory_recall and memory_remember use an in-memory memory.
type Harness struct {
	host      *hostapi.Host
	backends  hostapi.Backends
	retriever *memstore.Retriever
}

// NewHarness starts a host with the router's default backends and fills a
// vector store for each NAME=FILE of stores.
func NewHarness(ctx context.Context, stores []string) (*Harness, error) {
	backends, _, vecs, err := wasm.Backends(nil, nil)
	if err != nil {
		return nil, err
	}
	retriever := &memstore.Retriever{Vectors: vecs, Embedder: backends.Embedder}
	backends.Retriever, backends.Memory = retriever, memstore.NewMemory(backends.Embedder)
	host, err := hostapi.New(ctx, hostapi.Config{Backends: backends, CacheDir: harnessCacheDir()})
	if err != nil {
		return nil, err
	}
	h := &Harness{host: host, backends: backends, retriever: retriever}
	for _, s := range stores {
		if err := h.fillStore(ctx, s); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// harnessCacheDir keeps modules the plugin commands compiled under the user's
// cache directory, so a second run of a module skips wazero's compilation;
// "" (in memory) when there is none.
func harnessCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir := filepath.Join(base, "junction", "plugin-cache")
	if os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	return dir
}

// Close frees the host.
func (h *Harness) Close() { _ = h.host.Close(context.Background()) }

// Load loads a module (compiled once per harness and bytes).
func (h *Harness) Load(wasmBytes []byte) (*hostapi.Module, error) {
	return h.host.Load(context.Background(), wasmBytes)
}

// fillStore reads NAME=FILE: one passage per line, as text or as a JSON
// object {"id","text","attributes"}; each is embedded with the host's
// embedder and stored with the payload retrieve gives (source: the file's
// name, chunk_index: the line number), so vector_search and retrieve both
// find it.
func (h *Harness) fillStore(ctx context.Context, spec string) error {
	name, file, ok := strings.Cut(spec, "=")
	if !ok || name == "" || file == "" {
		return fmt.Errorf("--store %q: want NAME=FILE", spec)
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("--store %s: %w", name, err)
	}
	defer f.Close()
	h.retriever.Vectors.Create(name)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		c := memstore.Chunk{ID: fmt.Sprintf("%s:%d", file, n), Text: line, Source: filepath.Base(file), FileID: file, ChunkIndex: n}
		if line[0] == '{' {
			var doc struct {
				ID, Text   string
				Attributes map[string]any
			}
			if err := json.Unmarshal([]byte(line), &doc); err != nil || doc.Text == "" {
				return fmt.Errorf("--store %s: %s:%d: want text or {\"id\",\"text\",\"attributes\"}", name, file, n)
			}
			c.Text, c.Attributes = doc.Text, doc.Attributes
			if doc.ID != "" {
				c.ID = doc.ID
			}
		}
		if err := h.retriever.Add(ctx, name, c); err != nil {
			return fmt.Errorf("--store %s: line %d: %w", name, n, err)
		}
	}
	return sc.Err()
}

// lastResult is the stage's module runner, keeping the last result so the
// mutations can be shown as the module returned them.
type lastResult struct {
	*wasm.Modules
	last *plugin.ModuleResult
}

func (r *lastResult) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	res, err := r.Modules.Call(ctx, typ, config, req)
	r.last = &res
	return res, err
}

// Result is one request through a plugin: what `plugin preview` prints
// and `plugin test` checks. Mode, Persisted and BackendCalls are the host's
// accounting.
type Result struct {
	Type         string            `json:"type"`
	Mode         string            `json:"mode"`
	Persisted    bool              `json:"persisted"`
	BackendCalls int               `json:"backend_calls"`
	Status       string            `json:"status"`
	Detail       string            `json:"detail,omitempty"`
	Error        string            `json:"error,omitempty"`
	CacheStatus  string            `json:"cache_status,omitempty"`
	Values       map[string]string `json:"values,omitempty"`
	Mutations    []ShownMutation   `json:"mutations"`
	Immediate    *plugin.Immediate `json:"immediate,omitempty"`
	Request      json.RawMessage   `json:"request"`
	Headers      http.Header       `json:"headers,omitempty"`
}

// ShownMutation is one mutation as the module returned it.
type ShownMutation struct {
	Op    string          `json:"op"`
	Index *uint32         `json:"index,omitempty"`
	Name  string          `json:"name,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Case is one request to run.
type Case struct {
	Config   json.RawMessage
	Body     json.RawMessage
	Mode     string
	Decision string
	Model    string
	Headers  map[string]string
	// Signals are the matched signals the plugin sees, as kind:name.
	Signals []string
	// PII is the personal data routing detected (nil: no pii scan).
	PII *PIIFixture
}

// Run loads wasmBytes (once per harness and bytes: the host caches the
// compilation) and runs c through the plugin stage.
func (h *Harness) Run(ctx context.Context, wasmBytes []byte, c Case) (*Result, error) {
	mod, err := h.Load(wasmBytes)
	if err != nil {
		return nil, err
	}
	typ := mod.Type()
	var reg hostapi.Registry
	if err := reg.Register(typ, wasmBytes); err != nil {
		return nil, err
	}
	mods, err := wasm.Load(ctx, h.host, &reg, hostapi.Limits{})
	if err != nil {
		return nil, err
	}
	defer mods.Close(context.Background())
	rec := &lastResult{Modules: mods}
	if c.Mode == "" {
		c.Mode = plugin.ModePreview
	}
	if _, ok := abi.ParseMode(c.Mode); !ok {
		return nil, fmt.Errorf("mode %q: want preview, probe or live", c.Mode)
	}
	if err := rec.Validate(typ, c.Config); err != nil {
		return nil, fmt.Errorf("the configuration: %w", err)
	}
	parsed, err := chat.Parse(c.Body)
	if err != nil {
		return nil, fmt.Errorf("the request: %w", err)
	}
	header := http.Header{}
	for k, v := range c.Headers {
		header.Add(k, v)
	}
	req := &plugin.Request{Chat: parsed, Header: header, Decision: c.Decision, Model: c.Model, Mode: c.Mode}
	if req.PII, err = c.PII.Locate(ctx, parsed); err != nil {
		return nil, err
	}
	for _, s := range c.Signals {
		kind, name, ok := strings.Cut(s, ":")
		if !ok || kind == "" || name == "" {
			return nil, fmt.Errorf("signal %q: want KIND:NAME (for example language:german)", s)
		}
		req.Signals = append(req.Signals, plugin.Signal{Kind: kind, Name: name})
	}
	if req.Decision == "" {
		req.Decision = "preview"
	}
	ref := recipes.PluginRef{Type: typ, Configuration: c.Config, OnError: recipes.OnErrorSkip}
	out, err := plugin.New(rec).Request(ctx, []recipes.PluginRef{ref}, req)
	if err != nil {
		return nil, err
	}
	run := &Result{Type: typ, Mode: c.Mode, Mutations: []ShownMutation{}, Immediate: out.Immediate, Headers: req.Header}
	if len(out.Reports) == 1 {
		rep := out.Reports[0]
		run.Status, run.Detail = rep.Status, rep.Detail
		if rep.Module != nil {
			run.Mode, run.BackendCalls, run.Persisted, run.Values = rep.Module.Mode, rep.Module.BackendCalls, rep.Module.Persisted, rep.Module.Values
		}
	}
	if r := rec.last; r != nil {
		run.BackendCalls, run.Persisted = r.BackendCalls, r.Persisted
		run.CacheStatus, run.Error = r.CacheStatus, r.Error
		for _, m := range r.Mutations {
			sm := ShownMutation{Op: abi.OpName(m.Op), Name: m.Name}
			switch m.Op {
			case abi.OpMessageInsert, abi.OpMessageReplace, abi.OpMessageRemove:
				i := m.Index
				sm.Index = &i
			}
			if len(m.Value) > 0 {
				if json.Valid(m.Value) && m.Op != abi.OpHeaderAdd && m.Op != abi.OpHeaderSet {
					sm.Value = json.RawMessage(m.Value)
				} else {
					sm.Value, _ = json.Marshal(string(m.Value))
				}
			}
			run.Mutations = append(run.Mutations, sm)
		}
	}
	body, err := parsed.Encode()
	if err != nil {
		return nil, err
	}
	run.Request = body
	if len(run.Headers) == 0 {
		run.Headers = nil
	}
	return run, nil
}
