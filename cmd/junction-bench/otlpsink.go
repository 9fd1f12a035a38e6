package main

import (
	"context"
	"net"
	"sync/atomic"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// otlpSink is an OTLP/gRPC trace receiver that counts the spans it gets and
// keeps none: what -trace exports the served gateway's spans to, so that
// the run measures tracing with its exporter working, not spans dropped for
// want of a collector.
type otlpSink struct {
	collectortrace.UnimplementedTraceServiceServer
	spans atomic.Int64
	srv   *grpc.Server
	addr  string
}

func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{srv: grpc.NewServer(), addr: ln.Addr().String()}
	collectortrace.RegisterTraceServiceServer(s.srv, s)
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *otlpSink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var n int64
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += int64(len(ss.GetSpans()))
		}
	}
	s.spans.Add(n)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}
