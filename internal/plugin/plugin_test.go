package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/recipes"
)

// The stage's own mechanics, with stand-in modules. The built-in plugins'
// behaviour through the stage is tested in internal/plugin/native.

// Stand-in module types: typeInsert inserts a system message at 0 whose
// content is the configuration's "content", typeAnswer answers immediately.
const (
	typeInsert = "insert"
	typeAnswer = "answer"
)

type fakeModules struct{}

func (fakeModules) Has(typ string) bool     { return typ == typeInsert || typ == typeAnswer }
func (fakeModules) HasResponse(string) bool { return false }
func (fakeModules) Validate(typ string, config json.RawMessage) error {
	var c struct{ Content string }
	if err := json.Unmarshal(config, &c); err != nil || c.Content == "" {
		return &ConfigError{Type: typ, Field: "configuration.content", Message: "is required"}
	}
	return nil
}

func (fakeModules) Call(_ context.Context, typ string, config json.RawMessage, _ *abi.Request) (ModuleResult, error) {
	var c struct{ Content string }
	_ = json.Unmarshal(config, &c)
	if typ == typeAnswer {
		return ModuleResult{Result: abi.Result{Immediate: &abi.Immediate{Status: 200, Content: c.Content}}}, nil
	}
	msg, _ := json.Marshal(map[string]string{"role": "system", "content": c.Content})
	return ModuleResult{Result: abi.Result{Detail: "inserted",
		Mutations: []abi.Mutation{{Op: abi.OpMessageInsert, Index: 0, Value: msg}}}}, nil
}

func newReq(t testing.TB, body string) *Request {
	t.Helper()
	c, err := chat.Parse([]byte(body))
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return &Request{Chat: c, Header: http.Header{}, Decision: "d1", Model: "small", Mode: ModeLive}
}

func ref(typ, config string) recipes.PluginRef {
	r := recipes.PluginRef{Type: typ}
	if config != "" {
		r.Configuration = json.RawMessage(config)
	}
	return r
}

func runOne(t *testing.T, r recipes.PluginRef, req *Request) Outcome {
	t.Helper()
	out, err := New(fakeModules{}).Request(context.Background(), []recipes.PluginRef{r}, req)
	if err != nil {
		t.Fatalf("Request: %v", err)
	}
	if len(out.Reports) != 1 {
		t.Fatalf("reports = %+v", out.Reports)
	}
	return out
}

func flat(roleContent ...string) []chat.Message {
	var out []chat.Message
	for i := 0; i+1 < len(roleContent); i += 2 {
		out = append(out, chat.Message{Role: roleContent[i], Content: roleContent[i+1]})
	}
	return out
}

type panicky struct{}

func (panicky) run(*Request) (*mutations, error) { panic("boom") }

// answers answers every request immediately.
type answers struct{}

func (answers) run(*Request) (*mutations, error) {
	return &mutations{immediate: &Immediate{Status: 200, Content: "ok"}}, nil
}

func TestPanicFailsOnlyThatPlugin(t *testing.T) {
	steps := []step{
		{typ: "x", onError: recipes.OnErrorSkip, inst: panicky{}},
		{typ: "y", onError: recipes.OnErrorSkip, inst: answers{}},
	}
	out, err := Prepared{steps: steps}.Request(context.Background(), &Request{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reports[0].Status != StatusFailed || out.Reports[0].Detail != "the plugin panicked: boom" {
		t.Errorf("report = %+v", out.Reports[0])
	}
	if out.Immediate == nil {
		t.Errorf("the plugin after the panic did not run")
	}
}

func TestStageGuardsOwnedFields(t *testing.T) {
	c := &chat.Request{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)}}
	for _, m := range []*mutations{
		{del: []string{"model"}},
		{del: []string{"messages"}},
		{set: []field{{"messages", json.RawMessage(`[]`)}}},
		{set: []field{{"stream", json.RawMessage(`true`)}}},
		{headers: []headerOp{{kind: headerSet, name: "Authorization", value: "x"}}},
	} {
		if err := apply(&Request{Chat: c}, m); err == nil {
			t.Errorf("apply(%+v) succeeded", m)
		}
	}
	if len(c.Fields) != 1 {
		t.Errorf("fields changed: %v", c.Fields)
	}
}

func TestCompileCache(t *testing.T) {
	n := New(fakeModules{})
	r := ref(typeInsert, `{"content":"P"}`)
	a := n.step(r).inst
	b := n.step(ref(typeInsert, `{"content":"P"}`)).inst
	if a != b {
		t.Error("the same configuration was compiled twice")
	}
	if c := n.step(ref(typeInsert, `{"content":"Q"}`)).inst; c == a {
		t.Error("a different configuration shared a compiled form")
	}
	for i := 0; i < maxCached+10; i++ {
		n.step(ref(typeAnswer, `{"content":"m`+strings.Repeat("x", i)+`"}`))
	}
	if n.size > maxCached {
		t.Errorf("cache size %d exceeds %d", n.size, maxCached)
	}
	if allocs := testing.AllocsPerRun(100, func() { n.step(r) }); allocs != 0 {
		t.Errorf("a cached step allocates %v times", allocs)
	}
}

func TestNoIO(t *testing.T) {
	// The package must not reach outside the request: its non-test files may
	// import only these.
	allowed := map[string]bool{
		`"bytes"`: true, `"context"`: true, `"encoding/json"`: true, `"errors"`: true, `"fmt"`: true,
		`"math"`: true, `"net/http"`: true, `"slices"`: true, `"strconv"`: true, `"strings"`: true, `"sync"`: true, `"unicode/utf8"`: true,
		`"github.com/junction-router/junction/internal/chat"`: true, `"github.com/junction-router/junction/recipes"`: true,
		// The plugin ABI's wire types: no I/O, no dependencies.
		`"github.com/junction-router/junction/hostapi/abi"`: true,
		// A JSON scanner: no I/O, only the standard library and the ABI.
		`"github.com/junction-router/junction/sdk/jsonscan"`: true,
		// The personal-data detector and scan (StandInPII): pure functions.
		`"github.com/junction-router/junction/internal/pii"`: true,
		// A span per plugin call: OpenTelemetry's API and Junction's helpers
		// over it, no I/O (the SDK and its exporters are internal/tracing/otlp,
		// which this package does not import).
		`"go.opentelemetry.io/otel/codes"`: true, `"go.opentelemetry.io/otel/trace"`: true, `"go.opentelemetry.io/otel/trace/noop"`: true,
		`"github.com/junction-router/junction/internal/tracing"`: true,
		// The host-side types' configurations (router_replay,
		// shadow_dispatch): decoding and checks only.
		`"github.com/junction-router/junction/internal/replay/replayconfig"`: true,
	}
	for _, imp := range packageImports(t) {
		if !allowed[imp] {
			t.Errorf("internal/plugin imports %s", imp)
		}
	}
}
