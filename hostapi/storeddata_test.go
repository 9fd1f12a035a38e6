package hostapi_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/plugintest"
)

// seenRetriever records the queries the host passed it and answers from a
// fixed list, or with err.
type seenRetriever struct {
	queries []hostapi.RetrieveQuery
	err     error
}

func (r *seenRetriever) Retrieve(_ context.Context, q hostapi.RetrieveQuery) ([]abi.VectorHit, error) {
	r.queries = append(r.queries, q)
	if r.err != nil {
		return nil, r.err
	}
	return []abi.VectorHit{{ID: "c1", Score: 0.9, Payload: []byte(`{"text":"t"}`)}}, nil
}

func callHello(t *testing.T, h *hostapi.Host, mode abi.Mode, call string) (hostapi.CallResult, string) {
	t.Helper()
	ctx := context.Background()
	m, err := h.Load(ctx, plugintest.Build(t, "testdata/hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind(ctx, m, []byte(`{"greeting":"x"}`), hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	req := &abi.Request{Phase: abi.PhaseRequest, Mode: mode, Decision: "d",
		Headers:  []abi.Header{{Name: "x-call", Value: call}},
		Messages: []abi.Message{{Role: "user", Content: "refund policy"}},
		Body:     []byte(`{"messages":[{"role":"user","content":"refund policy"}]}`)}
	res, err := b.Call(ctx, req)
	if err != nil || res.Failed {
		t.Fatalf("%s: %+v %v", call, res.Result, err)
	}
	for _, kv := range res.Values {
		if kv.Key == call {
			return res, kv.Value
		}
	}
	t.Fatalf("%s: no value in %+v", call, res.Values)
	return res, ""
}

func TestStoredDataHostFunctionsWithoutBackends(t *testing.T) {
	h := newHost(t, hostapi.Config{})
	for _, call := range []string{"retrieve", "memory_recall", "memory_remember"} {
		res, got := callHello(t, h, abi.ModeLive, call)
		if got != "unavailable" || res.BackendCalls != 0 || res.Persisted {
			t.Errorf("%s without a backend = %q (%d backend calls, persisted %v), want unavailable", call, got, res.BackendCalls, res.Persisted)
		}
	}
}

func TestRetrievePassesTheQueryAndSetsFreshInProbe(t *testing.T) {
	r := &seenRetriever{}
	h := newHost(t, hostapi.Config{Backends: hostapi.Backends{Retriever: r}})
	if _, got := callHello(t, h, abi.ModeLive, "retrieve"); got != "c1;" {
		t.Fatalf("live retrieve = %q", got)
	}
	if _, got := callHello(t, h, abi.ModeProbe, "retrieve"); got != "c1;" {
		t.Fatalf("probe retrieve = %q", got)
	}
	if len(r.queries) != 2 {
		t.Fatalf("queries = %+v", r.queries)
	}
	live, probe := r.queries[0], r.queries[1]
	if live.Source != "docs" || live.Text != "refund policy" || live.K != 2 || live.HasMinScore ||
		string(live.Filter) != `{"type":"eq","key":"lang","value":"en"}` || live.Fresh {
		t.Fatalf("live query = %+v", live)
	}
	if !probe.Fresh {
		t.Fatalf("probe query = %+v, want Fresh (no result cache)", probe)
	}
	// An unknown source is unavailable, any other failure a backend error.
	r.err = fmt.Errorf("%w: docs", hostapi.ErrNoSuchStore)
	if _, got := callHello(t, h, abi.ModeLive, "retrieve"); got != "unavailable" {
		t.Fatalf("unknown source = %q", got)
	}
	r.err = fmt.Errorf("%w: filters: a \"eq\" comparison needs a key", hostapi.ErrInvalidQuery)
	if _, got := callHello(t, h, abi.ModeLive, "retrieve"); got != "error: junction.retrieve: invalid argument" {
		t.Fatalf("refused filter = %q", got)
	}
	r.err = fmt.Errorf("the embedding model changed")
	if _, got := callHello(t, h, abi.ModeLive, "retrieve"); got != "error: junction.retrieve: backend error" {
		t.Fatalf("failing backend = %q", got)
	}
}
