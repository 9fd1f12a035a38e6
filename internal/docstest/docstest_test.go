package docstest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const doc = "# Title\n" + // 1
	"\n" + // 2
	"<!-- docs-test: run route=math contains=\"a b\" contains='say \"x\"' onnx -->\n" + // 3
	"```sh\n" + // 4
	"junction route \"integrate x^2 dx\"   # a comment\n" + // 5
	"```\n" + // 6
	"\n" + // 7
	"```go\n" + // 8
	"package x\n" + // 9
	"```\n" + // 10
	"- a list item:\n" + // 11
	"  <!-- docs-test: config as=my.yaml -->\n" + // 12
	"  ```yaml\n" + // 13
	"  version: v1\n" + // 14
	"    nested: true\n" + // 15
	"  ```\n" // 16

func TestParse(t *testing.T) {
	blocks, err := Parse("x.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want 3: %+v", len(blocks), blocks)
	}
	b := blocks[0]
	if b.Pos() != "x.md:4" || b.Lang != "sh" || b.Ann.Kind != "run" || !b.Annotated || b.Ann.Line != 3 {
		t.Errorf("first block %+v", b)
	}
	if got := b.Ann.Args["contains"]; !reflect.DeepEqual(got, []string{"a b", `say "x"`}) {
		t.Errorf("contains = %q", got)
	}
	if v, _ := b.Ann.Get("route"); v != "math" || !b.Ann.Has("onnx") || b.Ann.Has("exit") {
		t.Errorf("args %v", b.Ann.Args)
	}
	if blocks[1].Lang != "go" || blocks[1].Ann.Kind != "" {
		t.Errorf("an unannotated go block: %+v", blocks[1])
	}
	if b := blocks[2]; b.Line != 13 || b.Text != "version: v1\n  nested: true" || b.Ann.Kind != "config" {
		t.Errorf("indented block %+v", b)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unannotated yaml", "text\n\n```yaml\na: 1\n```\n", "x.md:3: ```yaml block without a docs-test annotation"},
		{"dangling", "<!-- docs-test: skip reason=x -->\ntext\n```sh\nls\n```\n", "x.md:1: docs-test annotation not followed"},
		{"unknown kind", "<!-- docs-test: runn -->\n```sh\nls\n```\n", `x.md:1: docs-test kind "runn" is unknown`},
		{"skip without reason", "<!-- docs-test: skip -->\n```sh\nls\n```\n", "x.md:1: docs-test skip needs reason="},
		{"unclosed", "<!-- docs-test: skip reason=x -->\n```sh\nls\n", "x.md:2: fenced block never closed"},
	} {
		_, err := Parse("x.md", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	// A file default annotates the blocks that carry none.
	blocks, err := Parse("x.md", []byte("<!-- docs-test-default: skip reason=\"load runs\" -->\n```sh\nmake bench\n```\n"))
	if err != nil || len(blocks) != 1 || blocks[0].Ann.Kind != "skip" || blocks[0].Annotated {
		t.Errorf("default: %v %+v", err, blocks)
	}
}

func TestCommands(t *testing.T) {
	src := "junction config validate my.yaml     # every error\n" + // 1
		"# {\"id\": \"an answer shown\"}\n" + // 2
		"curl -si localhost:8801/v1/chat \\\n" + // 3
		"  -d '{\"a\": \"b c\"}'\n" + // 4
		"BIG_API_KEY=sk-1 junction serve --config my.yaml\n" + // 5
		"curl -s x | jq '.a # not a comment\n" + // 6
		"  .b'\n" + // 7
		"junction route \"it's \\\"quoted\\\"\"\n" // 8
	cmds, err := Commands(src)
	if err != nil {
		t.Fatal(err)
	}
	type c struct {
		Line  int
		Words []string
		Shell bool
	}
	var got []c
	for _, x := range cmds {
		got = append(got, c{x.Line, x.Words, x.Shell})
	}
	want := []c{
		{1, []string{"junction", "config", "validate", "my.yaml"}, false},
		{3, []string{"curl", "-si", "localhost:8801/v1/chat", "-d", `{"a": "b c"}`}, false},
		{5, []string{"junction", "serve", "--config", "my.yaml"}, false},
		{6, []string{"curl", "-s", "x", "|", "jq", ".a # not a comment\n  .b"}, true},
		{8, []string{"junction", "route", `it's "quoted"`}, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands\n got %+v\nwant %+v", got, want)
	}
	if cmds[2].Env["BIG_API_KEY"] != "sk-1" {
		t.Errorf("env %v", cmds[2].Env)
	}
	if cmds[1].Raw != "curl -si localhost:8801/v1/chat \\\n  -d '{\"a\": \"b c\"}'" {
		t.Errorf("raw %q", cmds[1].Raw)
	}
	if _, err := Commands("echo 'open\n"); err == nil {
		t.Error("an unclosed quote passed")
	}
}

func TestMerge(t *testing.T) {
	base := []byte("recipes:\n  - name: default\n    decisions:\n      - {name: a, priority: 1}\n      - {name: b, priority: 2}\nglobal: {services: {x: 1}}\n")
	for _, c := range []struct{ frag, at, want string }{
		{"- {name: c, priority: 3}", "/recipes/0/decisions",
			`{"global":{"services":{"x":1}},"recipes":[{"decisions":[{"name":"a","priority":1},{"name":"b","priority":2},{"name":"c","priority":3}],"name":"default"}]}`},
		{"name: b\npriority: 9", "/recipes/0/decisions",
			`{"global":{"services":{"x":1}},"recipes":[{"decisions":[{"name":"a","priority":1},{"name":"b","priority":9}],"name":"default"}]}`},
		{"global: {services: {z: 2}, router: {enabled: false}}", "",
			`{"global":{"router":{"enabled":false},"services":{"x":1,"z":2}},"recipes":[{"decisions":[{"name":"a","priority":1},{"name":"b","priority":2}],"name":"default"}]}`},
	} {
		out, err := Merge(base, []byte(c.frag), c.at)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		_ = json.Unmarshal(out, &got)
		_ = json.Unmarshal([]byte(c.want), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q at %q:\n got %s\nwant %s", c.frag, c.at, out, c.want)
		}
	}
	if _, err := Merge(base, []byte("a: 1"), "/recipes/5"); err == nil || !strings.Contains(err.Error(), "/recipes/5") {
		t.Errorf("a pointer past the list: %v", err)
	}
}
