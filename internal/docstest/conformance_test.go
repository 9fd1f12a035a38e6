package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConformanceTableNamesRealTests keeps docs/conformance.md true: every
// row has a known status, every `done` row names at least one test, and
// every test or benchmark the table names exists in the package it is
// listed under (`internal/gateway` TestX; `root` is the module root; a name
// before any package is looked for anywhere in the module).
func TestConformanceTableNamesRealTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]map[string]bool{} // package dir → test names
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "third_party" || d.Name() == "node_modules" || (strings.HasPrefix(d.Name(), ".") && p != root)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		if funcs[rel] == nil {
			funcs[rel] = map[string]bool{}
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			funcs[rel][string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for i, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if !strings.HasPrefix(strings.TrimSpace(line), "|") || len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "Spec (document, section)" {
			continue
		}
		rows++
		status := strings.TrimSpace(cells[len(cells)-2])
		tests := cells[len(cells)-1]
		switch status {
		case "done", "partial", "not done", "not applicable":
		default:
			t.Errorf("conformance.md:%d: status %q is not done, partial, not done or not applicable", i+1, status)
		}
		pkg, named := "", 0
		for _, tok := range conformanceToken.FindAllString(tests, -1) {
			if strings.HasPrefix(tok, "`") {
				pkg = strings.Trim(tok, "`")
				continue
			}
			if pkg == "" && !strings.HasPrefix(tok, "Test") && !strings.HasPrefix(tok, "Benchmark") {
				continue
			}
			named++
			dir := pkg
			if dir == "root" {
				dir = "."
			}
			if pkg == "" {
				found := false
				for _, fs := range funcs {
					found = found || fs[tok]
				}
				if !found {
					t.Errorf("conformance.md:%d: no test %s in the module", i+1, tok)
				}
			} else if !funcs[dir][tok] {
				t.Errorf("conformance.md:%d: no test %s in %s", i+1, tok, pkg)
			}
		}
		if status == "done" && named == 0 {
			t.Errorf("conformance.md:%d: a done row names no test", i+1)
		}
	}
	if rows < 10 {
		t.Fatalf("conformance.md: only %d rows parsed", rows)
	}
}

var (
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)\w*)\(`)
	// A package in backticks, or a test or benchmark name; other words
	// (explanations in parentheses) are skipped by the caller unless they
	// start like a test.
	conformanceToken = regexp.MustCompile("`[a-z][\\w./-]*`|\\b(?:Test|Benchmark)\\w+")
)
