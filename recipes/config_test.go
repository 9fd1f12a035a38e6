package recipes

import (
	"bytes"
	"strings"
	"testing"
)

func TestDocumentAccessors(t *testing.T) {
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
