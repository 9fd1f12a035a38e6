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
