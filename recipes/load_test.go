package recipes

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sigyaml "sigs.k8s.io/yaml"
)

const examplePath = "testdata/example-config.yaml"

// specExamplePath is the spec's copy, relative to this package's folder.
const specExamplePath = "../../shared/spec/example-config.yaml"

// minimalYAML is the smallest useful document.
const minimalYAML = `
version: v1
providers:
  defaults: {default_model: m}
  models: [{name: m, backend_refs: [{provider: demo}]}]
recipes:
  - name: r
    decisions: [{name: all, rules: {operator: AND, conditions: []}}]
`

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// y parses a YAML fragment into a generic value.
func y(t testing.TB, src string) any {
	t.Helper()
	j, err := sigyaml.YAMLToJSON([]byte(src))
	if err != nil {
		t.Fatalf("fragment %q: %v", src, err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// exampleValue returns a fresh generic copy of the example document.
func exampleValue(t testing.TB) map[string]any {
	t.Helper()
	return y(t, string(readFile(t, examplePath))).(map[string]any)
}

// parent resolves all but the last token of ptr and returns the container and
// that token.
func parent(t testing.TB, root any, ptr string) (any, string) {
	t.Helper()
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		t.Fatalf("bad pointer %q", ptr)
	}
	c := lookupPointer(root, ptr[:i])
	if c == nil {
		t.Fatalf("pointer %q: %q not found", ptr, ptr[:i])
	}
	return c, unescapePointer(ptr[i+1:])
}

// set sets the value at ptr; for arrays "-" appends.
func set(t testing.TB, root any, ptr string, val any) {
	t.Helper()
	c, tok := parent(t, root, ptr)
	switch c := c.(type) {
	case map[string]any:
		c[tok] = val
	case []any:
		if tok == "-" {
			// Appending changes the slice header: write it back into its parent.
			pp := ptr[:strings.LastIndexByte(ptr, '/')]
			set(t, root, pp, append(c, val))
			return
		}
		i, err := strconv.Atoi(tok)
		if err != nil || i >= len(c) {
			t.Fatalf("pointer %q: bad index", ptr)
		}
		c[i] = val
	default:
		t.Fatalf("pointer %q: not a container", ptr)
	}
}

func del(t testing.TB, root any, ptr string) {
	t.Helper()
	c, tok := parent(t, root, ptr)
	m, ok := c.(map[string]any)
	if !ok {
		t.Fatalf("pointer %q: delete only from objects", ptr)
	}
	if _, ok := m[tok]; !ok {
		t.Fatalf("pointer %q: nothing to delete", ptr)
	}
	delete(m, tok)
}

func toJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func problemsOf(t testing.TB, err error) []Problem {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error, got none")
	}
	ve, ok := AsValidationError(err)
	if !ok {
		t.Fatalf("expected *ValidationError, got %T: %v", err, err)
	}
	return ve.Problems
}

func TestExampleConfigLoadsUnchanged(t *testing.T) {
	data := readFile(t, examplePath)
	if spec, err := os.ReadFile(specExamplePath); err == nil {
		if !bytes.Equal(spec, data) {
			t.Errorf("%s differs from %s: copy it again verbatim", examplePath, specExamplePath)
		}
	} else {
		t.Logf("spec copy not found (%v); comparison skipped", err)
	}
	doc, err := Parse(data)
	if err != nil {
		t.Fatalf("example config must load unchanged:\n%v", err)
	}
	if len(doc.Providers.Models) != 3 || len(doc.Recipes) != 1 || len(doc.Recipes[0].Decisions) != 6 {
		t.Fatalf("unexpected shape: %d models, %d recipes", len(doc.Providers.Models), len(doc.Recipes))
	}
	r, ok := doc.Recipe("default")
	if !ok || doc.DefaultRecipe() != "default" {
		t.Fatal("recipe default not found")
	}
	if got := r.Decisions[1].Rules.Conditions[1]; got.Type != KindComplexity || got.Name != "reasoning_load:hard" {
		t.Errorf("hard_math second condition = %+v", got)
	}
	if got := r.Signals.Complexity[0].Threshold; got != "0.1" {
		t.Errorf("complexity threshold = %q", got)
	}
	if !r.Signals.Keywords[0].WholeWords() {
		t.Error("word_boundary should default to true")
	}
	big, _ := doc.Model("big")
	if big.Pricing == nil || big.Pricing.CachedInputPer1M == nil || *big.Pricing.CachedInputPer1M != 0.25 {
		t.Errorf("big pricing = %+v", big.Pricing)
	}
	if big.BackendRefs[0].ExtraHeaders["x-team"] != "research" {
		t.Errorf("extra headers = %v", big.BackendRefs[0].ExtraHeaders)
	}
	if l := doc.Listeners[0]; l.Timeout.Duration != 300*time.Second || l.Entrypoint != "default" || l.APIKeys == nil {
		t.Errorf("listener = %+v", l)
	}
	var cfg map[string]any
	if err := json.Unmarshal(r.Decisions[5].Plugins[0].Configuration, &cfg); err != nil || cfg["mode"] != "exact_then_semantic" {
		t.Errorf("response_cache configuration = %s", r.Decisions[5].Plugins[0].Configuration)
	}
	if err := doc.Validate(); err != nil {
		t.Errorf("Validate on a parsed document: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	doc, canon, err := LoadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := HashSource(readFile(t, examplePath))
	if HashBytes(canon) != want {
		t.Error("LoadFile canonical bytes do not hash like HashSource")
	}
	if doc.Version != "v1" {
		t.Error("version")
	}

	if _, _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: v2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadFile(bad)
	if _, ok := AsValidationError(err); !ok || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad file error = %v", err)
	}
}

func TestBuiltinLoads(t *testing.T) {
	doc, err := Builtin()
	if err != nil {
		t.Fatalf("builtin: %v", err)
	}
	if err := doc.Validate(); err != nil {
		t.Fatalf("builtin Validate: %v", err)
	}
	for _, name := range []string{"small", "big", "coder"} {
		m, ok := doc.Model(name)
		if !ok {
			t.Fatalf("builtin lacks model %q", name)
		}
		for _, b := range m.BackendRefs {
			if b.Provider != DemoProvider || b.BaseURL != "" {
				t.Errorf("model %s backend %+v: builtin backends must be demo with no base_url", name, b)
			}
		}
	}
	families := map[string]string{"small": "qwen3", "big": "deepseek", "coder": "gpt"}
	for m, f := range families {
		if got, _ := doc.Model(m); got.ReasoningFamily != f {
			t.Errorf("model %s family %q, want %q", m, got.ReasoningFamily, f)
		}
	}
	if len(doc.Recipes) != 1 || doc.DefaultRecipe() != "default" {
		t.Fatalf("builtin recipes: %d", len(doc.Recipes))
	}
	r := &doc.Recipes[0]
	s := r.Signals
	for _, kind := range Kinds {
		if len(s.Names(kind)) == 0 {
			t.Errorf("builtin has no %s signal", kind)
		}
	}
	if s.Jailbreak[0].Action != ActionBlock {
		t.Error("builtin jailbreak signal should block")
	}
	if len(s.PII[0].Types) == 0 || len(s.Domains[0].MMLUCategories) == 0 || len(s.Embeddings[0].Candidates) == 0 {
		t.Error("builtin pii types, domain categories and embedding candidates should be spelled out")
	}
	if c := s.Complexity[0]; c.Threshold != "0.1" || c.Hard == nil || c.Easy == nil {
		t.Errorf("builtin complexity = %+v", c)
	}
	for _, d := range r.Decisions {
		if len(d.Plugins) > 0 {
			t.Errorf("builtin decision %q uses plugins", d.Name)
		}
	}
	l := doc.Listeners[0]
	if l.Address != "127.0.0.1" || l.Port != 8801 || l.Entrypoint != "default" {
		t.Errorf("builtin listener = %+v", l)
	}
	var hardMath *Decision
	for i := range r.Decisions {
		if r.Decisions[i].Name == "hard_math" {
			hardMath = &r.Decisions[i]
		}
	}
	if hardMath == nil || hardMath.ModelRefs[0].Model != "big" || hardMath.ModelRefs[0].ReasoningEffort != "high" {
		t.Errorf("hard_math = %+v", hardMath)
	}
	if !bytes.Contains(BuiltinYAML(), []byte("provider: demo")) {
		t.Error("BuiltinYAML")
	}
	// Each call returns a fresh document.
	doc.Recipes[0].Name = "changed"
	again, _ := Builtin()
	if again.Recipes[0].Name != "default" {
		t.Error("Builtin returned a shared document")
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantLine int
		wantMsg  string
	}{
		{"mapping value in a scalar", "version: v1\nlisteners:\n  - name: a: b\n", 3, "line 3: mapping values are not allowed"},
		{"unclosed quote runs to the end", "version: v1\nproviders:\n  defaults: {default_model: \"x}\n", 4, "unexpected end of stream"},
		{"sequence item inside a mapping", "version: v1\nproviders:\n  defaults: {}\n  - models\n", 4, "line 4"},
		{"unclosed flow sequence", "version: v1\nrecipes: [\n  {name: a}\nlisteners: []\n", 4, "line 4: did not find expected ',' or ']'"},
		{"bad indentation", "version: v1\nproviders:\n  defaults: {}\n models: []\n", 4, "line 4: did not find expected key"},
		{"tab indentation", "version: v1\nproviders:\n\tdefaults: {}\n", 3, "line 3"},
		{"duplicate YAML key", "version: v1\nversion: v1\n", 2, "appears twice"},
		{"duplicate JSON key", "{\n\"version\": \"v1\",\n\"version\": \"v1\"\n}", 3, "appears twice"},
		{"second YAML document", "---\nversion: v1\n---\nversion: v1\n", 3, "a second YAML document"},
		{"document end marker then more", "version: v1\n...\nrecipes: []\n", 2, "a second YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			ps := problemsOf(t, err)
			if ps[0].Line != tt.wantLine || !strings.Contains(ps[0].Message, tt.wantMsg) {
				t.Errorf("got %+v, want line %d and %q", ps[0], tt.wantLine, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), "line "+strconv.Itoa(tt.wantLine)) {
				t.Errorf("Error() does not name the line: %v", err)
			}
			if ps[0].Stage() != "parse" {
				t.Errorf("stage = %s", ps[0].Stage())
			}
		})
	}
}

func TestInputBounds(t *testing.T) {
	tests := []struct {
		name     string
		src      []byte
		wantCode string
		wantMsg  string
	}{
		{"empty", nil, CodeSyntax, "empty"},
		{"whitespace", []byte("  \n\t\n"), CodeSyntax, "empty"},
		{"null", []byte("~\n"), CodeSyntax, "empty"},
		{"scalar", []byte("hello\n"), CodeWrongType, "must be a mapping"},
		{"list", []byte("- a\n- b\n"), CodeWrongType, "must be a mapping"},
		{"invalid utf-8", []byte("version: \xff\n"), CodeSyntax, "UTF-8"},
		{"too large", append([]byte("version: v1\n#"), bytes.Repeat([]byte("x"), MaxDocumentBytes)...), CodeTooLarge, "limit is 4.0 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			ps := problemsOf(t, err)
			if ps[0].Code != tt.wantCode || !strings.Contains(ps[0].Message, tt.wantMsg) {
				t.Errorf("got %+v, want %s %q", ps[0], tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestJSONAndYAMLInputAgree(t *testing.T) {
	fromYAML, err := Parse([]byte(minimalYAML))
	if err != nil {
		t.Fatal(err)
	}
	// Document markers around a single document are fine.
	if _, err := Parse([]byte("%YAML 1.1\n---\n" + minimalYAML + "...\n")); err != nil {
		t.Errorf("document markers: %v", err)
	}
	// A pretty-printed JSON document indented with tabs.
	var v any
	j, _ := sigyaml.YAMLToJSON([]byte(minimalYAML))
	_ = json.Unmarshal(j, &v)
	pretty, _ := json.MarshalIndent(v, "", "\t")
	fromJSON, err := Parse(pretty)
	if err != nil {
		t.Fatalf("JSON input: %v", err)
	}
	if Hash(fromJSON) != Hash(fromYAML) {
		t.Error("the same document as YAML and JSON parsed differently")
	}
}

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

// assertProblem checks that err reports a problem at exactly wantPath.
func assertProblem(t *testing.T, err error, wantPath, wantCode, wantMsg string) {
	t.Helper()
	ps := problemsOf(t, err)
	for _, p := range ps {
		if p.Path == wantPath && p.Code == wantCode && strings.Contains(p.Message, wantMsg) {
			if !strings.Contains(err.Error(), wantPath+": "+p.Message) {
				t.Errorf("Error() lacks %q:\n%v", wantPath+": "+p.Message, err)
			}
			return
		}
	}
	t.Errorf("no %s problem at %s containing %q; got:\n%v", wantCode, wantPath, wantMsg, err)
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

func TestDefaults(t *testing.T) {
	doc, err := Parse([]byte(minimalYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Listeners) != 1 {
		t.Fatalf("listeners = %+v", doc.Listeners)
	}
	l := doc.Listeners[0]
	if l.Name != "public" || l.Address != "127.0.0.1" || l.Port != 8801 || l.Timeout.Duration != 300*time.Second ||
		l.Entrypoint != "" || l.BodyLimit() != DefaultMaxBodyBytes {
		t.Errorf("default listener = %+v", l)
	}
	if doc.Entrypoint(l) != "r" {
		t.Errorf("entrypoint = %q", doc.Entrypoint(l))
	}
	s := doc.Global.Services
	if s.ManagementAPI.Address != "127.0.0.1" || s.ManagementAPI.Port != 8080 {
		t.Errorf("management = %+v", s.ManagementAPI)
	}
	if s.Observability.Metrics.Address != "127.0.0.1" || s.Observability.Metrics.Port != 9190 {
		t.Errorf("metrics = %+v", s.Observability.Metrics)
	}
	if e := doc.Global.Extproc; e.Address != "127.0.0.1" || e.Port != 50051 {
		t.Errorf("extproc = %+v", e)
	}
	if s.API.BatchClassification.MaxBatchSize != 100 {
		t.Errorf("max_batch_size = %d", s.API.BatchClassification.MaxBatchSize)
	}
	if doc.Providers.Defaults.DefaultReasoningEffort != "" {
		t.Error("default_reasoning_effort must stay empty")
	}

	src := minimalYAML + `
    signals:
      keywords: [{name: k, keywords: [a]}, {name: k2, keywords: [b], word_boundary: false, operator: AND}]
      pii: [{name: p, types: [email, Phone]}]
      jailbreak: [{name: j}]
      language: [{name: l, languages: [DE]}]
      embeddings: [{name: e, candidates: [x], threshold: 0.5}]
      complexity: [{name: c, threshold: 1e-7, hard: {candidates: [h]}, easy: {candidates: [e]}}]
listeners:
  - {name: a}
  - {name: b, port: 9000, address: 0.0.0.0, timeout: 10}
`
	src = strings.Replace(src, "rules: {operator: AND, conditions: []}}", "rules: {operator: AND, conditions: []}, plugins: [{type: system_prompt}]}", 1)
	doc, err = Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sig := doc.Recipes[0].Signals
	if k := sig.Keywords[0]; k.Operator != "OR" || !k.WholeWords() || k.WordBoundary == nil {
		t.Errorf("keyword defaults = %+v", k)
	}
	if k := sig.Keywords[1]; k.Operator != "AND" || k.WholeWords() {
		t.Errorf("explicit keyword values lost: %+v", k)
	}
	if p := sig.PII[0]; p.OnUnscanned != "block" || p.Action != "route" || p.Types[0] != "EMAIL" || p.Types[1] != "PHONE" {
		t.Errorf("pii defaults = %+v", p)
	}
	if j := sig.Jailbreak[0]; j.OnUnscanned != "block" || j.Action != "route" {
		t.Errorf("jailbreak defaults = %+v", j)
	}
	if sig.Language[0].Languages[0] != "de" {
		t.Errorf("language not normalized: %v", sig.Language[0].Languages)
	}
	if sig.Embeddings[0].Aggregation != "max" {
		t.Errorf("aggregation = %q", sig.Embeddings[0].Aggregation)
	}
	if sig.Complexity[0].Threshold != "0.0000001" {
		t.Errorf("bare-number threshold = %q", sig.Complexity[0].Threshold)
	}
	if p := doc.Recipes[0].Decisions[0].Plugins[0]; p.OnError != "skip" {
		t.Errorf("plugin on_error = %q", p.OnError)
	}
	if a, b := doc.Listeners[0], doc.Listeners[1]; a.Port != 8801 || a.Address != "127.0.0.1" || b.Timeout.Duration != 10*time.Second {
		t.Errorf("listeners = %+v", doc.Listeners)
	}

	// Idempotent.
	before := Hash(doc)
	doc.ApplyDefaults()
	if Hash(doc) != before {
		t.Error("ApplyDefaults is not idempotent")
	}
	var nilDoc *Document
	nilDoc.ApplyDefaults() // must not panic
}

func TestHelpers(t *testing.T) {
	doc, err := Parse([]byte(minimalYAML))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Recipe("r"); !ok {
		t.Error("Recipe(r)")
	}
	if _, ok := doc.Recipe("nope"); ok {
		t.Error("Recipe(nope)")
	}
	if doc.DefaultRecipe() != "r" {
		t.Errorf("DefaultRecipe without one named default = %q", doc.DefaultRecipe())
	}
	doc.Recipes = append(doc.Recipes, Recipe{Name: "default"})
	if doc.DefaultRecipe() != "default" {
		t.Errorf("DefaultRecipe = %q", doc.DefaultRecipe())
	}
	if m, ok := doc.Model("m"); !ok || m.Name != "m" {
		t.Error("Model(m)")
	}
	if _, ok := doc.Model("x"); ok {
		t.Error("Model(x)")
	}
	var empty *Document
	if empty.DefaultRecipe() != "" {
		t.Error("nil DefaultRecipe")
	}

	for _, tt := range []struct {
		in, sig, level string
		ok             bool
	}{
		{"load:hard", "load", "hard", true},
		{"load:medium", "load", "medium", true},
		{"load:easy", "load", "easy", true},
		{"load", "load", "", false},
		{"load:extreme", "load", "extreme", false},
		{":hard", "", "hard", false},
	} {
		sig, level, ok := SplitComplexityCondition(tt.in)
		if sig != tt.sig || level != tt.level || ok != tt.ok {
			t.Errorf("SplitComplexityCondition(%q) = %q, %q, %v", tt.in, sig, level, ok)
		}
	}

	c := doc.Clone()
	c.Recipes[0].Name = "changed"
	if doc.Recipes[0].Name == "changed" {
		t.Error("Clone shares recipes")
	}

	var leaves []string
	doc2, _ := Parse(readFile(t, examplePath))
	doc2.Recipes[0].Decisions[3].Rules.Leaves(func(n RuleNode) { leaves = append(leaves, n.Type+"/"+n.Name) })
	if strings.Join(leaves, ",") != "keyword/urgent,embedding/billing_question,language/german,context/long_context" {
		t.Errorf("Leaves = %v", leaves)
	}

	if !IsLanguageCode("de") || !IsLanguageCode("ZH") || IsLanguageCode("xx") || IsLanguageCode("deu") {
		t.Error("IsLanguageCode")
	}
	if !bytes.Contains(Schema(), []byte(`"$schema"`)) {
		t.Error("Schema")
	}
}

func TestValidateHandBuiltDocument(t *testing.T) {
	doc := &Document{
		Version: "v1",
		Providers: Providers{
			Defaults: ProviderDefaults{DefaultModel: "m"},
			Models:   []Model{{Name: "m", BackendRefs: []BackendRef{{BaseURL: "http://127.0.0.1:9/v1", Provider: "openai"}}}},
		},
		Recipes: []Recipe{{
			Name: "r",
			Decisions: []Decision{
				{Name: "all", Rules: RuleNode{Operator: OpAND}}, // nil conditions: an empty AND
			},
		}},
	}
	doc.ApplyDefaults()
	if err := doc.Validate(); err != nil {
		t.Fatalf("valid hand-built document: %v", err)
	}
	// Round trip: the canonical form parses back to the same document.
	b, err := Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("canonical form does not parse: %v\n%s", err, b)
	}
	if Hash(back) != Hash(doc) {
		t.Error("canonical round trip changed the hash")
	}

	doc.Recipes[0].Decisions[0].ModelRefs = []ModelRef{{Model: "n"}}
	doc.Recipes[0].Decisions = append(doc.Recipes[0].Decisions, Decision{Name: "x", Rules: RuleNode{Operator: "XOR"}})
	err = doc.Validate()
	assertProblem(t, err, "/recipes/0/decisions/1/rules/operator", CodeInvalidValue, "AND, OR, NOT")

	doc.Recipes[0].Decisions = doc.Recipes[0].Decisions[:1]
	err = doc.Validate()
	assertProblem(t, err, "/recipes/0/decisions/0/modelRefs/0/model", CodeUnknownRef, `references model "n"`)

	var nilDoc *Document
	if nilDoc.Validate() == nil {
		t.Error("nil document validated")
	}
}
