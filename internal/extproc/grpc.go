package extproc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/tap"

	"github.com/junction-router/junction/internal/dataplane"
)

// ServiceName is the gRPC service Envoy calls; its health is reported under
// this name and under "" (the whole server).
const ServiceName = "envoy.service.ext_proc.v3.ExternalProcessor"

// DefaultMaxMessageBytes bounds one gRPC message: a whole buffered body
// (request bodies up to the default limit, non-streamed answers up to
// dataplane.MaxUpstreamBody) plus room for headers.
const DefaultMaxMessageBytes = dataplane.MaxUpstreamBody + 1<<20

// GRPCOptions configure the gRPC server around a Server. The zero value
// serves plain-text gRPC with the defaults below.
type GRPCOptions struct {
	// TLSCertFile and TLSKeyFile, both set, serve TLS.
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile, with TLS, requires and verifies client certificates
	// signed by these CAs (mutual TLS between Envoy and Junction).
	TLSClientCAFile string
	// MaxMessageBytes bounds a received message; 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// KeepaliveTime is how long a connection may be idle before the server
	// pings it (a dead Envoy connection is then closed after
	// KeepaliveTimeout); 0 means 30s and 10s.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// StreamWorkers is how many goroutines are kept to run streams; a
	// stream that finds none idle gets a goroutine of its own. 0 means
	// DefaultStreamWorkers; negative: none (a new goroutine per stream).
	StreamWorkers int
}

// DefaultStreamWorkers is GRPCOptions.StreamWorkers' default: 8 per
// GOMAXPROCS, at least 16. A kept worker's stack has already grown to what
// routing a request needs; a new goroutine per stream grows its stack
// again on every request (about a tenth of the server's CPU for a stream
// under load, before this default).
func DefaultStreamWorkers() int { return max(16, 8*runtime.GOMAXPROCS(0)) }

// NewGRPCServer returns a gRPC server serving srv as the ext_proc service,
// grpc.health.v1 (SERVING for ServiceName and "") and server reflection.
// Serve it on a listener; stop it with Shutdown.
func NewGRPCServer(srv *Server, opts GRPCOptions) (*grpc.Server, *health.Server, error) {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.StreamWorkers == 0 {
		opts.StreamWorkers = DefaultStreamWorkers()
	}
	if opts.KeepaliveTime <= 0 {
		opts.KeepaliveTime = 30 * time.Second
	}
	if opts.KeepaliveTimeout <= 0 {
		opts.KeepaliveTimeout = 10 * time.Second
	}
	so := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxMessageBytes),
		grpc.MaxSendMsgSize(opts.MaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: opts.KeepaliveTime, Timeout: opts.KeepaliveTimeout}),
		// Envoy may be configured to ping often; do not answer that with
		// GOAWAY too_many_pings.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		// One Envoy multiplexes many requests over few connections: larger
		// windows keep big bodies from stalling on flow control.
		grpc.InitialWindowSize(1 << 20),
		grpc.InitialConnWindowSize(16 << 20),
		// Each ext_proc stream's context made cancellable, so that its time
		// bounds need no goroutine of their own (exchange.serve).
		grpc.InTapHandle(streamTap),
		// protobuf, with the replies Junction writes as bytes sent as they
		// are (codec.go); a stream the tap marked relies on it (exchange.wire).
		grpc.ForceServerCodecV2(serverCodec),
	}
	if opts.StreamWorkers > 0 {
		so = append(so, grpc.NumStreamWorkers(uint32(opts.StreamWorkers)))
	}
	creds, err := serverTLS(opts)
	if err != nil {
		return nil, nil, err
	}
	if creds != nil {
		so = append(so, grpc.Creds(creds))
	}
	gs := grpc.NewServer(so...)
	extprocv3.RegisterExternalProcessorServer(gs, srv)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	return gs, hs, nil
}

// processMethod is the ext_proc stream's full method name.
const processMethod = "/" + ServiceName + "/Process"

// streamTap gives each ext_proc stream a context the handler can end
// (streamCtx): gRPC's Recv returns once it is done, which is how a time
// bound ends a stream whose handler is blocked receiving. The tap runs
// under the transport's lock: it only wraps the context. Other methods
// (health, reflection) are left as they are.
func streamTap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if info.FullMethodName != processMethod {
		return ctx, nil
	}
	c := &streamCtx{}
	c.Context, c.cancel = context.WithCancel(ctx)
	return c, nil
}

// streamCtx is an ext_proc stream's context. end cancels it and makes its
// Err DeadlineExceeded: gRPC ends a stream whose Recv failed with the status
// of that error, and an idle bound is a deadline, as the handler's own
// status said when the handler (not Recv) ended the stream. Done and the
// cancellation of derived contexts are the embedded context's own.
type streamCtx struct {
	context.Context
	cancel context.CancelFunc
	ended  atomic.Bool
}

// streamCtxKey finds a stream's streamCtx from the contexts gRPC derives
// from it.
type streamCtxKey struct{}

func (c *streamCtx) Value(key any) any {
	if key == (streamCtxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func (c *streamCtx) end() {
	c.ended.Store(true)
	c.cancel()
}

func (c *streamCtx) Err() error {
	err := c.Context.Err()
	if err != nil && c.ended.Load() {
		return context.DeadlineExceeded
	}
	return err
}

func serverTLS(opts GRPCOptions) (credentials.TransportCredentials, error) {
	if opts.TLSCertFile == "" && opts.TLSKeyFile == "" {
		if opts.TLSClientCAFile != "" {
			return nil, errors.New("ext_proc TLS: a client CA needs a certificate and key too")
		}
		return nil, nil
	}
	if opts.TLSCertFile == "" || opts.TLSKeyFile == "" {
		return nil, errors.New("ext_proc TLS: set both the certificate and the key file")
	}
	cert, err := tls.LoadX509KeyPair(opts.TLSCertFile, opts.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("ext_proc TLS: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if opts.TLSClientCAFile != "" {
		pem, err := os.ReadFile(opts.TLSClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("ext_proc TLS client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ext_proc TLS client CA: no certificate in %s", opts.TLSClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(cfg), nil
}

// Shutdown stops gs gracefully: health turns NOT_SERVING (so Envoy's health
// checks move new requests elsewhere), no new streams are accepted, and the
// streams in flight may finish until ctx ends; then the rest are cut.
func Shutdown(ctx context.Context, gs *grpc.Server, hs *health.Server) {
	if hs != nil {
		hs.Shutdown()
	}
	done := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		gs.Stop()
		<-done
	}
}
