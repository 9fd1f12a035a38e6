package hostapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/plugintest"
)

// BenchmarkCall is one handler call of the hello plugin on a small request,
// the host's fixed cost.
func BenchmarkCall(b *testing.B) {
	b.Run("interruptible", func(b *testing.B) { benchCall(b, false) })
	b.Run("trusted", func(b *testing.B) { benchCall(b, true) })
}

func benchCall(b *testing.B, trusted bool) {
	ctx := context.Background()
	h := newHost(b, hostapi.Config{})
	load := h.Load
	if trusted {
		load = h.LoadTrusted
	}
	m, err := load(ctx, plugintest.Build(b, "testdata/hello"))
	if err != nil {
		b.Fatal(err)
	}
	bd, err := h.Bind(ctx, m, []byte(`{"greeting":"hi"}`), hostapi.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bd.Call(ctx, plainRequest); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallRaw is one call of a hand-written module that returns a fixed
// result: the host's own cost without a guest runtime.
func BenchmarkCallRaw(b *testing.B) {
	ctx := context.Background()
	h := newHost(b, hostapi.Config{})
	want := abi.Result{Detail: "raw", Mutations: []abi.Mutation{{Op: abi.OpHeaderSet, Name: "x-raw", Value: []byte("1")}}}
	rec := want.Append(nil)
	m, err := h.Load(ctx, rawGuest(abi.Version, goodDescriptor, returning(rec), rec))
	if err != nil {
		b.Fatal(err)
	}
	bd, err := h.Bind(ctx, m, nil, hostapi.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bd.Call(ctx, plainRequest); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCall4K is one call of the header_mutation benchmark module on a
// 4 KiB request record, trusted and interruptible, straight through
// Binding.Call (no plugin stage around it).
func BenchmarkCall4K(b *testing.B) {
	req := &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive, Decision: "d"}
	for i := 0; i < 25; i++ {
		req.Messages = append(req.Messages, abi.Message{Role: "user", Content: strings.Repeat("x", 80)})
	}
	req.Body = []byte(strings.Repeat("y", 4000))
	for _, trusted := range []bool{true, false} {
		name := "interruptible"
		if trusted {
			name = "trusted"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			h := newHost(b, hostapi.Config{})
			load := h.Load
			if trusted {
				load = h.LoadTrusted
			}
			m, err := load(ctx, plugintest.Build(b, "testdata/bench/header_mutation"))
			if err != nil {
				b.Fatal(err)
			}
			bd, err := h.Bind(ctx, m, []byte(`{"add":[{"name":"x-a","value":"1"}]}`), hostapi.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bd.Call(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
