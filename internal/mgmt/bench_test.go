package mgmt_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
)

// post sends a JSON body and drains the answer (no OpenAPI validation: the
// benchmarks measure the server).
func post(b *testing.B, client *http.Client, method, url string, body []byte, hdr ...string) int {
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// BenchmarkRouteDirect is the floor the preview is compared with: the same
// routing call without HTTP and JSON.
func BenchmarkRouteDirect(b *testing.B) {
	e := newEnv(b, copyBase(b))
	gen := e.cfg.Runtime().Current()
	in := signal.Input{Text: "this is urgent, please help", UserTexts: []string{"this is urgent, please help"}, AllTexts: []string{"this is urgent, please help"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gen.Route(context.Background(), "", &engine.Request{Model: engine.ModelMoM, Input: in}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoutingPreview(b *testing.B) {
	e := newEnv(b, copyBase(b))
	body := []byte(`{"text":"this is urgent, please help"}`)
	client := e.srv.Client()
	// The first preview compiles the recipe's unreferenced signals (and
	// embeds their candidates); measure the steady state.
	post(b, client, "POST", e.srv.URL+"/api/v1/routing/preview", body)
	b.ReportAllocs()
	for b.Loop() {
		if post(b, client, "POST", e.srv.URL+"/api/v1/routing/preview", body) != 200 {
			b.Fatal("preview failed")
		}
	}
}

func BenchmarkGetConfig(b *testing.B) {
	e := newEnv(b, copyBase(b))
	client := e.srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		if post(b, client, "GET", e.srv.URL+"/api/v1/config", nil) != 200 {
			b.Fatal("GET failed")
		}
	}
}

// BenchmarkConfigPatch is one full mutation: If-Match check, merge, validate,
// atomic write of the file and the history (with fsync), compile, activate.
func BenchmarkConfigPatch(b *testing.B) {
	e := newEnv(b, copyBase(b))
	client := e.srv.Client()
	bodies := [][]byte{
		[]byte(`{"providers":{"defaults":{"default_reasoning_effort":"low"}}}`),
		[]byte(`{"providers":{"defaults":{"default_reasoning_effort":"high"}}}`),
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if post(b, client, "PATCH", e.srv.URL+"/api/v1/config", bodies[i%2], "If-Match", e.cfg.ETag()) != 200 {
			b.Fatal("PATCH failed")
		}
		i++
	}
}

func BenchmarkClassifyIntent(b *testing.B) {
	e := newEnv(b, copyBase(b))
	body := []byte(`{"text":"Solve the integral of x squared and prove the derivative rule"}`)
	client := e.srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		if post(b, client, "POST", e.srv.URL+"/api/v1/diagnostics/classify/intent", body) != 200 {
			b.Fatal("intent failed")
		}
	}
}
