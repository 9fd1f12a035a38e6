package hostapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/plugintest"
)

func newHost(t testing.TB, cfg hostapi.Config) *hostapi.Host {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = plugintest.CacheDir()
	}
	h, err := hostapi.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func TestLoadBindCall(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	m, err := h.Load(ctx, plugintest.Build(t, "testdata/hello"))
	if err != nil {
		t.Fatal(err)
	}
	d := m.Descriptor()
	if d.Type != "hello" || d.Version != "0.1.0" || len(d.Operations) != 2 || !m.HasResponsePhase() {
		t.Fatalf("descriptor = %+v", d)
	}
	b, err := h.Bind(ctx, m, []byte(`{"greeting":"Hi there"}`), hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	req := &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive, Decision: "general", Model: "small",
		Messages: []abi.Message{{Role: "user", Content: "hello"}},
		Body:     []byte(`{"model":"small","messages":[{"role":"user","content":"hello"}]}`)}
	res, err := b.Call(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed || res.Detail != "greeted" || len(res.Mutations) != 2 {
		t.Fatalf("result = %+v", res.Result)
	}
	ins := res.Mutations[0]
	if ins.Op != abi.OpMessageInsert || ins.Index != 0 || string(ins.Value) != `{"role":"system","content":"Hi there"}` {
		t.Fatalf("insert = %+v (%s)", ins, ins.Value)
	}
	hdr := res.Mutations[1]
	if hdr.Op != abi.OpHeaderAdd || hdr.Name != "x-hello" || string(hdr.Value) != "live/general" {
		t.Fatalf("header = %+v", hdr)
	}
	if len(res.Values) != 1 || res.Values[0] != (abi.KV{Key: "messages", Value: "1"}) {
		t.Fatalf("values = %+v", res.Values)
	}
	if res.Mode != abi.ModeLive || res.BackendCalls != 0 || res.Persisted {
		t.Fatalf("accounting = %+v", res)
	}
	// The instance is reused: many calls, one instance.
	for i := 0; i < 50; i++ {
		if _, err := b.Call(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.Instances(); n != 1 {
		t.Fatalf("instances = %d, want 1 (pooled)", n)
	}
}

func TestBindRejectsConfigWithPath(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	m, err := h.Load(ctx, plugintest.Build(t, "testdata/hello"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Bind(ctx, m, []byte(`{"greeting":""}`), hostapi.Limits{})
	var ce *hostapi.ConfigError
	if err == nil || !asConfigError(err, &ce) || ce.Field != "configuration.greeting" {
		t.Fatalf("err = %v", err)
	}
	err = m.ValidateConfig([]byte(`{"greeting":"x","extra":1}`))
	if err == nil || !strings.Contains(err.Error(), "extra") {
		t.Fatalf("additional property: %v", err)
	}
}

func asConfigError(err error, ce **hostapi.ConfigError) bool {
	e, ok := err.(*hostapi.ConfigError)
	*ce = e
	return ok
}

// TestPoolUnderConcurrency: many concurrent calls share at most
// MaxInstances instances, and all succeed.
func TestPoolUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	m, err := h.Load(ctx, plugintest.Build(t, "testdata/hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind(ctx, m, []byte(`{"greeting":"hi"}`), hostapi.Limits{MaxInstances: 3, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				res, err := b.Call(ctx, plainRequest)
				if err == nil && res.Detail != "greeted" {
					err = errors.New("wrong result: " + res.Detail)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 16; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := b.Instances(); n > 3 {
		t.Fatalf("%d instances made, limit 3", n)
	}
}
