package extproc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

// TestResponseStoreBehindEnvoy: behind Envoy a stored response is retrieved,
// its input items listed, a next turn on another model (a Messages API
// backend) gets the earlier turn through previous_response_id, and DELETE
// removes it; on the embedded store.
func TestResponseStoreBehindEnvoy(t *testing.T) {
	store, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := newEnv(t, func(o *envOptions) { o.opts.Responses = store })

	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(responsesReq(`{"model":"MoM","input":"remember the word ocarina"}`))
	if err != nil || out.Upstream == nil {
		t.Fatalf("%v %+v", err, out)
	}
	resp, err := s.SendResponse(e.answer(out.Upstream, 60))
	if err != nil {
		t.Fatal(err)
	}
	var first responses.Response
	if err := json.Unmarshal(resp.Downstream.Body, &first); err != nil || first.ID == "" {
		t.Fatalf("%s %v", resp.Downstream.Body, err)
	}
	s.Close()

	get := func(method, path string) (int, []byte, envoytest.Headers) {
		t.Helper()
		s := e.open(envoytest.Standard)
		defer s.Close()
		out, err := s.SendRequest(envoytest.Request{Method: method, Path: path})
		if err != nil || out.Immediate == nil {
			t.Fatalf("%s %s: %v %+v", method, path, err, out)
		}
		return int(out.Immediate.GetStatus().GetCode()), out.Immediate.GetBody(), envoytest.ImmediateHeaders(out.Immediate)
	}
	if status, body, _ := get("GET", "/v1/responses/"+first.ID); status != 200 || !bytes.Contains(body, []byte(first.OutputText()[:20])) {
		t.Fatalf("retrieve: %d %s", status, body)
	}
	if status, body, _ := get("GET", "/v1/responses/"+first.ID+"/input_items?order=asc&limit=1"); status != 200 ||
		!bytes.Contains(body, []byte(`"text":"remember the word ocarina"`)) || !bytes.Contains(body, []byte(`"has_more":false`)) {
		t.Fatalf("input items: %d %s", status, body)
	}

	s = e.open(envoytest.Standard)
	out, err = s.SendRequest(responsesReq(`{"model":"claude","previous_response_id":"` + first.ID + `","input":"which word?"}`))
	if err != nil || out.Upstream == nil {
		t.Fatalf("%v %+v", err, out)
	}
	up := out.Upstream.Body
	if !bytes.Contains(up, []byte("remember the word ocarina")) || !bytes.Contains(up, []byte("which word?")) ||
		!bytes.Contains(up, []byte(`"role":"assistant"`)) {
		t.Fatalf("the Messages API backend did not get the earlier turn: %s", up)
	}
	s.Close()

	if status, body, _ := get("DELETE", "/v1/responses/"+first.ID); status != 200 || !bytes.Contains(body, []byte(`"deleted":true`)) {
		t.Fatalf("delete: %d %s", status, body)
	}
	if status, _, h := get("GET", "/v1/responses/"+first.ID); status != 404 || h.Get("x-should-retry") != "false" {
		t.Fatalf("after delete: %d", status)
	}
	if status, body, _ := get("GET", "/v1/models/claude"); status != 200 || !bytes.Contains(body, []byte(`"object":"model"`)) {
		t.Fatalf("model: %d %s", status, body)
	}
}
