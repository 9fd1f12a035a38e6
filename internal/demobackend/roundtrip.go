package demobackend

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// RoundTripper serves HTTP requests with Handler inside the process, with no
// socket: a backend_ref with provider "demo" and no base_url is served this way,
// so `junction serve` answers out of the box. The body streams through a pipe,
// so SSE chunks arrive one by one and a cancelled request context stops the
// handler, as with a real connection.
type RoundTripper struct {
	Handler http.Handler
}

// NewRoundTripper returns a RoundTripper serving New(opts).
func NewRoundTripper(opts Options) *RoundTripper { return &RoundTripper{Handler: New(opts)} }

// errAborted is what a reader sees when the handler aborted mid-answer.
var errAborted = errors.New("demo backend aborted the response")

// RoundTrip implements http.RoundTripper.
func (t *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	pr, pw := io.Pipe()
	rw := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}

	in := req.Clone(ctx)
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()
	if in.RemoteAddr == "" {
		in.RemoteAddr = "in-process"
	}
	// A cancelled request ends the body with the context's error, as
	// net/http's transport does, rather than with a clean EOF.
	stop := context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })

	go func() {
		defer stop()
		defer func() {
			if p := recover(); p != nil {
				// Any panic (http.ErrAbortHandler included) is a broken
				// connection to the client, as net/http makes it.
				rw.abort()
				pw.CloseWithError(errAborted)
				return
			}
			rw.commit()
			if err := ctx.Err(); err != nil {
				pw.CloseWithError(err)
				return
			}
			pw.Close()
		}()
		t.Handler.ServeHTTP(rw, in)
	}()

	select {
	case <-rw.ready:
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
	if rw.aborted {
		cancel()
		return nil, errAborted
	}
	return &http.Response{
		Status:        http.StatusText(rw.status),
		StatusCode:    rw.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rw.sent,
		Body:          &pipeBody{PipeReader: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}, nil
}

// pipeBody cancels the handler when the client stops reading.
type pipeBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// pipeWriter is the handler's http.ResponseWriter: headers are handed to
// RoundTrip on the first write, the body goes into the pipe.
type pipeWriter struct {
	header  http.Header
	sent    http.Header
	pw      *io.PipeWriter
	once    sync.Once
	ready   chan struct{}
	status  int
	aborted bool
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		w.sent = w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush is a no-op: the pipe hands each write to the reader as it happens.
func (w *pipeWriter) Flush() {}

func (w *pipeWriter) commit() { w.WriteHeader(http.StatusOK) }

func (w *pipeWriter) abort() {
	w.once.Do(func() {
		w.aborted = true
		close(w.ready)
	})
}
