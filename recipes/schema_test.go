package recipes

import (
	"strings"
	"testing"
)

func TestSchemaProblems(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(t *testing.T, v map[string]any)
		wantPath string
		wantCode string
		wantMsg  string
	}{
		{"unknown listener key", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/prot", 8802)
		}, "/listeners/0/prot", CodeUnknownField, `unknown field "prot"; did you mean "port"?`},
		{"unknown top-level key", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipe", []any{})
		}, "/recipe", CodeUnknownField, `did you mean "recipes"?`},
		{"unknown decision key", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/decisions/2/model_refs", []any{})
		}, "/recipes/0/decisions/2/model_refs", CodeUnknownField, `did you mean "modelRefs"?`},
		{"unknown key in leaf condition", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/decisions/0/rules/conditions/0/negate", true)
		}, "/recipes/0/decisions/0/rules/conditions/0/negate", CodeUnknownField, "a condition is either"},
		{"missing version", func(t *testing.T, v map[string]any) {
			del(t, v, "/version")
		}, "/version", CodeMissingField, `required field "version" is missing`},
		{"wrong version", func(t *testing.T, v map[string]any) {
			set(t, v, "/version", "v2")
		}, "/version", CodeInvalidValue, `must be "v1" (got "v2")`},
		{"port out of range", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/port", 70000)
		}, "/listeners/0/port", CodeInvalidValue, "between 1 and 65535"},
		{"port zero", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/extproc/port", 0)
		}, "/global/extproc/port", CodeInvalidValue, "between 1 and 65535"},
		{"port as string", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/port", "8801")
		}, "/listeners/0/port", CodeWrongType, "expected an integer, got a string"},
		{"language code is YAML boolean", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/signals/language/0/languages/0", false)
		}, "/recipes/0/signals/language/0/languages/0", CodeWrongType, `put it in quotes, for example "no"`},
		{"null value", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/pricing", nil)
		}, "/providers/models/0/pricing", CodeWrongType, "got null"},
		{"family type enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/reasoning_families/qwen3/type", "kwargs")
		}, "/providers/reasoning_families/qwen3/type", CodeInvalidValue, "must be one of chat_template_kwargs, reasoning_effort"},
		{"rule operator enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/decisions/0/rules/operator", "XOR")
		}, "/recipes/0/decisions/0/rules/operator", CodeInvalidValue, "AND, OR, NOT"},
		{"keyword operator enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/signals/keywords/0/operator", "NOT")
		}, "/recipes/0/signals/keywords/0/operator", CodeInvalidValue, "AND, OR"},
		{"leaf type enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/decisions/0/rules/conditions/0/type", "keywords")
		}, "/recipes/0/decisions/0/rules/conditions/0/type", CodeInvalidValue, "keyword, domain, pii"},
		{"leaf without name", func(t *testing.T, v map[string]any) {
			del(t, v, "/recipes/0/decisions/0/rules/conditions/0/name")
		}, "/recipes/0/decisions/0/rules/conditions/0/name", CodeMissingField, "needs type and name"},
		{"AND without conditions", func(t *testing.T, v map[string]any) {
			del(t, v, "/recipes/0/decisions/5/rules/conditions")
		}, "/recipes/0/decisions/5/rules/conditions", CodeMissingField, "needs operator and conditions"},
		{"on_unscanned enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/signals/pii/0/on_unscanned", "ignore")
		}, "/recipes/0/signals/pii/0/on_unscanned", CodeInvalidValue, "block, allow"},
		{"action enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/signals/jailbreak/0/action", "deny")
		}, "/recipes/0/signals/jailbreak/0/action", CodeInvalidValue, "route, block"},
		{"on_error enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/decisions/0/plugins/0/on_error", "ignore")
		}, "/recipes/0/decisions/0/plugins/0/on_error", CodeInvalidValue, "skip, fail"},
		{"api_format enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/api_format", "gemini")
		}, "/providers/models/0/api_format", CodeInvalidValue, "openai, anthropic"},
		{"modelRef reasoning_effort enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/decisions/1/modelRefs/0/reasoning_effort", "extreme")
		}, "/recipes/0/decisions/1/modelRefs/0/reasoning_effort", CodeInvalidValue, "low, medium, high"},
		{"default_reasoning_effort enum", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/defaults/default_reasoning_effort", "minimal")
		}, "/providers/defaults/default_reasoning_effort", CodeInvalidValue, "low, medium, high"},
		{"complexity threshold not a decimal", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/signals/complexity/0/threshold", "0.1.2")
		}, "/recipes/0/signals/complexity/0/threshold", CodeInvalidValue, "decimal string"},
		{"bad duration", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/timeout", "5 minutes")
		}, "/listeners/0/timeout", CodeInvalidValue, "invalid duration"},
		{"base_url required", func(t *testing.T, v map[string]any) {
			del(t, v, "/providers/models/0/backend_refs/0/base_url")
		}, "/providers/models/0/backend_refs/0/base_url", CodeMissingField, `unless its provider is "demo"`},
		{"no backends", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs", []any{})
		}, "/providers/models/0/backend_refs", CodeInvalidValue, "must not be empty"},
		{"empty keyword", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/signals/keywords/0/keywords/1", "")
		}, "/recipes/0/signals/keywords/0/keywords/1", CodeInvalidValue, "must not be empty"},
		{"no recipes", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes", []any{})
		}, "/recipes", CodeInvalidValue, "must not be empty"},
		{"plugin configuration not an object", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/0/decisions/0/plugins/0/configuration", "hello")
		}, "/recipes/0/decisions/0/plugins/0/configuration", CodeWrongType, "expected an object"},
		{"unknown key under reasoning family map entry", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/reasoning_families/gpt/param", "x")
		}, "/providers/reasoning_families/gpt/param", CodeUnknownField, `did you mean "parameter"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			tt.mutate(t, v)
			_, err := Parse(toJSON(t, v))
			assertProblem(t, err, tt.wantPath, tt.wantCode, tt.wantMsg)
		})
	}
}

func TestAllProblemsReported(t *testing.T) {
	v := exampleValue(t)
	set(t, v, "/listeners/0/prot", 1)
	set(t, v, "/providers/models/0/api_format", "x")
	set(t, v, "/recipes/0/decisions/0/priority", "high")
	_, err := Parse(toJSON(t, v))
	ps := problemsOf(t, err)
	if len(ps) != 3 {
		t.Fatalf("want 3 schema problems, got %d:\n%v", len(ps), err)
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"/listeners/0/prot: ", "/providers/models/0/api_format: ", "/recipes/0/decisions/0/priority: "}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}

	// Semantic problems are collected too.
	v = exampleValue(t)
	set(t, v, "/providers/defaults/default_model", "tiny")
	set(t, v, "/recipes/0/decisions/2/modelRefs/0/model", "codr")
	set(t, v, "/listeners/0/entrypoint", "main")
	_, err = Parse(toJSON(t, v))
	if ps := problemsOf(t, err); len(ps) != 3 {
		t.Fatalf("want 3 semantic problems, got %d:\n%v", len(ps), err)
	}
}
