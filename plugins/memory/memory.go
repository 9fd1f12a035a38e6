// Package memory is the built-in memory plugin: it gives a model what a user
// told it in earlier conversations. Memories are kept per scope (the value of
// a configured header such as x-user-id, or else the request's user field)
// through the host's memory_recall and memory_remember functions. In the
// request phase it recalls the scope's memories most relevant to the last
// user message and injects them as a system message after the leading system
// messages; then, in live mode only, it remembers what that message
// establishes about the user: first-person statements ("my name is …", "I
// live in …", "I prefer …", "call me …") and explicit requests ("remember
// that …"), a few short sentences per request.
//
// In preview mode it recalls nothing and injects the supplied_memories the
// caller gives, and shows what it would remember; in probe mode it recalls
// for real and remembers nothing. Nothing is ever persisted outside live
// mode.
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O: the adapter (wasm.go) calls the host.
package memory

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "memory"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Config is the plugin's configuration.
type Config struct {
	// ScopeHeader names the header whose value is the scope (e.g.
	// x-user-id); without it, or when the request lacks that header, the
	// request's user field is.
	ScopeHeader string `json:"scope_header,omitempty"`
	// TopK is how many memories to recall (default 3).
	TopK int `json:"top_k,omitempty"`
	// MinScore drops memories less similar than it (default 0.3).
	MinScore *float64 `json:"min_score,omitempty"`
	// Template wraps the memories; {memories} marks where they go.
	Template string `json:"template,omitempty"`
	// MaxMemoryChars bounds the injected memories (default 2000).
	MaxMemoryChars int `json:"max_memory_chars,omitempty"`
	// Remember keeps what the last user message establishes (default
	// true; live mode only).
	Remember *bool `json:"remember,omitempty"`
}

// Defaults and bounds.
const (
	DefaultTopK           = 3
	DefaultMinScore       = 0.3
	DefaultMaxMemoryChars = 2000
	DefaultTemplate       = "What you remember about this user from earlier conversations (in their words; use it when it helps, do not recite it):\n{memories}"
	// MaxRemember is the most statements remembered from one request, and
	// MaxStatementChars the longest statement kept (longer ones are not
	// remembered).
	MaxRemember       = 5
	MaxStatementChars = 500
	// MaxScopeBytes bounds a scope; a longer header or user is refused.
	MaxScopeBytes = 256
	// maxScan bounds how much of the last user message is searched for
	// statements.
	maxScan = 16 << 10
	maxTopK = 20
)

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	c.ScopeHeader = strings.ToLower(strings.TrimSpace(c.ScopeHeader))
	for _, r := range c.ScopeHeader {
		if r > unicode.MaxASCII || !(r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return nil, pconfig.Errorf("scope_header", "must be a header name (letters, digits, -, _ or .), not %q", c.ScopeHeader)
		}
	}
	if c.TopK == 0 {
		c.TopK = DefaultTopK
	}
	if c.TopK < 1 || c.TopK > maxTopK {
		return nil, pconfig.Errorf("top_k", "must be between 1 and %d, not %d", maxTopK, c.TopK)
	}
	if c.MinScore == nil {
		m := DefaultMinScore
		c.MinScore = &m
	}
	if m := *c.MinScore; math.IsNaN(m) || m < -1 || m > 1 {
		return nil, pconfig.Errorf("min_score", "must be between -1 and 1, not %v", m)
	}
	if c.Template == "" {
		c.Template = DefaultTemplate
	}
	if !strings.Contains(c.Template, "{memories}") {
		return nil, pconfig.Errorf("template", "must contain {memories}, where the memories go")
	}
	if c.MaxMemoryChars == 0 {
		c.MaxMemoryChars = DefaultMaxMemoryChars
	}
	if c.MaxMemoryChars < 1 || c.MaxMemoryChars > 1<<16 {
		return nil, pconfig.Errorf("max_memory_chars", "must be between 1 and %d, not %d", 1<<16, c.MaxMemoryChars)
	}
	if c.Remember == nil {
		t := true
		c.Remember = &t
	}
	return c, nil
}

// Scope picks the scope: the configured header's value when the request has
// it, else the request's user field. from says which ("header x-user-id",
// "user"); scope is "" when there is none. A scope over MaxScopeBytes or
// with control characters is an error.
func (c *Config) Scope(header func(name string) (string, bool), user string) (scope, from string, err error) {
	if c.ScopeHeader != "" {
		if v, ok := header(c.ScopeHeader); ok && strings.TrimSpace(v) != "" {
			scope, from = strings.TrimSpace(v), "header "+c.ScopeHeader
		}
	}
	if scope == "" && strings.TrimSpace(user) != "" {
		scope, from = strings.TrimSpace(user), "user"
	}
	if len(scope) > MaxScopeBytes || !utf8.ValidString(scope) || strings.IndexFunc(scope, unicode.IsControl) >= 0 {
		return "", from, fmt.Errorf("the scope (from %s) must be at most %d bytes of printable text", from, MaxScopeBytes)
	}
	return scope, from, nil
}

// Recalled is one memory to inject.
type Recalled struct {
	Text  string  `json:"text"`
	Score float64 `json:"score,omitempty"`
}

// Result is what the plugin wants done with the request.
type Result struct {
	Edits []chatmsg.Edit
	// Injected is the number of memories injected; Chars the injected
	// text's length; Texts the memories injected.
	Injected, Chars int
	Texts           []string
	Detail          string
}

// Inject puts the memories (best first) into a system message after the
// leading system and developer messages, keeping at most TopK and
// MaxMemoryChars of them. No memory, no edit.
func (c *Config) Inject(msgs []chatmsg.Message, memories []Recalled) *Result {
	var b strings.Builder
	res := &Result{}
	for _, m := range memories {
		text := strings.Join(strings.Fields(m.Text), " ")
		if text == "" {
			continue
		}
		if res.Injected == c.TopK {
			break
		}
		line := "- " + text
		sep := ""
		if b.Len() > 0 {
			sep = "\n"
		}
		left := c.MaxMemoryChars - b.Len() - len(sep)
		if left <= 0 {
			break
		}
		if len(line) > left {
			line = chatmsg.Truncate(line, left)
		}
		b.WriteString(sep)
		b.WriteString(line)
		res.Injected++
		res.Texts = append(res.Texts, text)
	}
	if res.Injected == 0 {
		return res
	}
	at := chatmsg.AfterInstructions(msgs)
	res.Chars = b.Len()
	res.Edits = []chatmsg.Edit{{Kind: chatmsg.Insert, Index: at, Raw: chatmsg.New("system", strings.Replace(c.Template, "{memories}", b.String(), 1))}}
	res.Detail = fmt.Sprintf("injected %s (%d chars) as a system message at messages[%d]", Count(res.Injected, "memory", "memories"), res.Chars, at)
	return res
}

// ParseSupplied reads supplied_memories: an array of strings (or of
// {"text"} objects).
func ParseSupplied(raw json.RawMessage) ([]Recalled, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("supplied_memories must be an array of strings: %v", err)
	}
	out := make([]Recalled, 0, len(elems))
	for i, e := range elems {
		var s string
		if json.Unmarshal(e, &s) == nil {
			out = append(out, Recalled{Text: s})
			continue
		}
		var r Recalled
		if err := json.Unmarshal(e, &r); err != nil || r.Text == "" {
			return nil, fmt.Errorf("supplied_memories[%d] must be a string", i)
		}
		out = append(out, r)
	}
	return out, nil
}

// Statements returns what text establishes about its author, to remember:
// first-person statements of lasting facts and preferences ("My name is
// Ada.", "I live in Lisbon.", "I prefer short answers.", "Call me Ada.") and
// explicit requests ("Remember that my flight is on Friday." keeps "My
// flight is on Friday."). Questions, hypotheticals and passing states ("I'm
// trying to …", "I am not sure …") are not statements. At most MaxRemember,
// each at most MaxStatementChars (longer sentences are skipped), without
// repeats, in the order written.
func Statements(text string) []string {
	if len(text) > maxScan {
		text = chatmsg.Truncate(text, maxScan)
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range sentences(text) {
		st, ok := statement(s)
		if !ok || len(st) > MaxStatementChars {
			continue
		}
		key := strings.ToLower(st)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, st)
		if len(out) == MaxRemember {
			break
		}
	}
	return out
}

// sentences splits text at sentence ends (. ! ? followed by a space or the
// end), semicolons and line breaks; each keeps its closing mark.
func sentences(text string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n', ';':
			emit(i)
			start = i + 1
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' || text[i+1] == '\t' {
				emit(i + 1)
			}
		}
	}
	emit(len(text))
	return out
}

// Leading words that carry nothing ("Oh, and btw my name is …").
var fillers = []string{"and", "also", "oh", "btw", "by the way", "fyi", "well", "so", "just so you know", "for the record", "hi", "hello", "hey", "ok", "okay"}

// Passing states: "I'm <these> …" says nothing lasting.
var passing = []string{
	"trying", "looking", "getting", "having", "wondering", "asking", "not sure", "unsure", "going to", "gonna",
	"curious", "confused", "sorry", "stuck", "here", "back", "done", "ok", "okay", "fine", "glad", "happy to",
	"just", "about to", "afraid", "thinking", "still", "sure", "so", "really", "new here", "not", "a bit",
}

// statement returns what sentence s establishes, or ok false.
func statement(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, "?") {
		return "", false
	}
	rest := lowerASCII(s) // same length as s, so offsets carry over
	for cut := true; cut; {
		rest = strings.TrimLeft(rest, " ,:-")
		cut = false
		for _, f := range fillers {
			if len(rest) > len(f) && strings.HasPrefix(rest, f) && (rest[len(f)] == ' ' || rest[len(f)] == ',') {
				rest, cut = rest[len(f):], true
				break
			}
		}
	}
	orig := s[len(s)-len(rest):]
	// Explicit requests: keep what is to be remembered.
	for _, p := range []string{"please remember that ", "please remember ", "remember that ", "remember: ", "don't forget that ", "do not forget that ", "note that i ", "keep in mind that "} {
		if strings.HasPrefix(rest, p) {
			keep := strings.TrimSpace(orig[len(p):])
			if p == "note that i " {
				keep = "I " + keep
			}
			if len(strings.Fields(keep)) < 2 {
				return "", false
			}
			return capitalize(keep), true
		}
	}
	words := strings.Fields(rest)
	if len(words) < 3 {
		return "", false // "I am." "I'm here." — too little to keep
	}
	switch {
	case strings.HasPrefix(rest, "my name is "), strings.HasPrefix(rest, "my name's "), strings.HasPrefix(rest, "call me "),
		strings.HasPrefix(rest, "my pronouns are "), strings.HasPrefix(rest, "my birthday is "),
		strings.HasPrefix(rest, "my favorite "), strings.HasPrefix(rest, "my favourite "),
		strings.HasPrefix(rest, "my job is "), strings.HasPrefix(rest, "my job title is "), strings.HasPrefix(rest, "my role is "),
		strings.HasPrefix(rest, "my native language is "), strings.HasPrefix(rest, "my first language is "),
		strings.HasPrefix(rest, "my timezone is "), strings.HasPrefix(rest, "my time zone is "),
		strings.HasPrefix(rest, "i live "), strings.HasPrefix(rest, "i work "), strings.HasPrefix(rest, "i'm from "),
		strings.HasPrefix(rest, "i am from "), strings.HasPrefix(rest, "i come from "), strings.HasPrefix(rest, "i was born "),
		strings.HasPrefix(rest, "i prefer "), strings.HasPrefix(rest, "i like "), strings.HasPrefix(rest, "i love "),
		strings.HasPrefix(rest, "i hate "), strings.HasPrefix(rest, "i dislike "), strings.HasPrefix(rest, "i don't like "),
		strings.HasPrefix(rest, "i do not like "), strings.HasPrefix(rest, "i enjoy "), strings.HasPrefix(rest, "i speak "),
		strings.HasPrefix(rest, "i'm allergic "), strings.HasPrefix(rest, "i am allergic "):
		return capitalize(orig), true
	}
	for _, p := range []string{"i am ", "i'm ", "i’m "} {
		if !strings.HasPrefix(rest, p) {
			continue
		}
		after := rest[len(p):]
		for _, x := range passing {
			if strings.HasPrefix(after, x) && (len(after) == len(x) || !isLetter(after[len(x)])) {
				return "", false
			}
		}
		if strings.HasSuffix(strings.Fields(after)[0], "ing") {
			return "", false // "I'm building …", "I'm debugging …": what they do now
		}
		return capitalize(orig), true
	}
	return "", false
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// lowerASCII lower-cases ASCII letters only, keeping every byte offset.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// Query is the text memories are recalled for: the user's last message.
func Query(msgs []chatmsg.Message) string { return chatmsg.LastUserText(msgs) }

// Count says n things: "1 memory", "2 memories".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
