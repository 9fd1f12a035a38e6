package recipes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	sigyaml "sigs.k8s.io/yaml"
)

// MaxDocumentBytes bounds the size of a configuration document, YAML or JSON.
// Larger inputs are refused before they are parsed.
const MaxDocumentBytes = 4 << 20

// Problem is one thing wrong with a configuration document.
type Problem struct {
	// Path is a JSON pointer (RFC 6901) to the offending value, such as
	// /recipes/0/decisions/2/modelRefs/0/model. A missing field's path names the
	// field that should be there. Empty means the whole document.
	Path string `json:"path"`
	// Code is a short machine-readable class of problem (the Code* constants).
	Code string `json:"code"`
	// Message says what is wrong and, where it can, what to write instead.
	Message string `json:"message"`
	// Line is the 1-based line in the source text, when known (syntax errors).
	Line int `json:"line,omitempty"`
}

// Problem codes.
const (
	CodeSyntax       = "syntax_error"      // not YAML or JSON
	CodeTooLarge     = "too_large"         // over MaxDocumentBytes
	CodeUnknownField = "unknown_field"     // a key the schema does not know (typo?)
	CodeMissingField = "missing_field"     // a required key is absent or empty
	CodeWrongType    = "wrong_type"        // e.g. a number where a string belongs
	CodeInvalidValue = "invalid_value"     // out of range, not in the allowed set, malformed
	CodeDuplicate    = "duplicate_name"    // a name used twice where names must be unique
	CodeUnknownRef   = "unknown_reference" // a name that refers to nothing
	CodeConflict     = "conflict"          // fields that contradict each other
	CodeUnsupported  = "unsupported"       // valid in the spec but not available in Junction
	CodeInternal     = "internal"          // a bug in this package
)

// Stage says at which activation stage the problem arises, in the terms of the
// management API's activation reasons: "parse" for input that is not a readable
// document (syntax, size), "validate" for everything else.
func (p Problem) Stage() string {
	if p.Code == CodeSyntax || p.Code == CodeTooLarge {
		return "parse"
	}
	return "validate"
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError reports every problem found in a document, not only the first.
type ValidationError struct {
	Problems []Problem `json:"problems"`
}

// Error prints one problem per line as "PATH: message" (the message alone when
// the problem concerns the whole document).
func (e *ValidationError) Error() string {
	if e == nil || len(e.Problems) == 0 {
		return "invalid configuration"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// AsValidationError returns the *ValidationError inside err, if any.
func AsValidationError(err error) (*ValidationError, bool) {
	var ve *ValidationError
	ok := errors.As(err, &ve)
	return ve, ok
}

func newValidationError(ps []Problem) *ValidationError {
	sortProblems(ps)
	return &ValidationError{Problems: dedupeProblems(ps)}
}

// Parse reads a configuration document written in YAML or JSON and returns it
// with defaults applied (see ApplyDefaults). It checks, in order: size (at most
// MaxDocumentBytes), syntax, the JSON Schema, and the semantic rules (references,
// unique names, ranges; see Validate). Errors are *ValidationError listing every
// problem found at the first stage that failed.
func Parse(data []byte) (*Document, error) {
	doc, _, err := ParseSource(data)
	return doc, err
}

// ParseSource is Parse that also returns the canonical JSON of the document as
// written, before defaults (sorted keys, no insignificant whitespace, normalized
// numbers): the form to persist, and the bytes HashSource hashes.
func ParseSource(data []byte) (*Document, []byte, error) {
	canon, v, ps := decodeSource(data)
	if len(ps) > 0 {
		return nil, nil, newValidationError(ps)
	}
	if ps := validateSchema(v); len(ps) > 0 {
		return nil, nil, newValidationError(ps)
	}
	doc, ps := decodeDocument(canon)
	if len(ps) > 0 {
		return nil, nil, newValidationError(ps)
	}
	doc.ApplyDefaults()
	if ps := doc.semanticProblems(); len(ps) > 0 {
		return nil, nil, newValidationError(ps)
	}
	if ps := doc.resolveToolsDBPaths(); len(ps) > 0 {
		return nil, nil, newValidationError(ps)
	}
	return doc, canon, nil
}

// LoadFile reads and parses the document at path (YAML or JSON, by content, not
// by extension). It returns the document with defaults applied and the canonical
// JSON of the document as written (see ParseSource). Read errors are returned
// as they are; document errors are *ValidationError.
func LoadFile(path string) (*Document, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	doc, canon, err := ParseSource(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s:\n%w", path, err)
	}
	return doc, canon, nil
}

// CanonicalSource converts a YAML or JSON document to canonical JSON without
// validating it against the schema: sorted keys, no insignificant whitespace,
// numbers in shortest form. Errors (size, syntax) are *ValidationError.
func CanonicalSource(data []byte) ([]byte, error) {
	canon, _, ps := decodeSource(data)
	if len(ps) > 0 {
		return nil, newValidationError(ps)
	}
	return canon, nil
}

// decodeSource turns YAML or JSON text into canonical JSON and the generic
// value decoded from it (objects as map[string]any, numbers as json.Number).
func decodeSource(data []byte) ([]byte, any, []Problem) {
	if len(data) > MaxDocumentBytes {
		return nil, nil, []Problem{{Code: CodeTooLarge, Message: fmt.Sprintf(
			"the document is %s; the limit is %s", sizeText(len(data)), sizeText(MaxDocumentBytes))}}
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, nil, []Problem{{Code: CodeSyntax, Line: lineOf(data, off),
			Message: fmt.Sprintf("line %d: the document is not valid UTF-8", lineOf(data, off))}}
	}
	body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, nil, []Problem{{Code: CodeSyntax, Message: "the document is empty"}}
	}

	var jsonText []byte
	if trimmed[0] == '{' && json.Valid(trimmed) {
		if ps := duplicateKeys(trimmed); len(ps) > 0 {
			return nil, nil, ps
		}
		jsonText = trimmed
	} else {
		if p, ok := secondYAMLDocument(body); ok {
			return nil, nil, []Problem{p}
		}
		j, err := sigyaml.YAMLToJSONStrict(body)
		if err != nil {
			return nil, nil, yamlProblems(err)
		}
		jsonText = j
	}

	v, err := decodeGeneric(jsonText)
	if err != nil {
		return nil, nil, []Problem{{Code: CodeSyntax, Message: err.Error()}}
	}
	if v == nil {
		return nil, nil, []Problem{{Code: CodeSyntax, Message: "the document is empty"}}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, nil, []Problem{{Code: CodeWrongType, Message: fmt.Sprintf(
			"the document must be a mapping with version, providers and recipes (got %s)", withArticle(jsonTypeName(v)))}}
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, nil, []Problem{{Code: CodeInvalidValue, Message: err.Error()}}
	}
	canon := buf.Bytes()
	// Validate what will be decoded: the canonical form (numbers normalized).
	v, err = decodeGeneric(canon)
	if err != nil {
		return nil, nil, []Problem{{Code: CodeInternal, Message: err.Error()}}
	}
	return canon, v, nil
}

func decodeGeneric(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the document")
	}
	return v, nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// yamlProblems turns a YAML parser error into problems carrying line numbers.
func yamlProblems(err error) []Problem {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	var out []Problem
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "yaml: "))
		if line == "" {
			continue
		}
		p := Problem{Code: CodeSyntax}
		if m := yamlLineRE.FindStringSubmatch(line); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			text := m[2]
			if isYAMLParserError(text) {
				// go-yaml v2 reports parser (not scanner) errors with a
				// 0-based line number.
				p.Line++
			}
			text = strings.Replace(text, "already set in map", "appears twice in the same mapping", 1)
			p.Message = fmt.Sprintf("YAML syntax error on line %d: %s", p.Line, text)
		} else {
			p.Message = "YAML syntax error: " + line
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		out = append(out, Problem{Code: CodeSyntax, Message: "YAML syntax error: " + msg})
	}
	return out
}

// secondYAMLDocument finds a document marker ("---" or "...") at the start of a
// line that separates the document's content from more content: the YAML
// library would silently read only the first document.
func secondYAMLDocument(body []byte) (Problem, bool) {
	content, markerLine := false, 0
	for i, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if bytes.Equal(line, []byte("---")) || bytes.HasPrefix(line, []byte("--- ")) ||
			bytes.Equal(line, []byte("...")) || bytes.HasPrefix(line, []byte("... ")) {
			if content && markerLine == 0 {
				markerLine = i + 1
			}
			continue
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' || t[0] == '%' {
			continue
		}
		if markerLine > 0 {
			return Problem{Code: CodeSyntax, Line: markerLine, Message: fmt.Sprintf(
				"line %d: a second YAML document starts here; a configuration is a single document", markerLine)}, true
		}
		content = true
	}
	return Problem{}, false
}

// isYAMLParserError reports messages of libyaml's parser stage (as opposed to
// its scanner), whose line numbers go-yaml v2 prints 0-based.
func isYAMLParserError(msg string) bool {
	for _, prefix := range []string{
		"did not find expected key",
		"did not find expected ',' or ']'",
		"did not find expected ',' or '}'",
		"did not find expected node content",
		"did not find expected <document start>",
		"did not find expected '-' indicator",
		"found undefined tag handle",
		"found duplicate %",
		"found incompatible YAML document",
	} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// duplicateKeys walks valid JSON text and reports keys that appear twice in one
// object (encoding/json would silently keep the last one).
func duplicateKeys(text []byte) []Problem {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var out []Problem
	type frame struct {
		obj    bool
		keys   map[string]bool
		index  int
		key    string
		expKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.obj {
				b.WriteString("/" + escapePointer(f.key))
			} else {
				b.WriteString("/" + strconv.Itoa(f.index))
			}
		}
		return b.String()
	}
	value := func() { // a value just completed in the innermost container
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.obj {
			f.expKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, expKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		default:
			if len(stack) > 0 {
				f := stack[len(stack)-1]
				if f.obj && f.expKey {
					k, _ := t.(string)
					f.key, f.expKey = k, false
					if f.keys[k] {
						line := lineOf(text, int(dec.InputOffset()))
						out = append(out, Problem{Path: path(), Code: CodeSyntax, Line: line,
							Message: fmt.Sprintf("line %d: key %q appears twice in the same object", line, k)})
					}
					f.keys[k] = true
					continue
				}
			}
			value()
		}
	}
	return out
}

// decodeDocument decodes canonical JSON (already schema-valid) into a Document.
func decodeDocument(canon []byte) (*Document, []Problem) {
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.DisallowUnknownFields()
	var doc Document
	if err := dec.Decode(&doc); err != nil {
		p := Problem{Code: CodeInvalidValue, Message: err.Error()}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			p.Code = CodeWrongType
			p.Message = fmt.Sprintf("field %s: cannot hold the JSON %s", te.Field, te.Value)
		} else if strings.HasPrefix(err.Error(), "json: unknown field") {
			p.Code = CodeUnknownField
		}
		return nil, []Problem{p}
	}
	return &doc, nil
}

func lineOf(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func sizeText(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// sortProblems orders problems by path (array indices compared as numbers), then
// line, then message, and drops exact duplicates.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if c := comparePointers(ps[i].Path, ps[j].Path); c != 0 {
			return c < 0
		}
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		return ps[i].Message < ps[j].Message
	})
}

func dedupeProblems(ps []Problem) []Problem {
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}

func comparePointers(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			if ai < bi {
				return -1
			}
			return 1
		}
		return strings.Compare(as[i], bs[i])
	}
	return len(as) - len(bs)
}
