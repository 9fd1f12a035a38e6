package recipes

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	sigyaml "sigs.k8s.io/yaml"
)

// The documents and JSON-pointer edits the package's tests start from.

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
