package reasoning

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/junction-router/junction/recipes"
)

func ptr[T any](v T) *T { return &v }

func TestResolveEffortPrecedence(t *testing.T) {
	fam := &recipes.ReasoningFamily{Type: recipes.FamilyReasoningEffort, Parameter: "reasoning_effort"}
	tests := []struct {
		name     string
		ref      recipes.ModelRef
		defaults recipes.ProviderDefaults
		want     Mode
	}{
		{"modelRef wins", recipes.ModelRef{UseReasoning: ptr(true), ReasoningEffort: "high"}, recipes.ProviderDefaults{DefaultReasoningEffort: "low"}, Mode{Enabled: true, Effort: "high"}},
		{"then default", recipes.ModelRef{UseReasoning: ptr(true)}, recipes.ProviderDefaults{DefaultReasoningEffort: "low"}, Mode{Enabled: true, Effort: "low"}},
		{"then medium", recipes.ModelRef{UseReasoning: ptr(true)}, recipes.ProviderDefaults{}, Mode{Enabled: true, Effort: "medium"}},
		{"unset is off", recipes.ModelRef{}, recipes.ProviderDefaults{}, Mode{}},
		{"off has no effort", recipes.ModelRef{UseReasoning: ptr(false), ReasoningEffort: "high"}, recipes.ProviderDefaults{}, Mode{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(tt.ref, tt.defaults, "gpt", fam)
			if got.Enabled != tt.want.Enabled || got.Effort != tt.want.Effort || got.Family != "gpt" {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name string
		in   string
		mode Mode
		want string
	}{
		{"kwargs on", `{}`, Mode{Enabled: true, Type: recipes.FamilyChatTemplateKwargs, Param: "enable_thinking"}, `{"chat_template_kwargs":{"enable_thinking":true}}`},
		{"kwargs off is explicit false", `{}`, Mode{Type: recipes.FamilyChatTemplateKwargs, Param: "thinking"}, `{"chat_template_kwargs":{"thinking":false}}`},
		{"kwargs keeps client keys", `{"chat_template_kwargs":{"x":1,"thinking":true}}`, Mode{Type: recipes.FamilyChatTemplateKwargs, Param: "thinking"}, `{"chat_template_kwargs":{"thinking":false,"x":1}}`},
		{"kwargs replaces a non-object", `{"chat_template_kwargs":"junk"}`, Mode{Enabled: true, Type: recipes.FamilyChatTemplateKwargs, Param: "thinking"}, `{"chat_template_kwargs":{"thinking":true}}`},
		{"effort on", `{}`, Mode{Enabled: true, Effort: "high", Type: recipes.FamilyReasoningEffort, Param: "reasoning_effort"}, `{"reasoning_effort":"high"}`},
		{"effort off removes", `{"reasoning_effort":"high"}`, Mode{Type: recipes.FamilyReasoningEffort, Param: "reasoning_effort"}, `{}`},
		{"no family leaves body", `{"reasoning_effort":"low"}`, Mode{Enabled: true, Effort: "high"}, `{"reasoning_effort":"low"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.in), &fields); err != nil {
				t.Fatal(err)
			}
			if err := Apply(fields, tt.mode); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(fields)
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestApplyKwargsAsMarshalled checks that chat_template_kwargs written without
// the client's kwargs (the path that skips the map) is byte for byte what
// json.Marshal writes, for plain and escaped parameter names.
func TestApplyKwargsAsMarshalled(t *testing.T) {
	for _, param := range []string{"enable_thinking", "thinking", "", "a.b-c_1", "<b>", `q"uote`, "é", "a b"} {
		for _, on := range []bool{true, false} {
			fields := map[string]json.RawMessage{}
			if err := Apply(fields, Mode{Type: recipes.FamilyChatTemplateKwargs, Param: param, Enabled: on}); err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(map[string]json.RawMessage{param: json.RawMessage(strconv.FormatBool(on))})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(fields["chat_template_kwargs"]); got != string(want) {
				t.Errorf("param %q enabled %v: got %s, json.Marshal writes %s", param, on, got, want)
			}
		}
	}
}
