package ingest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Extract reads a document of mediaType (as Accept gave it) from r and
// returns its readable text: plain text and Markdown as they are; HTML
// reduced to its visible text (no script, style or head; block elements
// on lines of their own; link text kept; entities decoded); CSV one line per
// row, "header: value; header: value"; JSON one line per value,
// "path.to.key: value" with array elements indexed ("items[2].name: x").
// The text must be UTF-8 (a byte-order mark is dropped) and not empty
// (errors wrap ErrInvalid); images have no text (ErrUnsupported). r is read
// to its end: the caller bounds it.
func Extract(mediaType string, r io.Reader) (string, error) {
	if IsImage(mediaType) {
		return "", fmt.Errorf("%w: %s is an image; images are kept for vision requests, not ingested", ErrUnsupported, mediaType)
	}
	switch mediaType {
	case MediaText, MediaMarkdown, MediaHTML, MediaCSV, MediaJSON:
	default:
		return "", fmt.Errorf("%w: media type %q cannot be ingested; accepted are %s", ErrUnsupported, mediaType, acceptedTypes)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%w: the file is not UTF-8 text (convert it to UTF-8 and upload it again)", ErrInvalid)
	}
	var text string
	switch mediaType {
	case MediaHTML:
		text, err = htmlText(b)
	case MediaCSV:
		text, err = csvText(b)
	case MediaJSON:
		text, err = jsonText(b)
	default:
		text = strings.ReplaceAll(string(b), "\r\n", "\n")
	}
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("%w: the document has no text", ErrInvalid)
	}
	return text, nil
}

// ---- HTML

// skipped are elements whose content is not readable text.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Canvas: true,
	atom.Select: true, atom.Button: true,
}

// blocks are elements that start and end a line of text.
var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Body: true,
	atom.Caption: true, atom.Dd: true, atom.Details: true, atom.Dialog: true, atom.Div: true, atom.Dl: true,
	atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true,
	atom.Form: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Header: true, atom.Hr: true, atom.Html: true, atom.Legend: true, atom.Li: true, atom.Main: true,
	atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true, atom.Summary: true,
	atom.Table: true, atom.Tbody: true, atom.Tfoot: true, atom.Thead: true,
	atom.Tr: true, atom.Ul: true,
}

// paragraphs are blocks followed by a blank line.
var paragraphs = map[atom.Atom]bool{
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Blockquote: true, atom.Pre: true, atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Dl: true,
	atom.Section: true, atom.Article: true, atom.Figure: true,
}

// htmlText reduces an HTML document to its visible text.
func htmlText(b []byte) (string, error) {
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		// x/net/html refuses elements nested more than 512 deep.
		return "", fmt.Errorf("%w: the HTML cannot be read (%v)", ErrInvalid, err)
	}
	w := &textWriter{}
	// An explicit stack, not recursion: deeply nested markup cannot exhaust
	// the goroutine's stack.
	type frame struct {
		n    *html.Node
		exit bool
	}
	stack := []frame{{n: doc}}
	pre := 0
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := f.n
		if f.exit {
			switch {
			case n.DataAtom == atom.Pre:
				pre--
				w.paragraph()
			case paragraphs[n.DataAtom]:
				w.paragraph()
			case blocks[n.DataAtom]:
				w.line()
			case n.DataAtom == atom.Td || n.DataAtom == atom.Th:
				w.space()
			}
			continue
		}
		switch n.Type {
		case html.TextNode:
			w.text(n.Data, pre > 0)
			continue
		case html.ElementNode:
			if skipped[n.DataAtom] {
				continue
			}
			switch {
			case n.DataAtom == atom.Br:
				w.line()
				continue
			case n.DataAtom == atom.Img:
				for _, a := range n.Attr {
					if a.Key == "alt" && strings.TrimSpace(a.Val) != "" {
						w.text(a.Val, false)
					}
				}
				continue
			case n.DataAtom == atom.Pre:
				pre++
				w.paragraph()
			case paragraphs[n.DataAtom]:
				w.paragraph()
			case blocks[n.DataAtom]:
				w.line()
			}
			if n.DataAtom == atom.Li {
				w.text("- ", true)
			}
		case html.DocumentNode:
		default: // comments, doctypes
			continue
		}
		stack = append(stack, frame{n: n, exit: true})
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, frame{n: c})
		}
	}
	return w.String(), nil
}

// textWriter collects text with collapsed whitespace, at most one blank line
// in a row.
type textWriter struct {
	b        []byte
	newlines int  // newlines at the end of b
	spaced   bool // b ends in a space or newline (or is empty)
}

func (w *textWriter) String() string { return strings.TrimSpace(string(w.b)) }

func (w *textWriter) text(s string, keep bool) {
	if s == "" {
		return
	}
	if keep { // preformatted: as it is
		s = strings.ReplaceAll(s, "\r\n", "\n")
		w.b = append(w.b, s...)
		t := strings.TrimRight(s, "\n")
		if t == "" {
			w.newlines += len(s)
		} else {
			w.newlines = len(s) - len(t)
		}
		w.spaced = strings.HasSuffix(s, " ") || w.newlines > 0
		return
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		w.space()
		return
	}
	if isSpace(s[0]) {
		w.space()
	}
	for i, f := range fields {
		if i > 0 {
			w.b = append(w.b, ' ')
		}
		w.b = append(w.b, f...)
	}
	w.spaced, w.newlines = false, 0
	if isSpace(s[len(s)-1]) {
		w.space()
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' }

func (w *textWriter) space() {
	if !w.spaced && len(w.b) > 0 {
		w.b = append(w.b, ' ')
		w.spaced = true
	}
}

func (w *textWriter) line() { w.breaks(1) }

func (w *textWriter) paragraph() { w.breaks(2) }

func (w *textWriter) breaks(n int) {
	if len(w.b) == 0 {
		return
	}
	// Spaces before a line break are dropped.
	for len(w.b) > 0 && w.b[len(w.b)-1] == ' ' {
		w.b = w.b[:len(w.b)-1]
	}
	for w.newlines < n {
		w.b = append(w.b, '\n')
		w.newlines++
	}
	w.spaced = true
}

// ---- CSV

// csvText writes each row after the header as "header: value; ...",
// leaving out empty values; a file of one row is that row, comma-joined.
func csvText(b []byte) (string, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: the CSV cannot be read: %v", ErrInvalid, err)
	}
	header = cleanCells(append([]string(nil), header...))
	var sb strings.Builder
	rows := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%w: the CSV cannot be read: %v", ErrInvalid, err)
		}
		line := false
		for i, v := range rec {
			v = strings.Join(strings.Fields(v), " ")
			if v == "" {
				continue
			}
			name := ""
			if i < len(header) {
				name = header[i]
			}
			if name == "" {
				name = "column " + strconv.Itoa(i+1)
			}
			if line {
				sb.WriteString("; ")
			}
			sb.WriteString(name)
			sb.WriteString(": ")
			sb.WriteString(v)
			line = true
		}
		if line {
			sb.WriteByte('\n')
			rows++
		}
	}
	if rows == 0 {
		return strings.Join(header, ", "), nil
	}
	return sb.String(), nil
}

func cleanCells(cells []string) []string {
	for i, c := range cells {
		cells[i] = strings.Join(strings.Fields(c), " ")
	}
	return cells
}

// ---- JSON

// jsonLevel is one open object or array of a JSON document.
type jsonLevel struct {
	array     bool
	key       string // objects: the current key
	index     int    // arrays: the current index
	expectKey bool   // objects: the next string is a key
	filled    bool   // a value was seen in it
}

// jsonText writes one line per scalar value, "path: value", in document
// order (an empty object or array is written as {} or []; several
// concatenated values, as in JSON Lines, follow each other with a blank line
// between). It reads tokens, so nesting depth costs no stack.
func jsonText(b []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var sb strings.Builder
	var stack []jsonLevel
	var path strings.Builder
	emit := func(v string) {
		path.Reset()
		for _, l := range stack {
			if l.array {
				path.WriteByte('[')
				path.WriteString(strconv.Itoa(l.index))
				path.WriteByte(']')
				continue
			}
			if path.Len() > 0 {
				path.WriteByte('.')
			}
			path.WriteString(l.key)
		}
		if path.Len() > 0 {
			sb.WriteString(path.String())
			sb.WriteString(": ")
		}
		sb.WriteString(v)
		sb.WriteByte('\n')
	}
	// ended moves the enclosing container on once a value is complete.
	ended := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].expectKey = true
			}
		}
	}
	values := 0
	for {
		t, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%w: the JSON cannot be read: %v", ErrInvalid, err)
		}
		n := len(stack)
		if n > 0 && !stack[n-1].array && stack[n-1].expectKey {
			k, _ := t.(string) // the decoder gives a key here, or the closing brace
			if _, closing := t.(json.Delim); !closing {
				if k == "" {
					k = `""`
				}
				stack[n-1].key, stack[n-1].expectKey = k, false
				continue
			}
		}
		if n == 0 {
			if values > 0 {
				sb.WriteByte('\n')
			}
			values++
		}
		if d, closing := t.(json.Delim); n > 0 && !(closing && (d == '}' || d == ']')) {
			stack[n-1].filled = true
		}
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, jsonLevel{array: v == '[', expectKey: v == '{'})
			default:
				l := stack[n-1]
				stack = stack[:n-1]
				if !l.filled {
					if l.array {
						emit("[]")
					} else {
						emit("{}")
					}
				}
				ended()
			}
		case string:
			emit(strings.ReplaceAll(v, "\r\n", "\n"))
			ended()
		case json.Number:
			emit(v.String())
			ended()
		case bool:
			emit(strconv.FormatBool(v))
			ended()
		case nil:
			emit("null")
			ended()
		}
	}
	return sb.String(), nil
}
