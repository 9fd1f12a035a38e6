package hostapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/internal/wasmgen"
	"github.com/junction-router/junction/hostapi/plugintest"
)

const (
	descAt   = 1024
	resultAt = 8192
)

var goodDescriptor = `{"abi_version":1,"type":"raw","version":"0","phases":["request"],"config_schema":{},"operations":[]}`

// rawGuest is a hand-written module: version from junction_abi_version,
// desc as its descriptor, onRequest as the body of junction_on_request
// (which must leave an i64), result bytes at resultAt.
func rawGuest(version int32, desc string, onRequest []byte, result []byte, imports ...wasmgen.Import) []byte {
	m := wasmgen.Module{
		Imports:     imports,
		MemoryPages: 2,
		Funcs: []wasmgen.Func{
			{Export: abi.ExportABIVersion, Results: []byte{wasmgen.I32}, Body: wasmgen.ConstI32(version)},
			{Export: abi.ExportAlloc, Params: []byte{wasmgen.I32}, Results: []byte{wasmgen.I32}, Body: wasmgen.ConstI32(4096)},
			{Export: abi.ExportDescriptor, Results: []byte{wasmgen.I64}, Body: wasmgen.ConstI64(int64(abi.Pack(descAt, descLen(desc))))},
			{Export: abi.ExportOnRequest, Params: []byte{wasmgen.I32, wasmgen.I32}, Results: []byte{wasmgen.I64}, Body: onRequest},
		},
		Data: []wasmgen.Data{{Offset: descAt, Bytes: []byte(desc)}},
	}
	if result != nil {
		m.Data = append(m.Data, wasmgen.Data{Offset: resultAt, Bytes: result})
	}
	return m.Bytes()
}

// descLen is the descriptor's length; "oob" claims one past the memory.
func descLen(desc string) uint32 {
	if desc == "oob" {
		return 200000
	}
	return uint32(len(desc))
}

func returning(result []byte) []byte {
	return wasmgen.ConstI64(int64(abi.Pack(resultAt, uint32(len(result)))))
}

var plainRequest = &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive, Decision: "d",
	Messages: []abi.Message{{Role: "user", Content: "hi"}}, Body: []byte(`{"messages":[{"role":"user","content":"hi"}]}`)}

func TestHandWrittenGuestWorks(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	want := abi.Result{Detail: "raw", Mutations: []abi.Mutation{{Op: abi.OpHeaderSet, Name: "x-raw", Value: []byte("1")}}}
	rec := want.Append(nil)
	m, err := h.Load(ctx, rawGuest(abi.Version, goodDescriptor, returning(rec), rec))
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind(ctx, m, nil, hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Call(ctx, plainRequest)
	if err != nil {
		t.Fatal(err)
	}
	if res.Detail != "raw" || len(res.Mutations) != 1 || res.Mutations[0].Name != "x-raw" {
		t.Fatalf("result = %+v", res.Result)
	}
}

func TestHostileModulesAtLoad(t *testing.T) {
	ctx := context.Background()
	ok := abi.Result{}
	rec := ok.Append(nil)
	for _, tc := range []struct {
		name, want string
		wasm       []byte
	}{
		{"not wasm", "compiling the plugin module", []byte("\x00asm garbage")},
		{"wrong ABI version", "speaks plugin ABI version 7, this host speaks version 1",
			rawGuest(7, goodDescriptor, returning(rec), rec)},
		{"unknown host function", `[junction.open_socket]`,
			rawGuest(abi.Version, goodDescriptor, returning(rec), rec, wasmgen.Import{Module: "junction", Name: "open_socket", Results: []byte{wasmgen.I32}})},
		{"unknown import module", `[env.fopen]`,
			rawGuest(abi.Version, goodDescriptor, returning(rec), rec, wasmgen.Import{Module: "env", Name: "fopen", Results: []byte{wasmgen.I32}})},
		{"descriptor not JSON", "descriptor is not valid JSON",
			rawGuest(abi.Version, `{"abi_version":1,`, returning(rec), rec)},
		{"descriptor schema not a schema", "config_schema is not a valid JSON Schema",
			rawGuest(abi.Version, `{"abi_version":1,"type":"raw","version":"0","phases":["request"],"config_schema":{"type":"no-such-type"},"operations":[]}`, returning(rec), rec)},
		{"descriptor without schema", "has no config_schema",
			rawGuest(abi.Version, `{"abi_version":1,"type":"raw","version":"0","phases":["request"],"operations":[]}`, returning(rec), rec)},
		{"descriptor claims a response phase it lacks", "does not export junction_on_response",
			rawGuest(abi.Version, `{"abi_version":1,"type":"raw","version":"0","phases":["request","response"],"config_schema":{},"operations":[]}`, returning(rec), rec)},
		{"descriptor with a bad operation kind", `has kind "write"`,
			rawGuest(abi.Version, `{"abi_version":1,"type":"raw","version":"0","phases":["request"],"config_schema":{},"operations":[{"name":"x","kind":"write"}]}`, returning(rec), rec)},
		{"descriptor out of bounds", "outside its memory",
			rawGuest(abi.Version, "oob", returning(rec), rec)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, hostapi.Config{})
			_, err := h.Load(ctx, tc.wasm)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// callFault loads a module, binds it with config and makes one call, which
// must fault with kind and be counted.
func callFault(t *testing.T, h *hostapi.Host, wasm []byte, config string, lim hostapi.Limits, kind string) error {
	t.Helper()
	ctx := context.Background()
	m, err := h.Load(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind(ctx, m, []byte(config), lim)
	if err != nil {
		t.Fatal(err)
	}
	before := h.Faults(m.Type(), kind)
	start := time.Now()
	_, err = b.Call(ctx, plainRequest)
	var f *hostapi.Fault
	if !errors.As(err, &f) || f.Kind != kind {
		t.Fatalf("Call error = %v, want a %s fault", err, kind)
	}
	if got := h.Faults(m.Type(), kind); got != before+1 {
		t.Errorf("faults{%s,%s} = %v, want %v", m.Type(), kind, got, before+1)
	}
	t.Logf("%s fault after %v: %v", kind, time.Since(start).Round(time.Millisecond), err)
	return err
}

func TestHostileModulesAtCall(t *testing.T) {
	h := newHost(t, hostapi.Config{})
	garbage := []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f}
	t.Run("trap", func(t *testing.T) {
		callFault(t, h, rawGuest(abi.Version, goodDescriptor, []byte{wasmgen.OpUnreachable}, nil), "", hostapi.Limits{}, hostapi.FaultTrap)
	})
	t.Run("wasm loop past the deadline", func(t *testing.T) {
		callFault(t, h, rawGuest(abi.Version, goodDescriptor, wasmgen.Loop(), nil), "", hostapi.Limits{CallTimeout: 50 * time.Millisecond}, hostapi.FaultDeadline)
	})
	t.Run("malformed result", func(t *testing.T) {
		callFault(t, h, rawGuest(abi.Version, goodDescriptor, returning(garbage), garbage), "", hostapi.Limits{}, hostapi.FaultMalformed)
	})
	t.Run("result outside memory", func(t *testing.T) {
		callFault(t, h, rawGuest(abi.Version, goodDescriptor, wasmgen.ConstI64(int64(abi.Pack(130000, 100))), nil), "", hostapi.Limits{}, hostapi.FaultMalformed)
	})
	t.Run("result over the output limit", func(t *testing.T) {
		callFault(t, h, rawGuest(abi.Version, goodDescriptor, wasmgen.ConstI64(int64(abi.Pack(0, 100000))), nil), "", hostapi.Limits{MaxOutput: 4096}, hostapi.FaultOutput)
	})
	hostile := plugintest.Build(t, "testdata/hostile")
	t.Run("go plugin loops forever", func(t *testing.T) {
		callFault(t, h, hostile, `{"do":"loop"}`, hostapi.Limits{CallTimeout: 100 * time.Millisecond}, hostapi.FaultDeadline)
	})
	t.Run("go plugin exhausts its memory", func(t *testing.T) {
		err := callFault(t, h, hostile, `{"do":"bomb"}`, hostapi.Limits{MemoryPages: 256, CallTimeout: 10 * time.Second}, hostapi.FaultMemory)
		if !strings.Contains(err.Error(), "ran out of memory") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("go plugin exits", func(t *testing.T) {
		callFault(t, h, hostile, `{"do":"exit"}`, hostapi.Limits{}, hostapi.FaultExit)
	})
	// The host is unharmed: a good binding of the same module still runs.
	ctx := context.Background()
	m, err := h.Load(ctx, hostile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind(ctx, m, []byte(`{"do":"ok"}`), hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := b.Call(ctx, plainRequest); err != nil || res.Failed || len(res.Mutations) != 1 {
		t.Fatalf("after the hostile calls: %+v, %v", res, err)
	}
}

func TestFaultDiscardsInstanceAndNextCallWorks(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	m, err := h.Load(ctx, plugintest.Build(t, "testdata/hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind(ctx, m, []byte(`{"greeting":"x"}`), hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// A Go panic inside the handler is recovered by the SDK: a failed
	// result, not a fault, and the instance stays.
	req := *plainRequest
	req.Headers = []abi.Header{{Name: "X-Call", Value: "panic"}}
	res, err := b.Call(ctx, &req)
	if err != nil || !res.Failed || !strings.Contains(res.Error, "asked to panic") {
		t.Fatalf("panic: %+v, %v", res.Result, err)
	}
	if b.Instances() != 1 {
		t.Fatalf("instances = %d after a recovered panic", b.Instances())
	}
	// A cancelled request faults its call; the instance is replaced.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Call(cctx, plainRequest); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if res, err := b.Call(ctx, plainRequest); err != nil || res.Detail != "greeted" {
		t.Fatalf("after cancel: %+v, %v", res.Result, err)
	}
}

func TestLyingDescriptorFailsTheCallClearly(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	m, err := h.Load(ctx, plugintest.Build(t, "testdata/hostile"))
	if err != nil {
		t.Fatal(err)
	}
	// The schema accepts {}, so binding works ...
	b, err := h.Bind(ctx, m, []byte(`{}`), hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// ... but the plugin refuses it when it reads it: a failed result that
	// names the problem, not a fault.
	res, err := b.Call(ctx, plainRequest)
	if err != nil || !res.Failed || res.Error != "configuration: do is required" {
		t.Fatalf("result = %+v, err = %v", res.Result, err)
	}
	if b.Instances() != 1 {
		t.Fatalf("instances = %d; a failed result must not discard the instance", b.Instances())
	}
}

// TestTrustedModuleDeadline: trusted code is not interrupted, but an answer
// that comes after the deadline is still a fault and its instance goes.
func TestTrustedModuleDeadline(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	m, err := h.LoadTrusted(ctx, plugintest.Build(t, "testdata/hostile"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Trusted() {
		t.Fatal("LoadTrusted gave an untrusted module")
	}
	slow, err := h.Bind(ctx, m, []byte(`{"do":"spin","n":300000000}`), hostapi.Limits{CallTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = slow.Call(ctx, plainRequest)
	var f *hostapi.Fault
	if !errors.As(err, &f) || f.Kind != hostapi.FaultDeadline || !strings.Contains(err.Error(), "could not be stopped") {
		t.Fatalf("err = %v", err)
	}
	// A generous deadline: on a loaded machine (or under -race) even a short
	// call can outlast the default, and this half checks only that a trusted
	// module answers normally.
	fast, err := h.Bind(ctx, m, []byte(`{"do":"spin","n":10}`), hostapi.Limits{CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := fast.Call(ctx, plainRequest); err != nil || res.Failed {
		t.Fatalf("fast: %+v %v", res.Result, err)
	}
}
