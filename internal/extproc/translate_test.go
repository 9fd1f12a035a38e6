package extproc_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/junction-router/junction/internal/extproc/envoytest"
)

// The answer modes an operator may configure: buffered (the example
// configuration), streamed and full duplex.
var answerModes = map[string]envoytest.Config{
	"buffered":    envoytest.Standard,
	"streamed":    {RequestBody: envoytest.Buffered, ResponseBody: envoytest.Streamed, AllowModeOverride: true},
	"full duplex": {RequestBody: envoytest.Buffered, ResponseBody: envoytest.FullDuplex, AllowModeOverride: true},
}

func responsesReq(body string) envoytest.Request {
	r := chat(body)
	r.Path = "/v1/responses"
	return r
}

// chunksOf decodes a chat event stream.
func chunksOf(t *testing.T, body []byte) (acc openai.ChatCompletionAccumulator, done bool) {
	t.Helper()
	for _, ev := range strings.Split(string(body), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		acc.AddChunk(c)
	}
	return acc, done
}

// responseEvents decodes a Responses API event stream: the text deltas and
// the final response.
func responseEvents(t *testing.T, body []byte) (text string, final responses.Response, names []string) {
	t.Helper()
	var sb strings.Builder
	for _, ev := range strings.Split(string(body), "\n\n") {
		lines := strings.Split(ev, "\n")
		if len(lines) < 2 {
			continue
		}
		name, _ := strings.CutPrefix(lines[0], "event: ")
		data, _ := strings.CutPrefix(lines[1], "data: ")
		names = append(names, name)
		var u responses.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(data), &u); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		switch u.Type {
		case "response.output_text.delta":
			sb.WriteString(u.Delta)
		case "response.completed":
			final = u.Response
		}
	}
	return sb.String(), final, names
}

func TestAnthropicUpstreamBehindEnvoy(t *testing.T) {
	e := newEnv(t)
	for name, cfg := range answerModes {
		t.Run(name, func(t *testing.T) {
			s := e.open(cfg)
			out, err := s.SendRequest(chat(`{"model":"claude","max_tokens":100,"messages":[{"role":"system","content":"S"},{"role":"user","content":"hello"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			up := out.Upstream
			if up == nil || up.Headers.Get(":path") != "/v1/messages" || up.Headers.Get("anthropic-version") != "2023-06-01" ||
				!bytes.Contains(up.Body, []byte(`"system":[{"type":"text","text":"S"}]`)) {
				t.Fatalf("upstream %+v", out)
			}
			resp, err := s.SendResponse(e.answer(up, 40))
			if err != nil {
				t.Fatal(err)
			}
			var cc openai.ChatCompletion
			if err := json.Unmarshal(resp.Downstream.Body, &cc); err != nil {
				t.Fatalf("%s: %v", resp.Downstream.Body, err)
			}
			if !strings.HasPrefix(cc.Choices[0].Message.Content, "[demo:claude anthropic]") || cc.Usage.CompletionTokens == 0 ||
				!bytes.Contains(resp.Downstream.Body, []byte(`"routing_metadata"`)) {
				t.Fatalf("answer %s", resp.Downstream.Body)
			}
			if cl := resp.Downstream.Headers.Get("content-length"); cl != "" && cl != strconv.Itoa(len(resp.Downstream.Body)) {
				t.Fatalf("content-length %s for %d bytes", cl, len(resp.Downstream.Body))
			}
			s.Close()

			// Streamed: Messages API events become chat chunks.
			s = e.open(cfg)
			out, err = s.SendRequest(chat(`{"model":"claude","stream":true,"messages":[{"role":"user","content":"hello"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err = s.SendResponse(e.answer(out.Upstream, 50))
			if err != nil {
				t.Fatal(err)
			}
			acc, done := chunksOf(t, resp.Downstream.Body)
			if !done || !strings.HasPrefix(acc.Choices[0].Message.Content, "[demo:claude anthropic]") || acc.Usage.CompletionTokens != 0 {
				t.Fatalf("stream %s", resp.Downstream.Body)
			}
			s.Close()

			// A Messages API error reaches the client in the OpenAI shape.
			s = e.open(cfg)
			if _, err = s.SendRequest(chat(`{"model":"claude","messages":[{"role":"user","content":"hello"}]}`)); err != nil {
				t.Fatal(err)
			}
			body := []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			resp, err = s.SendResponse(envoytest.Response{Status: 529, Body: body,
				Headers: envoytest.H("content-type", "application/json", "content-length", strconv.Itoa(len(body)))})
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Downstream.Body) != `{"error":{"code":null,"message":"Overloaded","param":null,"type":"overloaded_error"}}` {
				t.Fatalf("error %s", resp.Downstream.Body)
			}
			s.Close()
		})
	}
}

func TestResponsesBehindEnvoy(t *testing.T) {
	e := newEnv(t)
	for name, cfg := range answerModes {
		t.Run(name, func(t *testing.T) {
			for _, model := range []string{"MoM", "claude"} {
				s := e.open(cfg)
				out, err := s.SendRequest(responsesReq(`{"model":"` + model + `","instructions":"S","input":"hello there"}`))
				if err != nil {
					t.Fatal(err)
				}
				if out.Upstream == nil {
					t.Fatalf("%s: answered %s", model, out.Immediate.GetBody())
				}
				resp, err := s.SendResponse(e.answer(out.Upstream, 60))
				if err != nil {
					t.Fatal(err)
				}
				var r responses.Response
				if err := json.Unmarshal(resp.Downstream.Body, &r); err != nil || r.Object != "response" || r.Status != "completed" ||
					!strings.Contains(r.OutputText(), `you said: "hello there"`) || r.Usage.OutputTokens == 0 {
					t.Fatalf("%s: %s %v", model, resp.Downstream.Body, err)
				}
				s.Close()

				s = e.open(cfg)
				out, err = s.SendRequest(responsesReq(`{"model":"` + model + `","input":"hello there","stream":true}`))
				if err != nil {
					t.Fatal(err)
				}
				resp, err = s.SendResponse(e.answer(out.Upstream, 70))
				if err != nil {
					t.Fatal(err)
				}
				text, final, names := responseEvents(t, resp.Downstream.Body)
				if !strings.Contains(text, `you said: "hello there"`) || final.OutputText() != text || final.Usage.TotalTokens == 0 ||
					names[0] != "response.created" || names[len(names)-1] != "response.completed" {
					t.Fatalf("%s stream: %q %v\n%s", model, text, names, resp.Downstream.Body)
				}
				s.Close()
			}
			// A fast response is answered at once, as a response.
			s := e.open(cfg)
			out, err := s.SendRequest(responsesReq(`{"model":"MoM","input":"a canned one"}`))
			if err != nil {
				t.Fatal(err)
			}
			var r responses.Response
			if out.Immediate == nil || json.Unmarshal(out.Immediate.GetBody(), &r) != nil || r.OutputText() != "a canned answer" {
				t.Fatalf("fast response %+v", out)
			}
			s.Close()
		})
	}
}
