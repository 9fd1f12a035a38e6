package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/junction-router/junction/internal/demobackend"
)

// TestStreamArrivesChunkByChunk: the upstream holds the rest of its answer
// until the client has seen the first chunk, so a gateway that buffered would
// hang here instead of passing.
func TestStreamArrivesChunkByChunk(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	e.ups["big"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(content string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"big\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", content)
			fl.Flush()
		}
		chunk("first ")
		select {
		case <-release:
		case <-time.After(5 * time.Second):
			return // the test has failed; do not hang
		}
		chunk("second ")
		chunk("third")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"big\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))

	var httpResp *http.Response
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), userMsg("prove it"), option.WithResponseInto(&httpResp))
	acc := openai.ChatCompletionAccumulator{}
	n := 0
	deadline := time.AfterFunc(3*time.Second, func() { close(release) }) // unblock on failure
	for stream.Next() {
		chunk := stream.Current()
		if n == 0 {
			if !deadline.Stop() {
				t.Fatal("the first chunk arrived only after the upstream finished: the gateway buffers")
			}
			close(release)
		}
		if len(chunk.Choices) == 0 {
			t.Errorf("client did not ask include_usage but got a usage chunk: %s", chunk.RawJSON())
		}
		acc.AddChunk(chunk)
		n++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "first second third" {
		t.Fatalf("content %q", got)
	}
	if n != 3 {
		t.Errorf("client saw %d chunks, want 3", n)
	}
	if httpResp.Header.Get("x-selected-model") != "big" || httpResp.Header.Get("x-junction-decision") != "hard_math" {
		t.Errorf("routing headers on a stream: %v", httpResp.Header)
	}
	// The gateway asked for usage on the client's behalf...
	up := e.ups["big"].last(t)
	so, _ := up.Body["stream_options"].(map[string]any)
	if so["include_usage"] != true {
		t.Errorf("upstream stream_options = %v, want include_usage true", up.Body["stream_options"])
	}
	// ...and metered it.
	if v := e.scalar("llm_model_completion_tokens_total", map[string]string{"model": "big"}); v != 3 {
		t.Errorf("completion tokens = %v, want 3", v)
	}
	if v := e.scalar("llm_model_ttft_seconds", map[string]string{"model": "big"}); v != 1 {
		t.Errorf("ttft observations = %v", v)
	}
	if v := e.scalar("llm_model_tpot_seconds", map[string]string{"model": "big"}); v != 1 {
		t.Errorf("tpot observations = %v", v)
	}
}

func TestStreamWithIncludeUsage(t *testing.T) {
	e := newEnv(t)
	params := userMsg("hello")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), params)
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 5 {
		t.Errorf("only %d chunks", chunks)
	}
	if acc.Usage.CompletionTokens == 0 || acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens {
		t.Errorf("usage %+v", acc.Usage)
	}
	if !strings.HasPrefix(acc.Choices[0].Message.Content, "[demo:small] reasoning off (chat_template_kwargs.enable_thinking=false)") {
		t.Errorf("content %q", acc.Choices[0].Message.Content)
	}
	// The client's other stream options are kept when usage is forced.
	resp, _ := e.post("/v1/chat/completions", `{"model":"MoM","stream":true,"stream_options":{"continuous_usage_stats":false},"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	so := e.ups["small"].last(t).Body["stream_options"].(map[string]any)
	if so["include_usage"] != true || so["continuous_usage_stats"] != false {
		t.Errorf("stream_options upstream = %v", so)
	}
}

func TestStreamBreaksMidway(t *testing.T) {
	e := newEnv(t)
	e.ups["small"].setHandler(demobackend.New(demobackend.Options{FailAfterChunks: 2}))
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), userMsg("hello"))
	n := 0
	for stream.Next() {
		n++
	}
	if n != 2 || stream.Err() == nil || !strings.Contains(stream.Err().Error(), "broke off") {
		t.Fatalf("chunks %d err %v; want 2 chunks then an error naming the broken upstream", n, stream.Err())
	}
	if v := e.errors("small", "upstream_5xx"); v != 1 {
		t.Errorf("upstream_5xx = %v", v)
	}
}

// TestStreamIdleTimeout: a stream that goes quiet for longer than the timeout
// is cut with an error event; a slow but steady one is not.
func TestStreamIdleTimeout(t *testing.T) {
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, `- {base_url: "`+"{{small}}", `- {timeout: 300ms, base_url: "`+"{{small}}", 1)
	}))
	e.ups["small"].setHandler(demobackend.New(demobackend.Options{ChunkDelay: 100 * time.Millisecond}))
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), userMsg("hello"))
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("steady stream longer than the timeout was cut: %v", err)
	}

	e.ups["small"].setHandler(demobackend.New(demobackend.Options{ChunkDelay: time.Second}))
	stream = e.client.Chat.Completions.NewStreaming(context.Background(), userMsg("hello"))
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "sent nothing for 300ms") {
		t.Fatalf("stalled stream: %v", err)
	}
	if v := e.errors("small", "timeout"); v != 1 {
		t.Errorf("timeout errors = %v", v)
	}
}

// TestStreamTPOTIsCompletionLatencyPerToken: llm_model_tpot_seconds on a
// stream is the completion latency divided by the completion tokens, as the
// spec defines it; the wait for the first token is part of that latency.
func TestStreamTPOTIsCompletionLatencyPerToken(t *testing.T) {
	e := newEnv(t)
	const firstTokenWait = 300 * time.Millisecond
	e.ups["big"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		time.Sleep(firstTokenWait)
		for _, c := range []string{"a ", "b ", "c"} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"big\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", c)
		}
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"big\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), userMsg("prove it"))
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if n := e.scalar("llm_model_tpot_seconds", map[string]string{"model": "big"}); n != 1 {
		t.Fatalf("tpot observations = %v", n)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == "llm_model_tpot_seconds" {
			for _, m := range mf.GetMetric() {
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	// At least the first token's wait over three tokens (measured after the
	// first token it would be about zero).
	if min := firstTokenWait.Seconds() / 3; sum < min {
		t.Errorf("tpot = %vs, want at least %vs", sum, min)
	}
}
