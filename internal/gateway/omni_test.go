package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// omniPNG is a 1×1 PNG, as an omni backend answers with it.
const omniPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="

// omniBackend answers like vLLM-Omni serving an image model on
// /chat/completions: the message's content is a list of parts, a text part
// and the image as a data URL; streamed, the image is one delta.
func omniBackend() http.Handler {
	parts := `[{"type":"text","text":"Here is your cat."},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + omniPNG + `"}}]`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-omni","object":"chat.completion","created":1767225600,"model":"qwen-image","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`, parts)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`{"id":"c","object":"chat.completion.chunk","model":"qwen-image","choices":[{"index":0,"delta":{"role":"assistant","content":"Here is your cat."}}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"qwen-image","choices":[{"index":0,"delta":{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + omniPNG + `"}}]}}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"qwen-image","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
	})
}

// TestOmniImagesThroughResponses: a vllm_omni backend's images reach a
// Responses client as image_generation_call output items (whole and
// streamed), and a chat client gets the backend's content parts as they are.
func TestOmniImagesThroughResponses(t *testing.T) {
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, `{base_url: "{{small}}/v1", provider: openai}`, `{base_url: "{{small}}/v1", provider: vllm_omni}`, 1)
	}))
	e.ups["small"].setHandler(omniBackend())
	params := responses.ResponseNewParams{Model: "MoM", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("draw a cat")}}

	resp, err := e.client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.OutputText() != "Here is your cat." {
		t.Fatalf("output %+v", resp.Output)
	}
	img := resp.Output[1].AsImageGenerationCall()
	if img.Type != "image_generation_call" || img.Status != "completed" || img.Result != omniPNG || img.OutputFormat != "png" || !strings.HasPrefix(img.ID, "ig_") {
		t.Fatalf("image item %+v", img)
	}

	stream := e.client.Responses.NewStreaming(context.Background(), params)
	var types []string
	var done responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.completed" {
			done = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{"response.image_generation_call.in_progress", "response.image_generation_call.generating", "response.image_generation_call.completed"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("no %s in %v", want, types)
		}
	}
	if len(done.Output) != 2 || done.OutputText() != "Here is your cat." || done.Output[1].AsImageGenerationCall().Result != omniPNG {
		t.Fatalf("completed output %+v", done.Output)
	}

	// A part that has no Responses item is the backend's failure, named.
	e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"omni","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"input_audio","input_audio":{}}]},"finish_reason":"stop"}]}`)
	}))
	r, body := e.post("/v1/responses", `{"model":"MoM","input":"say it"}`)
	if r.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), `type \"input_audio\"`) {
		t.Fatalf("an audio part: %d %s", r.StatusCode, body)
	}
	e.ups["small"].setHandler(omniBackend())

	// The chat front end relays the parts unchanged.
	r, body = e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"draw a cat"}]}`)
	if r.StatusCode != http.StatusOK || !strings.Contains(string(body), `"image_url":{"url":"data:image/png;base64,`+omniPNG+`"}`) {
		t.Fatalf("%d %s", r.StatusCode, body)
	}
}
