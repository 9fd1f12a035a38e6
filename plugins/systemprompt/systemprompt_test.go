package systemprompt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
)

// The full behaviour is checked in plugins/builtin, where the same fixtures
// run this code natively and compiled as the module (TestModulesMatchNative).

func run(t *testing.T, config, messages string) (string, *Result) {
	t.Helper()
	c, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := chatmsg.Parse(json.RawMessage(messages))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Run(msgs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chatmsg.Apply(chatmsg.Raws(msgs), r.Edits)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	return string(b), r
}

func TestModes(t *testing.T) {
	got, _ := run(t, `{"system_prompt":"P"}`, `[{"role":"system","name":"n","content":"Old."},{"role":"user","content":"hi"}]`)
	if got != `[{"role":"system","name":"n","content":"P\n\nOld."},{"role":"user","content":"hi"}]` {
		t.Errorf("insert: %s", got)
	}
	got, _ = run(t, `{"system_prompt":"P","mode":"replace"}`, `[{"role":"system","content":[{"type":"text","text":"Old."}]}]`)
	if got != `[{"role":"system","content":"P"}]` {
		t.Errorf("replace: %s", got)
	}
	got, _ = run(t, `{"system_prompt":"P"}`, `[{"role":"user","content":"hi"}]`)
	if got != `[{"role":"system","content":"P"},{"role":"user","content":"hi"}]` {
		t.Errorf("no system message: %s", got)
	}
	if _, r := run(t, `{"system_prompt":"P","enabled":false}`, `[]`); !r.Skipped {
		t.Error("enabled: false did not skip")
	}
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{}`:                                 "configuration.system_prompt is required",
		`{"system_prompt":" "}`:              "must not be empty",
		`{"system_prompt":"x","mode":"add"}`: "configuration.mode",
		`{"system_prompt":"x","prompt":"y"}`: "configuration.prompt",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}

func TestJoinedString(t *testing.T) {
	tricky := []string{"", "a", "You are helpful.", `"q" \ /`, "<b>&amp;</b>", "\x00\x01\x1f\x7f\b\f\n\r\t",
		"ü 中文 🙂", "\u2028\u2029", "\xff\xfe", "\xe2\x80", strings.Repeat("\"", 40), strings.Repeat("y", 300)}
	for _, a := range tricky {
		for _, b := range tricky {
			if got, want := string(joinedString(a, b)), string(chatmsg.String(a+"\n\n"+b)); got != want {
				t.Errorf("%q, %q: %s, want %s", a, b, got, want)
			}
		}
	}
}
