package extproc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/extproc/envoytest"
)

// serveLoopback serves e's server on a loopback TCP port.
func serveLoopback(t *testing.T, e *env, opts extproc.GRPCOptions) (addr string, stop func(context.Context)) {
	t.Helper()
	gs, hs, err := extproc.NewGRPCServer(e.server, opts)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String(), func(ctx context.Context) { extproc.Shutdown(ctx, gs, hs) }
}

func TestGRPCServerHealthReflectionAndShutdown(t *testing.T) {
	e := newEnv(t)
	addr, stop := serveLoopback(t, e, extproc.GRPCOptions{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	health := healthpb.NewHealthClient(conn)
	for _, svc := range []string{"", extproc.ServiceName} {
		r, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q: %v %v", svc, r, err)
		}
	}
	rc, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	lr, err := rc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range lr.GetListServicesResponse().GetService() {
		found = found || s.GetName() == extproc.ServiceName
	}
	if !found {
		t.Errorf("reflection lists %v", lr.GetListServicesResponse().GetService())
	}
	rc.CloseSend()

	if err := envoytest.Smoke(ctx, envoytest.New(conn)); err != nil {
		t.Fatal(err)
	}

	// A stream in flight while the server stops may finish; new ones are
	// refused and health reports NOT_SERVING.
	s, err := envoytest.New(conn).Open(ctx, envoytest.Standard)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.SendRequest(chat(userBody("hi")))
	if err != nil || out.Upstream == nil {
		t.Fatalf("%v %v", out, err)
	}
	stopped := make(chan struct{})
	go func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		stop(sctx)
		close(stopped)
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := s.SendResponse(e.answer(out.Upstream, 0)); err != nil {
		t.Fatalf("the stream in flight was cut: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("graceful stop did not finish")
	}
	if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
		t.Error("the stopped server still answers")
	}
}

func TestGRPCServerTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	e := newEnv(t)
	addr, _ := serveLoopback(t, e, extproc.GRPCOptions{TLSCertFile: certFile, TLSKeyFile: keyFile})
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12})
	c, err := envoytest.Dial(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := envoytest.Smoke(ctx, c); err != nil {
		t.Fatal(err)
	}
	plain, _ := envoytest.Dial(addr)
	defer plain.Close()
	if err := envoytest.Smoke(ctx, plain); err == nil {
		t.Error("a plain-text client was served by a TLS server")
	}
	for _, bad := range []extproc.GRPCOptions{
		{TLSCertFile: certFile},
		{TLSClientCAFile: certFile},
		{TLSCertFile: certFile, TLSKeyFile: filepath.Join(dir, "missing")},
	} {
		if _, _, err := extproc.NewGRPCServer(e.server, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestLiveTarget checks a running ext_proc server, such as `junction
// serve`: JUNCTION_EXTPROC_TARGET=127.0.0.1:50051 go test -run LiveTarget ./internal/extproc/
func TestLiveTarget(t *testing.T) {
	target := os.Getenv("JUNCTION_EXTPROC_TARGET")
	if target == "" {
		t.Skip("set JUNCTION_EXTPROC_TARGET=host:port to check a running server")
	}
	c, err := envoytest.Dial(target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := envoytest.Smoke(ctx, c); err != nil {
		t.Fatal(err)
	}
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
