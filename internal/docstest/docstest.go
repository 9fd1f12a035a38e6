// Package docstest reads the examples in Junction's Markdown documentation:
// the fenced blocks, the docs-test annotation that says how each one is
// checked, and the commands inside a shell block. The checks themselves run
// in cmd/junction's TestDocs, through the real CLI and server.
//
// An annotation is an HTML comment on the last non-blank line before a fence:
//
//	<!-- docs-test: KIND key=value key="a value with spaces" key='say "this"' flag -->
//
// KIND is one of Kinds. Every block whose info string is a command or data
// language (Required) must carry one, so that a new example is either
// checked or says why it cannot be. A file may set the annotation of its
// unannotated blocks with <!-- docs-test-default: KIND ... -->.
package docstest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Kinds are the annotation kinds and what each checks.
var Kinds = map[string]string{
	"skip":          "not run; reason= says why (a live cluster, a load run of minutes, placeholders)",
	"config":        "a whole configuration document: validated by `junction config validate`; as=FILE names it for later commands",
	"fragment":      "part of a configuration: merged at at=POINTER into into=FILE (an earlier config block) or the built-in configuration, then validated",
	"json":          "a JSON document: must parse",
	"worker-models": "a `junction worker --models` file: read by the worker's loader",
	"run":           "shell commands, each run through the CLI (junction …) or against an in-process server (curl …); see cmd/junction/docs_test.go",
}

// Required are the info strings whose blocks must carry an annotation:
// commands and documents. Go, C and untagged blocks are listings (the Go
// ones are compiled as runnable examples elsewhere) and may carry one.
var Required = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "yaml": true, "yml": true, "json": true}

// Annotation is a parsed docs-test comment.
type Annotation struct {
	Kind string
	// Args holds key=value arguments, a key repeated in order; a bare
	// word (a flag) has the value "".
	Args map[string][]string
	// Line is the comment's line (1-based); 0 for a file default.
	Line int
}

// Get returns the first value of key and whether it was given.
func (a Annotation) Get(key string) (string, bool) {
	v, ok := a.Args[key]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// Has reports whether key (or flag) was given.
func (a Annotation) Has(key string) bool { _, ok := a.Args[key]; return ok }

// Block is one fenced block.
type Block struct {
	File string // as given to Parse
	Line int    // the opening fence's line, 1-based
	Lang string // the info string's first word
	Text string // the content, without the fences
	Ann  Annotation
	// Annotated is false when Ann is the file's default (or absent).
	Annotated bool
}

// Pos is "file:line", the opening fence's position.
func (b Block) Pos() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// ParseFile reads and parses a Markdown file; name is how errors and
// positions name it.
func ParseFile(path, name string) ([]Block, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(name, src)
}

// Parse returns the fenced blocks of a Markdown document. It fails, naming
// the line, on an annotation that does not precede a block, an unknown
// kind, a skip without a reason, and a block of a Required language without
// an annotation (and no file default).
func Parse(name string, src []byte) ([]Block, error) {
	lines := strings.Split(string(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))), "\n")
	var (
		blocks  []Block
		errs    []string
		pending *Annotation // the last annotation, until a block or text takes it
		def     *Annotation
	)
	fail := func(line int, format string, a ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, a...)))
	}
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		n := i + 1
		if body, ok := comment(line, "docs-test-default:"); ok {
			a, err := parseAnnotation(body)
			if err != nil {
				fail(n, "%v", err)
				continue
			}
			def = &a
			continue
		}
		if body, ok := comment(line, "docs-test:"); ok {
			if pending != nil {
				fail(pending.Line, "docs-test annotation not followed by a fenced block")
			}
			a, err := parseAnnotation(body)
			if err != nil {
				fail(n, "%v", err)
				pending = nil
				continue
			}
			a.Line = n
			pending = &a
			continue
		}
		fence, info, ok := openFence(lines[i])
		if !ok {
			if line != "" && pending != nil {
				fail(pending.Line, "docs-test annotation not followed by a fenced block (text comes first)")
				pending = nil
			}
			continue
		}
		b := Block{File: name, Line: n, Lang: info}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[i]), "`~")) == "" {
				closed = true
				break
			}
			body = append(body, lines[i])
		}
		if !closed {
			fail(n, "fenced block never closed")
		}
		b.Text = dedent(body)
		switch {
		case pending != nil:
			b.Ann, b.Annotated = *pending, true
			pending = nil
		case def != nil:
			b.Ann = *def
		case Required[b.Lang]:
			fail(n, "```%s block without a docs-test annotation: put <!-- docs-test: KIND … --> on the line before it (kinds: %s; see docs/architecture.md)", b.Lang, kindList())
		}
		blocks = append(blocks, b)
	}
	if pending != nil {
		fail(pending.Line, "docs-test annotation not followed by a fenced block")
	}
	if len(errs) > 0 {
		return blocks, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return blocks, nil
}

func kindList() string {
	ks := make([]string, 0, len(Kinds))
	for k := range Kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// comment returns the body of <!-- prefix body --> on a line of its own.
func comment(line, prefix string) (string, bool) {
	if !strings.HasPrefix(line, "<!--") || !strings.HasSuffix(line, "-->") {
		return "", false
	}
	body := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "<!--"), "-->"))
	if !strings.HasPrefix(body, prefix) {
		return "", false
	}
	return strings.TrimSpace(strings.TrimPrefix(body, prefix)), true
}

// openFence recognises an opening ``` or ~~~ fence (indented up to a list
// item's depth) and returns the fence and the info string's first word.
func openFence(line string) (fence, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	for _, c := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, c) {
			n := len(t) - len(strings.TrimLeft(t, c[:1]))
			rest := strings.TrimSpace(t[n:])
			if f := strings.Fields(rest); len(f) > 0 {
				info = f[0]
			}
			return t[:n], info, true
		}
	}
	return "", "", false
}

// dedent removes the indentation every non-blank line shares (blocks inside
// list items are indented).
func dedent(lines []string) string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = l
	}
	return strings.Join(out, "\n")
}

// parseAnnotation parses "KIND key=value key=\"quoted value\" flag".
func parseAnnotation(body string) (Annotation, error) {
	words, err := splitWords(body)
	if err != nil {
		return Annotation{}, fmt.Errorf("docs-test annotation %q: %v", body, err)
	}
	if len(words) == 0 {
		return Annotation{}, fmt.Errorf("docs-test annotation without a kind (kinds: %s)", kindList())
	}
	a := Annotation{Kind: words[0], Args: map[string][]string{}}
	if _, ok := Kinds[a.Kind]; !ok {
		return a, fmt.Errorf("docs-test kind %q is unknown (kinds: %s)", a.Kind, kindList())
	}
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		a.Args[k] = append(a.Args[k], v)
	}
	if r, _ := a.Get("reason"); a.Kind == "skip" && strings.TrimSpace(r) == "" {
		return a, fmt.Errorf(`docs-test skip needs reason="why this block cannot run"`)
	}
	return a, nil
}

// splitWords splits an annotation on spaces, honouring double and single
// quotes (one kind inside the other is literal).
func splitWords(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		in    bool
		quote rune
	)
	for _, r := range s {
		switch {
		case (r == '"' || r == '\'') && (quote == 0 || quote == r):
			if quote == 0 {
				quote = r
			} else {
				quote = 0
			}
			in = true
		case (r == ' ' || r == '\t') && quote == 0:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// Files returns README.md and docs/*.md under root, the documents whose
// examples are checked, as paths relative to root.
func Files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		out = append(out, rel)
	}
	return out, nil
}
