package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/junction-router/junction/internal/demobackend"
)

func demoCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlags("demo-backend", stderr)
	listen := fs.String("listen", "127.0.0.1:18001", "address to listen on")
	latency := fs.Duration("latency", 0, "wait this long before answering")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	srv := &http.Server{
		Addr:              *listen,
		Handler:           demobackend.New(demobackend.Options{Latency: *latency}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(stderr, "demo backend listening on http://%s (OpenAI-compatible; says which model answered)\n", *listen)
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
