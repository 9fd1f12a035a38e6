package translate_test

import (
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/translate"
)

func TestResponsesToChatFields(t *testing.T) {
	chat, r, err := translate.ResponsesToChat([]byte(`{"model":"m","instructions":"S","input":[
	  {"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://x/img.png"}]},
	  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],
	  "max_output_tokens":10,"temperature":0.3,"parallel_tool_calls":false,"store":true,"stream":true,
	  "text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"},"strict":true}},
	  "tool_choice":{"type":"function","name":"f"},"tools":[{"type":"function","name":"f"}],"seed":3}`))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, chat, `{"model":"m","max_completion_tokens":10,"temperature":0.3,"parallel_tool_calls":false,"stream":true,
	  "stream_options":{"include_usage":true},"seed":3,
	  "messages":[{"role":"system","content":"S"},
	    {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/img.png"}}]},
	    {"role":"assistant","content":[{"type":"text","text":"ok"}]}],
	  "response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"},"strict":true}},
	  "tool_choice":{"type":"function","function":{"name":"f"}},"tools":[{"type":"function","function":{"name":"f"}}]}`)
	if !r.Stream || r.Model != "m" || *r.Instructions != "S" || r.ParallelToolCalls || !strings.HasPrefix(r.ID, "resp_") {
		t.Fatalf("%+v", r)
	}
}

func TestResponsesToChatImageFileID(t *testing.T) {
	chat, _, err := translate.ResponsesToChat([]byte(`{"model":"m","input":[{"role":"user","content":[
	  {"type":"input_text","text":"what is this?"},{"type":"input_image","file_id":"file-abc","detail":"low"},
	  {"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"high"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// The data plane inlines the file (a chat image_url part naming it).
	jsonEqual(t, chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},
	  {"type":"image_url","image_url":{"file_id":"file-abc","detail":"low"}},
	  {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"high"}}]}]}`)
	_, _, err = translate.ResponsesToChat([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`))
	if err == nil || !strings.Contains(err.Error(), "image_url or file_id") {
		t.Errorf("input_image without an image: %v", err)
	}
}
