package hostapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/memstore"
)

type unitEmbedder struct{}

func (unitEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range texts {
		out[i] = make([]float32, 16) // a 68-byte answer
		out[i][0] = 1
	}
	return out, nil
}

// TestNativeBindingGatesLikeModules: a native plugin's host calls go through
// the module's mode gate, budget, sizes and counting.
func TestNativeBindingGatesLikeModules(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{Registerer: prometheus.NewRegistry(),
		Backends: hostapi.Backends{Embedder: unitEmbedder{}, Cache: memstore.NewCache()}})
	b := h.BindNative("t", nil, hostapi.Limits{})
	embed := (&abi.TextArgs{Text: "hello"}).Append(nil)
	lookup := (&abi.CacheLookupArgs{Namespace: "ns", Key: "k"}).Append(nil)
	store := (&abi.CacheStoreArgs{Namespace: "ns", Key: "k", Value: []byte("v"), TTLSeconds: 60}).Append(nil)
	want := map[abi.Mode][3]abi.Status{
		abi.ModeLive:    {abi.StatusOK, abi.StatusOK, abi.StatusOK},
		abi.ModeProbe:   {abi.StatusOK, abi.StatusDenied, abi.StatusDenied},
		abi.ModePreview: {abi.StatusDenied, abi.StatusDenied, abi.StatusDenied},
	}
	wantCalls := map[abi.Mode]int{abi.ModeLive: 3, abi.ModeProbe: 1, abi.ModePreview: 0}
	for _, mode := range []abi.Mode{abi.ModePreview, abi.ModeProbe, abi.ModeLive} {
		var got [3]abi.Status
		var cfg []byte
		res, err := b.Call(ctx, &abi.Request{Phase: abi.PhaseRequest, Mode: mode}, func(c *hostapi.HostCalls) abi.Result {
			_, got[0] = c.Call(abi.ImportEmbed, embed)
			_, got[1] = c.Call(abi.ImportCacheStore, store)
			_, got[2] = c.Call(abi.ImportCacheLookup, lookup)
			cfg, _ = c.Call(abi.ImportConfig, nil)
			return abi.Result{Detail: "done"}
		})
		if err != nil || res.Detail != "done" {
			t.Fatalf("%s: %+v %v", mode, res, err)
		}
		if got != want[mode] || res.BackendCalls != wantCalls[mode] || res.Persisted != (mode == abi.ModeLive) || string(cfg) != "{}" {
			t.Errorf("%s: statuses %v (want %v), backend calls %d, persisted %v, config %q", mode, got, want[mode], res.BackendCalls, res.Persisted, cfg)
		}
	}

	// The budget of host calls and the answer's size.
	small := h.BindNative("t", []byte(`{"a":1}`), hostapi.Limits{MaxHostCalls: 2, MaxOutput: 32})
	var late *hostapi.HostCalls
	_, err := small.Call(ctx, &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive}, func(c *hostapi.HostCalls) abi.Result {
		late = c
		if out, st := c.Call(abi.ImportConfig, nil); st != abi.StatusOK || string(out) != `{"a":1}` {
			t.Errorf("config: %q %s", out, st)
		}
		if _, st := c.Call(abi.ImportEmbed, embed); st != abi.StatusLimit {
			t.Errorf("an answer over MaxOutput: %s", st)
		}
		if _, st := c.Call(abi.ImportConfig, nil); st != abi.StatusLimit {
			t.Errorf("a call over MaxHostCalls: %s", st)
		}
		return abi.Result{}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, st := late.Call(abi.ImportConfig, nil); st != abi.StatusUnavailable {
		t.Errorf("a host call after the handler returned: %s", st)
	}

	// A late answer is a deadline fault, counted; a result over MaxOutput an
	// output fault.
	slow := h.BindNative("slow", nil, hostapi.Limits{CallTimeout: 5 * time.Millisecond, MaxOutput: 64})
	_, err = slow.Call(ctx, &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive}, func(*hostapi.HostCalls) abi.Result {
		time.Sleep(20 * time.Millisecond)
		return abi.Result{}
	})
	var f *hostapi.Fault
	if !errors.As(err, &f) || f.Kind != hostapi.FaultDeadline || h.Faults("slow", hostapi.FaultDeadline) != 1 {
		t.Errorf("late answer: %v", err)
	}
	_, err = slow.Call(ctx, &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive}, func(*hostapi.HostCalls) abi.Result {
		return abi.Result{Detail: string(make([]byte, 100))}
	})
	if !errors.As(err, &f) || f.Kind != hostapi.FaultOutput {
		t.Errorf("large result: %v", err)
	}
}

func TestResultSize(t *testing.T) {
	r := abi.Result{Skipped: true, Error: "e", Detail: "d", CacheStatus: "hit", Values: []abi.KV{{Key: "k", Value: "v"}},
		Immediate: &abi.Immediate{Status: 200, Content: "c"}, Mutations: []abi.Mutation{{Op: abi.OpFieldSet, Name: "n", Value: []byte("1")}}}
	for _, r := range []abi.Result{{}, r} {
		if got, want := r.Size(), len(r.Append(nil)); got != want {
			t.Errorf("Size %d, record %d bytes", got, want)
		}
	}
}

// TestVectorCallsAnswerAsRecordCalls: EmbedVector and CacheLookupVector
// (sdk.VectorHost) give what Call gives for the same arguments in every
// mode, and count against the same budget and sizes.
func TestVectorCallsAnswerAsRecordCalls(t *testing.T) {
	ctx := context.Background()
	cache := memstore.NewCache()
	h := newHost(t, hostapi.Config{Registerer: prometheus.NewRegistry(),
		Backends: hostapi.Backends{Embedder: unitEmbedder{}, Cache: cache}})
	unit := make([]float32, 16)
	unit[0] = 1
	if err := cache.Store(ctx, "ns", "k", []byte("answer"), time.Minute, unit); err != nil {
		t.Fatal(err)
	}
	lookups := []abi.CacheLookupArgs{
		{Namespace: "ns", Key: "k"},                                      // exact hit
		{Namespace: "ns", Key: "other"},                                  // miss
		{Namespace: "ns", Embedding: unit, Threshold: 0.9},               // semantic hit
		{Namespace: "elsewhere", Embedding: unit, Threshold: 0.9},        // miss
		{Namespace: "ns", Embedding: make([]float32, 3), Threshold: 0.9}, // a vector of another size
	}
	for _, lim := range []hostapi.Limits{{}, {MaxOutput: 40}, {MaxHostCalls: 3}} {
		b := h.BindNative("t", nil, lim)
		for _, mode := range []abi.Mode{abi.ModePreview, abi.ModeProbe, abi.ModeLive} {
			type answer struct {
				out string
				st  abi.Status
			}
			var byRecord, byValue []answer
			var calls [2]int
			for side, by := range []*[]answer{&byRecord, &byValue} {
				res, err := b.Call(ctx, &abi.Request{Phase: abi.PhaseRequest, Mode: mode}, func(c *hostapi.HostCalls) abi.Result {
					for _, text := range []string{"hello", string(make([]byte, 50))} {
						var out []byte
						var st abi.Status
						if side == 0 {
							out, st = c.Call(abi.ImportEmbed, (&abi.TextArgs{Text: text}).Append(nil))
						} else {
							var v []float32
							v, st = c.EmbedVector(text)
							if st == abi.StatusOK {
								out = abi.Vector(v).Append(nil)
							}
						}
						*by = append(*by, answer{string(out), st})
					}
					for _, a := range lookups {
						var out []byte
						var st abi.Status
						if side == 0 {
							out, st = c.Call(abi.ImportCacheLookup, a.Append(nil))
						} else {
							var e abi.CacheEntry
							e, st = c.CacheLookupVector(&a)
							if st == abi.StatusOK {
								out = e.Append(nil)
							}
						}
						*by = append(*by, answer{string(out), st})
					}
					return abi.Result{}
				})
				if err != nil {
					t.Fatal(err)
				}
				calls[side] = res.BackendCalls
			}
			for i := range byRecord {
				if byRecord[i] != byValue[i] {
					t.Errorf("limits %+v, %s, call %d: by record %q %s, by value %q %s", lim, mode, i, byRecord[i].out, byRecord[i].st, byValue[i].out, byValue[i].st)
				}
			}
			if calls[0] != calls[1] {
				t.Errorf("limits %+v, %s: backend calls by record %d, by value %d", lim, mode, calls[0], calls[1])
			}
		}
	}
}

// slowRemote is a RemoteClassifier whose "remote" binding answers after
// delay, honouring its context; "local" answers at once.
type slowRemote struct {
	delay, timeout time.Duration
}

func (s slowRemote) Classify(ctx context.Context, binding, _ string) ([]abi.Class, error) {
	if binding == "remote" {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return []abi.Class{{Label: "ok", Score: 1}}, nil
}

func (s slowRemote) RemoteTimeout(binding string) time.Duration {
	if binding == "remote" {
		return s.timeout
	}
	return 0
}

// A classify call on a remote binding waits for the binding's timeout, not
// the call's deadline, and its wait is not counted against the deadline;
// past the binding's timeout (and its slack) it fails; a canceled request
// ends it at once.
func TestRemoteClassifyHasItsOwnTimeout(t *testing.T) {
	ctx := context.Background()
	remote := (&abi.ClassifyArgs{Binding: "remote", Text: "x"}).Append(nil)
	local := (&abi.ClassifyArgs{Binding: "local", Text: "x"}).Append(nil)
	call := func(cls slowRemote, ctx context.Context) ([2]abi.Status, error) {
		h := newHost(t, hostapi.Config{Registerer: prometheus.NewRegistry(), Backends: hostapi.Backends{Classifier: cls}})
		b := h.BindNative("t", nil, hostapi.Limits{CallTimeout: 50 * time.Millisecond})
		var got [2]abi.Status
		_, err := b.Call(ctx, &abi.Request{Phase: abi.PhaseResponse, Mode: abi.ModeLive}, func(c *hostapi.HostCalls) abi.Result {
			_, got[0] = c.Call(abi.ImportClassify, remote)
			_, got[1] = c.Call(abi.ImportClassify, local) // after the remote wait, within the moved deadline
			return abi.Result{}
		})
		return got, err
	}
	if got, err := call(slowRemote{delay: 150 * time.Millisecond, timeout: time.Second}, ctx); err != nil || got != [2]abi.Status{abi.StatusOK, abi.StatusOK} {
		t.Fatalf("a 150 ms remote call with a 1 s timeout under a 50 ms call deadline: %v %v", got, err)
	}
	start := time.Now()
	got, err := call(slowRemote{delay: 2 * time.Second, timeout: 100 * time.Millisecond}, ctx)
	if took := time.Since(start); err != nil || got[0] != abi.StatusBackendError || took > time.Second {
		t.Fatalf("a 2 s remote call with a 100 ms timeout: %v %v after %v", got, err, took)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	got, _ = call(slowRemote{delay: 2 * time.Second, timeout: 10 * time.Second}, cctx)
	if took := time.Since(start); got[0] != abi.StatusBackendError || took > time.Second {
		t.Fatalf("the request's deadline bounds a remote call: %v after %v", got, took)
	}
}
