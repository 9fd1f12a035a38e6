package recipes

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed schema.json
var schemaJSON []byte

// SchemaID is the $id of the embedded JSON Schema.
const SchemaID = "https://junction-router.dev/schemas/config/v1/document.json"

// Schema returns the JSON Schema (draft 2020-12) of the configuration document.
// The returned slice is a copy; callers may keep or change it.
//
// Durations carry, besides a portable pattern, the custom format "go-duration"
// (a string time.ParseDuration accepts, which also rules out overflow);
// validators that do not know the format treat it as an annotation. Keys
// starting with "x-" are this package's error-message hints.
func Schema() []byte { return bytes.Clone(schemaJSON) }

var (
	schemaOnce     sync.Once
	schemaCompiled *jsonschema.Schema
	schemaTree     map[string]any // the schema as a generic value, to explain errors
	schemaErr      error
)

// compiledSchema compiles the embedded schema once.
func compiledSchema() (*jsonschema.Schema, map[string]any, error) {
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		c.AssertFormat = true
		c.Formats["go-duration"] = isGoDuration
		if err := c.AddResource(SchemaID, bytes.NewReader(schemaJSON)); err != nil {
			schemaErr = fmt.Errorf("recipes: embedded schema: %w", err)
			return
		}
		s, err := c.Compile(SchemaID)
		if err != nil {
			schemaErr = fmt.Errorf("recipes: embedded schema: %w", err)
			return
		}
		var tree map[string]any
		if err := json.Unmarshal(schemaJSON, &tree); err != nil {
			schemaErr = fmt.Errorf("recipes: embedded schema: %w", err)
			return
		}
		schemaCompiled, schemaTree = s, tree
	})
	return schemaCompiled, schemaTree, schemaErr
}

// isGoDuration accepts strings that time.ParseDuration reads; other types pass
// (the schema's type keyword judges them).
func isGoDuration(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true
	}
	_, err := time.ParseDuration(s)
	return err == nil
}

func decimalSyntax(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// validateSchema checks a generic JSON value (decoded with UseNumber) against the
// schema and returns every leaf problem with a readable message.
func validateSchema(instance any) []Problem {
	s, tree, err := compiledSchema()
	if err != nil {
		return []Problem{{Code: CodeInternal, Message: err.Error()}}
	}
	verr := s.Validate(instance)
	if verr == nil {
		return nil
	}
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return []Problem{{Code: CodeInvalidValue, Message: verr.Error()}}
	}
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, explainLeaf(e, instance, tree)...)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// explainLeaf turns one leaf error of the schema library into problems.
func explainLeaf(e *jsonschema.ValidationError, instance any, tree map[string]any) []Problem {
	path := normalizeInstanceLocation(e.InstanceLocation)
	kwLoc := e.AbsoluteKeywordLocation
	if i := strings.IndexByte(kwLoc, '#'); i >= 0 {
		kwLoc = kwLoc[i+1:]
	}
	keyword, parentPtr := kwLoc, ""
	if i := strings.LastIndexByte(kwLoc, '/'); i >= 0 {
		keyword, parentPtr = kwLoc[i+1:], kwLoc[:i]
	}
	node, _ := lookupPointer(tree, parentPtr).(map[string]any)
	inst := lookupPointer(instance, path)
	hint := ""
	if xm, ok := node["x-messages"].(map[string]any); ok {
		if s, ok := xm[keyword].(string); ok {
			hint = "; " + s
		}
	}

	switch keyword {
	case "additionalProperties":
		obj, _ := inst.(map[string]any)
		props, _ := node["properties"].(map[string]any)
		var unknown []string
		for k := range obj {
			if _, ok := props[k]; !ok {
				unknown = append(unknown, k)
			}
		}
		sort.Strings(unknown)
		known := make([]string, 0, len(props))
		for k := range props {
			known = append(known, k)
		}
		sort.Strings(known)
		var out []Problem
		for _, k := range unknown {
			msg := fmt.Sprintf("unknown field %q", k)
			if s := suggest(k, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else if len(known) > 0 {
				msg += fmt.Sprintf(" (allowed here: %s)", strings.Join(known, ", "))
			}
			out = append(out, Problem{Path: path + "/" + escapePointer(k), Code: CodeUnknownField, Message: msg + hint})
		}
		if len(out) > 0 {
			return out
		}
	case "required":
		obj, _ := inst.(map[string]any)
		req, _ := node["required"].([]any)
		var out []Problem
		for _, r := range req {
			name, _ := r.(string)
			if _, ok := obj[name]; !ok {
				out = append(out, Problem{Path: path + "/" + escapePointer(name), Code: CodeMissingField,
					Message: fmt.Sprintf("required field %q is missing", name) + hint})
			}
		}
		if len(out) > 0 {
			return out
		}
	case "type":
		want := schemaTypes(node["type"])
		got := jsonTypeName(inst)
		msg := fmt.Sprintf("expected %s, got %s", joinOr(want), withArticle(got))
		if got == "null" {
			msg += " (an empty value in YAML is null; remove the key or give it a value)"
		} else if containsString(want, "string") && (got == "boolean" || got == "number") {
			msg += fmt.Sprintf(" (%s is not a string in YAML: put it in quotes, for example \"%s\")", compactJSON(inst), scalarText(inst))
		}
		return []Problem{{Path: path, Code: CodeWrongType, Message: msg + hint}}
	case "enum":
		vals, _ := node["enum"].([]any)
		opts := make([]string, len(vals))
		for i, v := range vals {
			opts[i] = fmt.Sprint(v)
		}
		return []Problem{{Path: path, Code: CodeInvalidValue,
			Message: fmt.Sprintf("must be one of %s (got %s)", strings.Join(opts, ", "), compactJSON(inst)) + hint}}
	case "const":
		return []Problem{{Path: path, Code: CodeInvalidValue,
			Message: fmt.Sprintf("must be %s (got %s)", compactJSON(node["const"]), compactJSON(inst)) + hint}}
	case "format", "pattern":
		if node["format"] == "go-duration" {
			// The pattern and the format give the same message, so that a bad
			// duration caught by both is reported once.
			return []Problem{{Path: path, Code: CodeInvalidValue,
				Message: fmt.Sprintf("invalid duration %s: write a duration such as \"30s\", \"5m\" or \"1h30m\"", compactJSON(inst))}}
		}
		if xm, ok := node["x-messages"].(map[string]any); ok {
			if s, ok := xm[keyword].(string); ok {
				return []Problem{{Path: path, Code: CodeInvalidValue, Message: fmt.Sprintf("%s (got %s)", s, compactJSON(inst))}}
			}
		}
	case "minimum", "maximum":
		lo, hi := numberText(node["minimum"]), numberText(node["maximum"])
		if lo == "1" && hi == "65535" {
			return []Problem{{Path: path, Code: CodeInvalidValue,
				Message: fmt.Sprintf("must be a port between 1 and 65535 (got %s)", compactJSON(inst))}}
		}
		if len(lo) > 12 || len(hi) > 12 {
			return []Problem{{Path: path, Code: CodeInvalidValue, Message: fmt.Sprintf("number %s is out of range", compactJSON(inst))}}
		}
		word, bound := "at least", lo
		if keyword == "maximum" {
			word, bound = "at most", hi
		}
		return []Problem{{Path: path, Code: CodeInvalidValue, Message: fmt.Sprintf("must be %s %s (got %s)", word, bound, compactJSON(inst))}}
	case "minItems":
		if numberText(node["minItems"]) == "1" {
			return []Problem{{Path: path, Code: CodeInvalidValue, Message: "must not be empty" + hint}}
		}
		return []Problem{{Path: path, Code: CodeInvalidValue, Message: fmt.Sprintf("must have at least %s items", numberText(node["minItems"])) + hint}}
	case "minLength":
		if numberText(node["minLength"]) == "1" {
			return []Problem{{Path: path, Code: CodeInvalidValue, Message: "must not be empty" + hint}}
		}
	case "maxLength":
		return []Problem{{Path: path, Code: CodeInvalidValue, Message: fmt.Sprintf("is too long (at most %s characters)", numberText(node["maxLength"]))}}
	}
	return []Problem{{Path: path, Code: CodeInvalidValue, Message: e.Message + hint}}
}

// normalizeInstanceLocation turns the library's instance location (segments
// URL-path-escaped) into a plain RFC 6901 JSON pointer.
func normalizeInstanceLocation(loc string) string {
	if loc == "" || loc == "/" {
		return ""
	}
	segs := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	return "/" + strings.Join(segs, "/")
}

// escapePointer escapes one JSON-pointer reference token (RFC 6901).
func escapePointer(tok string) string {
	tok = strings.ReplaceAll(tok, "~", "~0")
	return strings.ReplaceAll(tok, "/", "~1")
}

func unescapePointer(tok string) string {
	tok = strings.ReplaceAll(tok, "~1", "/")
	return strings.ReplaceAll(tok, "~0", "~")
}

// lookupPointer resolves an RFC 6901 pointer in a generic JSON value; nil when absent.
func lookupPointer(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = unescapePointer(tok)
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func schemaTypes(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64, int, int64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func withArticle(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

func joinOr(types []string) string {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = withArticle(t)
	}
	return strings.Join(parts, " or ")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compactJSON renders a value for an error message, shortened when long.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSpace(buf.String())
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func scalarText(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "yes"
		}
		return "no"
	}
	return fmt.Sprint(v)
}

func numberText(v any) string {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	}
	return fmt.Sprint(v)
}

// suggest returns the candidate closest to s when it is close enough to be a typo.
func suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(s) <= 4 {
		limit = 1
	}
	if bestD <= limit || (best != "" && (strings.HasPrefix(best, s) || strings.HasPrefix(s, best)) && len(s) >= 3) {
		return best
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions, deletions,
// substitutions and transpositions of adjacent characters each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		if a == b {
			return 0
		}
		return 1 << 20
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
