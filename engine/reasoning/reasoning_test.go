package reasoning

import (
	"encoding/json"
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
