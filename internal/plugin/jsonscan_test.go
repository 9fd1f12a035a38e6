package plugin

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func packageImports(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			out = append(out, imp.Path.Value)
		}
	}
	return out
}

func TestArrayPrefix(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want []string
		rest string
	}{
		{`[]`, 1, nil, `]`},
		{` [ ] `, 1, nil, `] `},
		{`[1]`, 1, []string{`1`}, `]`},
		{`[1,2,3]`, 1, []string{`1`}, `,2,3]`},
		{`[ "a,]" , {"b":[1,"]"]} ,null]`, 2, []string{`"a,]"`, `{"b":[1,"]"]}`}, ` ,null]`},
		{`["\"]",true]`, -1, []string{`"\"]"`, `true`}, `]`},
		{`[-1.5e3 , false]`, 5, []string{`-1.5e3`, `false`}, `]`},
	}
	for _, tt := range tests {
		elems, rest, err := arrayPrefix([]byte(tt.in), tt.max)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		var got []string
		for _, e := range elems {
			got = append(got, string(e))
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || string(rest) != tt.rest {
			t.Errorf("%s: got %q rest %q, want %q rest %q", tt.in, got, rest, tt.want, tt.rest)
		}
		if j := joinArray(elems, rest); !json.Valid(j) {
			t.Errorf("%s: rejoined %s is not valid", tt.in, j)
		}
		// Appending after elements already there takes as many, the same.
		more, moreRest, err := appendArrayPrefix([]json.RawMessage{json.RawMessage(`0`)}, []byte(tt.in), tt.max)
		if err != nil || len(more) != 1+len(elems) || string(more[0]) != `0` || string(moreRest) != string(rest) {
			t.Errorf("%s: appended %q rest %q %v", tt.in, more, moreRest, err)
		}
		for i, e := range elems {
			if string(more[1+i]) != string(e) {
				t.Errorf("%s: appended element %d %s, want %s", tt.in, i, more[1+i], e)
			}
		}
	}
	for _, bad := range []string{``, `{}`, `[1`, `[1 2]`, `["abc]`, `[{]`, `[,]`} {
		if _, _, err := arrayPrefix([]byte(bad), -1); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestObjectMembersAndSetMember(t *testing.T) {
	obj := []byte(` { "a" : 1 , "b\u0063" : {"x":"}"} , "d":[ ] } `)
	ms, err := objectMembers(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || !ms[0].is("a") || !ms[1].is("bc") || !ms[2].is("d") || ms[1].is("b\\u0063") {
		t.Fatalf("members = %+v", ms)
	}
	if got := string(lookup(obj, ms, "bc")); got != `{"x":"}"}` {
		t.Errorf("lookup = %s", got)
	}
	for _, bad := range []string{`[]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{a:1}`, `{"a":1`} {
		if _, err := objectMembers([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
