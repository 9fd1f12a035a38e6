package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
)

func msgs(t *testing.T, raw string) []chatmsg.Message {
	t.Helper()
	m, err := chatmsg.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const toolList = `[
 {"type":"function","function":{"name":"get_weather","description":"weather forecast for a city"}},
 {"type":"function","function":{"name":"send_email","description":"send an email message"}},
 {"type":"function","function":{"name":"search_web","description":"search the web"}}]`

func names(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var ts []struct {
		Function struct{ Name string } `json:"function"`
	}
	if err := json.Unmarshal(raw, &ts); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range ts {
		out = append(out, x.Function.Name)
	}
	return strings.Join(out, ",")
}

func TestStaticPolicy(t *testing.T) {
	for _, tc := range []struct {
		config, choice, want string
		deleted, choiceGone  bool
	}{
		{config: `{"allow":["get_weather","search_web"]}`, want: "get_weather,search_web"},
		{config: `{"block":["send_email"]}`, want: "get_weather,search_web"},
		{config: `{"block":["send_email"]}`, choice: `{"type":"function","function":{"name":"send_email"}}`, want: "get_weather,search_web", choiceGone: true},
		{config: `{"block":["send_email"]}`, choice: `{"type":"function","function":{"name":"get_weather"}}`, want: "get_weather,search_web"},
		{config: `{"allow":["nothing_here"]}`, choice: `"required"`, deleted: true, choiceGone: true},
		{config: `{"allow":["nothing_here"]}`, choice: `"none"`, deleted: true},
	} {
		c, err := ParseConfig([]byte(tc.config))
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(Input{Messages: msgs(t, `[{"role":"user","content":"hi"}]`), Tools: json.RawMessage(toolList), ToolChoice: json.RawMessage(tc.choice)})
		if err != nil {
			t.Fatal(err)
		}
		if res.DeleteTools != tc.deleted || res.DeleteToolChoice != tc.choiceGone {
			t.Errorf("%s %s: delete tools %v choice %v", tc.config, tc.choice, res.DeleteTools, res.DeleteToolChoice)
		}
		if !tc.deleted && names(t, res.SetTools) != tc.want {
			t.Errorf("%s: tools %s, want %s", tc.config, names(t, res.SetTools), tc.want)
		}
		if res.Offered != 3 {
			t.Errorf("offered %d", res.Offered)
		}
	}
}

// bagEmbed embeds a text as counts of a few words, enough to make
// similarities meaningful and predictable.
func bagEmbed(texts []string) ([][]float32, error) {
	vocab := []string{"weather", "email", "web", "search", "rain", "forecast", "city"}
	out := make([][]float32, len(texts))
	for i, s := range texts {
		v := make([]float32, len(vocab))
		for j, w := range vocab {
			v[j] = float32(strings.Count(strings.ToLower(s), w))
		}
		out[i] = v
	}
	return out, nil
}

func TestSemanticSelection(t *testing.T) {
	c, err := ParseConfig([]byte(`{"semantic":{"top_k":1,"threshold":0.3}}`))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Messages: msgs(t, `[{"role":"user","content":"will it rain? what's the weather forecast in my city"}]`), Tools: json.RawMessage(toolList), Embed: bagEmbed}
	res, err := c.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if names(t, res.SetTools) != "get_weather" || res.Selected != 1 {
		t.Fatalf("selected %s (%d): %s", names(t, res.SetTools), res.Selected, res.Detail)
	}
	if res.Scores["get_weather"] <= res.Scores["send_email"] {
		t.Errorf("scores %v", res.Scores)
	}

	// Preview: no embedder, so the static policy only, and the report says so.
	in.Embed = nil
	res, err = c.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() || res.SemanticSkipped == "" || !strings.Contains(res.Detail, "probe") {
		t.Fatalf("preview changed the request or did not say why: %+v", res)
	}

	// Nothing similar enough: fallback_to_empty (default true) offers no tool.
	in.Embed = bagEmbed
	in.Messages = msgs(t, `[{"role":"user","content":"tell me a joke"}]`)
	res, _ = c.Run(in)
	if !res.DeleteTools {
		t.Errorf("no tool reached the threshold but tools were kept: %+v", res)
	}
	c2, _ := ParseConfig([]byte(`{"semantic":{"threshold":0.3,"fallback_to_empty":false}}`))
	res, _ = c2.Run(in)
	if res.Changed() {
		t.Errorf("fallback_to_empty false should keep the tools: %+v", res)
	}

	in.Embed = func([]string) ([][]float32, error) { return nil, errors.New("no embedder") }
	if _, err := c.Run(in); err == nil || !strings.Contains(err.Error(), "no embedder") {
		t.Errorf("embed failure: %v", err)
	}
}

func TestStripToolHistory(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"strip_tool_history":true}`))
	m := msgs(t, `[
	 {"role":"system","content":"s"},
	 {"role":"user","content":"q1"},
	 {"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"a","content":"r1"},
	 {"role":"assistant","content":"answer","tool_calls":[{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"b","content":"r2"},
	 {"role":"user","content":"q2"},
	 {"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"c","content":"r3"}]`)
	res, err := c.Run(Input{Messages: m})
	if err != nil {
		t.Fatal(err)
	}
	got, err := chatmsg.Apply(chatmsg.Raws(m), res.Edits)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := chatmsg.Parse(mustJSON(got))
	var roles []string
	for _, x := range after {
		roles = append(roles, x.Role+"/"+x.Text)
	}
	want := "system/s user/q1 assistant/answer user/q2 assistant/ tool/r3"
	if strings.Join(roles, " ") != want {
		t.Fatalf("got %s\nwant %s", strings.Join(roles, " "), want)
	}
	if len(after[2].ToolCallIDs) != 0 {
		t.Errorf("kept assistant message still has tool_calls: %s", after[2].Raw)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"allow":["a"],"block":["a"]}`: "configuration.allow[0]",
		`{"semantic":{"top_k":0.5}}`:    "configuration.semantic.top_k",
		`{"semantic":{"threshold":2}}`:  "configuration.semantic.threshold",
		`{"semantic":{"topk":2}}`:       "configuration.semantic.topk",
		`{"allow":"x"}`:                 "configuration.allow",
		`[]`:                            "configuration must be an object",
		`{"strip_tool_history":"yes"}`:  "configuration.strip_tool_history",
	} {
		_, err := ParseConfig([]byte(cfg))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to name %s", cfg, err, want)
		}
	}
}
