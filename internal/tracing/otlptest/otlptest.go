// Package otlptest is an OTLP trace receiver for tests: a real gRPC server
// implementing the collector's TraceService and a real HTTP endpoint taking
// protobuf export requests at /v1/traces, both keeping the spans they
// receive so a test can check names, attributes and the span tree.
package otlptest

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, its ids in hex.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	Kind                          tracepb.Span_SpanKind
	Attrs                         map[string]any
	Resource                      map[string]any
	StatusError                   bool
	Start, End                    time.Time
}

// Collector keeps what was received, by either protocol.
type Collector struct {
	mu    sync.Mutex
	spans []Span
	seen  chan struct{}
	// discard: count the spans, keep none (Count).
	discard bool
	count   int
}

func newCollector() *Collector { return &Collector{seen: make(chan struct{}, 1)} }

// Count is how many spans were received.
func (c *Collector) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

func (c *Collector) add(req *collectortrace.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.count += len(ss.GetSpans())
		}
	}
	if c.discard {
		return
	}
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind(),
					Attrs: attrs(s.GetAttributes()), Resource: res,
					StatusError: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Start:       time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
				})
			}
		}
	}
	select {
	case c.seen <- struct{}{}:
	default:
	}
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

// Spans returns what was received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// WaitFor waits up to timeout until ok holds for the spans received, and
// returns them; the test fails with what was received when it never does.
func (c *Collector) WaitFor(t testing.TB, timeout time.Duration, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if s := c.Spans(); ok(s) {
			return s
		}
		select {
		case <-c.seen:
		case <-time.After(50 * time.Millisecond):
		case <-deadline.C:
			t.Fatalf("OTLP receiver: the spans wanted did not arrive within %s; received:\n%s", timeout, Describe(c.Spans()))
			return nil
		}
	}
}

// Describe lists spans as a tree, one per line, for failure messages.
func Describe(spans []Span) string {
	byParent := map[string][]Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	var roots []Span
	for _, s := range spans {
		if ids[s.ParentSpanID] {
			byParent[s.ParentSpanID] = append(byParent[s.ParentSpanID], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + s.Name + " trace=" + s.TraceID + " parent=" + s.ParentSpanID + "\n")
		kids := byParent[s.SpanID]
		sort.Slice(kids, func(i, j int) bool { return kids[i].Start.Before(kids[j].Start) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// GRPC is a receiver listening for OTLP/gRPC on Addr.
type GRPC struct {
	*Collector
	Addr string
}

type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	c *Collector
}

func (s traceService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.c.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// NewGRPC starts a gRPC receiver on a free loopback port, stopped when the
// test ends.
func NewGRPC(t testing.TB) *GRPC {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &GRPC{Collector: newCollector(), Addr: ln.Addr().String()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, traceService{c: r.Collector})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

// NewGRPCSink is NewGRPC keeping no span, only their Count: for
// benchmarks, where the receiver's own work should stay small.
func NewGRPCSink(t testing.TB) *GRPC {
	r := NewGRPC(t)
	r.discard = true
	return r
}

// HTTP is a receiver taking OTLP/HTTP protobuf at URL + "/v1/traces".
type HTTP struct {
	*Collector
	// URL is the server's base URL; Addr its host:port.
	URL, Addr string
}

// NewHTTP starts an HTTP receiver, closed when the test ends.
func NewHTTP(t testing.TB) *HTTP {
	t.Helper()
	c := newCollector()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces with application/x-protobuf", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.add(&req)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return &HTTP{Collector: c, URL: srv.URL, Addr: strings.TrimPrefix(srv.URL, "http://")}
}

// Named returns the spans called name.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// ByPrefix returns the spans whose name starts with prefix.
func ByPrefix(spans []Span, prefix string) []Span {
	var out []Span
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}
