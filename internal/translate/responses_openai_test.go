package translate_test

import (
	"encoding/json"
	"errors"
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

func TestResponsesToChatFromHistory(t *testing.T) {
	history := func(id string) ([]json.RawMessage, error) {
		if id != "resp_prev" {
			return nil, errors.New("unknown " + id)
		}
		return translate.TurnItems([]byte(`[{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"before"}]}]`),
			[]byte(`{"output":[{"id":"msg_2","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"answer","annotations":[]}]}]}`), true)
	}
	chat, r, err := translate.ResponsesToChatFrom([]byte(`{"model":"m","instructions":"S","previous_response_id":"resp_prev","input":"now"}`), history)
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Messages []map[string]any }
	json.Unmarshal(chat, &c)
	if len(c.Messages) != 4 || c.Messages[0]["role"] != "system" || c.Messages[2]["role"] != "assistant" || c.Messages[3]["content"] != "now" {
		t.Fatalf("messages %s", chat)
	}
	if !r.Store || r.PreviousResponseID != "resp_prev" || len(r.Input) != 1 || !strings.Contains(string(r.Input[0]), `"id":"msg_`) {
		t.Fatalf("request %+v %s", r, r.Input)
	}
	input, err := r.StoredInput()
	if err != nil || !strings.Contains(string(input), `"text":"now"`) || strings.Contains(string(input), "before") {
		t.Fatalf("stored input %s %v: want this turn's only", input, err)
	}
	items, err := translate.TurnItems(input, []byte(`{"output":[{"id":"msg_3","type":"message","role":"assistant","content":[{"type":"output_text","text":"later"}]}]}`), true)
	if err != nil || len(items) != 2 || !strings.Contains(string(items[1]), "later") {
		t.Fatalf("turn items %s %v", items, err)
	}
	if items, _ := translate.TurnItems(input, nil, false); len(items) != 1 {
		t.Fatalf("turn items without output: %s", items)
	}
	if _, _, err := translate.ResponsesToChatFrom([]byte(`{"model":"m","previous_response_id":"resp_x","input":"now"}`), history); err == nil {
		t.Fatal("an unknown previous_response_id is accepted")
	}
	if _, r, _ := translate.ResponsesToChatFrom([]byte(`{"model":"m","store":false,"input":"now"}`), history); r.Store {
		t.Fatal("store:false is to be kept")
	}
	if _, r, _ := translate.ResponsesToChat([]byte(`{"model":"m","input":"now"}`)); r.Store {
		t.Fatal("without a store nothing is to be kept")
	}
}
