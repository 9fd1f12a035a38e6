package extproc_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/chat/chattest"

	"github.com/junction-router/junction/internal/plugin/recorder"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/plugin"
)

// withRecorded adds a decision (keyword "recordme", model small) whose
// plugin is the recorder, and runs plugins with it.
func withRecorded(rec *recorder.Recorder) func(*envOptions) {
	return func(o *envOptions) {
		o.opts.Plugins = plugin.New(rec)
		o.edit = func(y string) string {
			y = strings.Replace(y, "        - {name: proof, keywords: [\"prove\"]}\n", "        - {name: proof, keywords: [\"prove\"]}\n        - {name: recordme, keywords: [\"recordme\"]}\n", 1)
			return strings.Replace(y, "      - name: gated\n", "      - name: recorded\n        priority: 135\n        rules: {operator: OR, conditions: [{type: keyword, name: recordme}]}\n        modelRefs: [{model: small}]\n        plugins: [{type: recorder}]\n      - name: gated\n", 1)
		}
	}
}

// Behind Envoy, a streamed answer reaches the response phase once its last
// piece went back to Envoy, assembled into a chat.completion, whichever mode
// Envoy sends the answer's body in, from a Messages API backend (translated),
// and for a Responses API client.
func TestStreamedAnswerReachesResponsePhaseBehindEnvoy(t *testing.T) {
	rec := &recorder.Recorder{}
	e := newEnv(t, withRecorded(rec))
	n := 0
	for name, cfg := range answerModes {
		for _, req := range []envoytest.Request{
			chat(userBody("recordme "+name, `"stream":true`)),
			chat(`{"model":"claude","stream":true,"messages":[{"role":"user","content":"recordme ` + name + `"}]}`), // Messages API backend
			{Method: "POST", Path: "/v1/responses", Headers: envoytest.H("content-type", "application/json"),
				Body: []byte(`{"model":"MoM","stream":true,"input":"recordme ` + name + `"}`)},
		} {
			s := e.open(cfg)
			out, err := s.SendRequest(req)
			if err != nil || out.Upstream == nil {
				t.Fatalf("%s: %v %+v", name, err, out)
			}
			ro, err := s.SendResponse(e.answer(out.Upstream, 40))
			if err != nil || ro.Downstream == nil {
				t.Fatalf("%s: %v %+v", name, err, ro)
			}
			s.Close()
			n++
			eventually(t, name+": the response phase", func() bool { return len(rec.Answers()) == n })
			got := chattest.CompletionContent(t, rec.Answers()[n-1])
			if req.Path == "/v1/chat/completions" {
				content, done := chattest.StreamContent(t, ro.Downstream.Body)
				if !done || got != content {
					t.Fatalf("%s: the response phase got %q; the client saw %q (done %v)", name, got, content, done)
				}
			} else if !strings.Contains(got, "recordme "+name) || !bytes.Contains(ro.Downstream.Body, []byte("response.completed")) {
				t.Fatalf("%s (responses): the response phase got %q; the client saw %s", name, got, ro.Downstream.Body)
			}
		}
	}
	if v := e.scalar("junction_response_phase_skipped_total", nil); v != 0 {
		t.Fatalf("%v streams counted as skipped", v)
	}
}

// withBody replaces an answer's body, keeping its content-length true.
func withBody(resp envoytest.Response, body []byte) envoytest.Response {
	h := envoytest.Headers{}
	for _, kv := range resp.Headers {
		if kv.Key != "content-length" {
			h = append(h, kv)
		}
	}
	resp.Headers = append(h, envoytest.Header{Key: "content-length", Value: strconv.Itoa(len(body))})
	resp.Body, resp.Pieces = body, nil
	return resp
}

// A stream that ends without the upstream's [DONE] and one Envoy abandons
// mid-way (the client or the upstream went away) never reach the response
// phase; each is counted (a stream past the bound: stream_huge_norace_test.go).
func TestIncompleteStreamsSkipResponsePhaseBehindEnvoy(t *testing.T) {
	rec := &recorder.Recorder{}
	e := newEnv(t, withRecorded(rec))
	skipped := func(reason string) float64 {
		return e.scalar("junction_response_phase_skipped_total", map[string]string{"reason": reason})
	}

	// Cut before [DONE]: Envoy relays the end, Junction adds [DONE] for the
	// client, the answer is not given to plugins.
	for name, cfg := range answerModes {
		s := e.open(cfg)
		out, err := s.SendRequest(chat(userBody("recordme cut", `"stream":true`)))
		if err != nil {
			t.Fatal(err)
		}
		resp := e.answer(out.Upstream, 0)
		resp = withBody(resp, resp.Body[:bytes.Index(resp.Body, []byte("data: [DONE]"))])
		ro, err := s.SendResponse(resp)
		if err != nil || ro.Downstream == nil {
			t.Fatalf("%s: %v", name, err)
		}
		s.Close()
		if _, done := chattest.StreamContent(t, ro.Downstream.Body); !done {
			t.Fatalf("%s: the client's stream was not ended with [DONE]", name)
		}
	}
	eventually(t, "the cut streams counted", func() bool { return skipped(dataplane.SkipIncomplete) == float64(len(answerModes)) })

	// Abandoned after the first piece: Envoy resets the stream.
	s := e.open(answerModes["streamed"])
	out, err := s.SendRequest(chat(userBody("recordme abandoned", `"stream":true`)))
	if err != nil {
		t.Fatal(err)
	}
	resp := e.answer(out.Upstream, 0)
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: append(envoytest.Headers{{Key: ":status", Value: "200"}}, resp.Headers...).Proto()},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: resp.Body[:len(resp.Body)/2]},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	s.Abort()
	eventually(t, "the abandoned stream counted", func() bool { return skipped(dataplane.SkipIncomplete) == float64(len(answerModes)+1) })

	if got := rec.Answers(); len(got) != 0 {
		t.Fatalf("the response phase ran for %d incomplete streams", len(got))
	}
}
