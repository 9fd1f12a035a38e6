package hostapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/memstore"
)

// The effect gate: while it refuses, a store, a remote classification and a
// log line are denied (the store never reaches the cache), reads and local
// work are not; the gate is asked for effects only, and once it lets the
// request act they run.
func TestEffectGateHoldsEffectsOnly(t *testing.T) {
	cache := memstore.NewCache()
	h := newHost(t, hostapi.Config{Registerer: prometheus.NewRegistry(), Backends: hostapi.Backends{
		Embedder: unitEmbedder{}, Cache: cache, Classifier: slowRemote{timeout: 100 * time.Millisecond}}})
	b := h.BindNative("t", nil, hostapi.Limits{})
	calls := []struct {
		name string
		in   []byte
	}{ // in this order: the lookup finds what the store kept
		{abi.ImportEmbed, (&abi.TextArgs{Text: "hello"}).Append(nil)},
		{abi.ImportCacheStore, (&abi.CacheStoreArgs{Namespace: "ns", Key: "k", Value: []byte("v"), TTLSeconds: 60}).Append(nil)},
		{abi.ImportCacheLookup, (&abi.CacheLookupArgs{Namespace: "ns", Key: "k"}).Append(nil)},
		{abi.ImportClassify, (&abi.ClassifyArgs{Binding: "remote", Text: "x"}).Append(nil)},
		{abi.ImportLog, (&abi.LogArgs{Level: abi.LogInfo, Message: "m"}).Append(nil)},
	}
	local := (&abi.ClassifyArgs{Binding: "local", Text: "x"}).Append(nil)
	effects := map[string]bool{abi.ImportCacheStore: true, abi.ImportClassify: true, abi.ImportLog: true}
	for _, pass := range []bool{false, true} {
		asked := 0
		ctx := hostapi.WithEffectGate(context.Background(), func() bool { asked++; return pass })
		got := map[string]abi.Status{}
		var localStatus abi.Status
		_, err := b.Call(ctx, &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive}, func(c *hostapi.HostCalls) abi.Result {
			for _, call := range calls {
				_, got[call.name] = c.Call(call.name, call.in)
			}
			_, localStatus = c.Call(abi.ImportClassify, local)
			return abi.Result{}
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range calls {
			name := call.name
			want := abi.StatusOK
			if effects[name] && !pass {
				want = abi.StatusDenied
			}
			if name == abi.ImportCacheLookup && !pass {
				want = abi.StatusNotFound // nothing was stored
			}
			if got[name] != want {
				t.Errorf("gate %v: %s answered %s, want %s", pass, name, got[name], want)
			}
		}
		if localStatus != abi.StatusOK || asked != len(effects) {
			t.Errorf("gate %v: a local classification %s, the gate asked %d times (want OK, %d: effects only)", pass, localStatus, asked, len(effects))
		}
		if _, n := cache.Counts(); n != map[bool]int{false: 0, true: 1}[pass] {
			t.Errorf("gate %v: the cache holds %d entries", pass, n)
		}
	}
}
