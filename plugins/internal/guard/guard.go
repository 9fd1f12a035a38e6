// Package guard holds what the response-checking plugins (response_jailbreak,
// hallucination) share: reading the assistant's text out of an answer, the
// preview's supplied inputs, claims split out of an answer, and the header
// value they report with. It does no I/O and holds no plugin policy.
package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
)

// Fields a preview (or probe) supplies inside the request: what the answer
// and its grounding would be, and a detector score to apply the policy to.
// The plugins remove them in every mode so they never reach a backend.
const (
	SuppliedAnswer  = "supplied_answer"
	SuppliedContext = "supplied_context"
	SuppliedScore   = "supplied_score"
)

// MaxText bounds the text a plugin reads of an answer or its grounding
// (bytes); past it the text is cut on a character boundary. A guard model
// judges the first MaxText of a longer answer, and says so in its report.
const MaxText = 64 << 10

// Cut returns s cut to at most n bytes on a character boundary, and whether
// it was cut.
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// AnswerText is the assistant text of a chat.completion: every choice's
// message content (text parts joined by newlines), in order. An answer with
// no text (only tool calls) is "" and no error.
func AnswerText(body []byte) (string, error) {
	var a struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return "", fmt.Errorf("the answer is not a chat completion: %v", err)
	}
	if a.Choices == nil {
		return "", errors.New("the answer is not a chat completion: it has no choices")
	}
	var parts []string
	for i, c := range a.Choices {
		if len(c.Message.Content) == 0 || string(c.Message.Content) == "null" {
			continue
		}
		t, err := chatmsg.ContentText(c.Message.Content)
		if err != nil {
			return "", fmt.Errorf("choice %d's content: %v", i, err)
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "\n"), nil
}

// StringOrList reads a supplied field that is a string or an array of
// strings (or of objects with a text member, as rag's supplied_context).
func StringOrList(raw []byte) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("must be a string or an array of strings")
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
			continue
		}
		var p struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(it, &p) != nil || p.Text == nil {
			return nil, fmt.Errorf("item %d must be a string or an object with text", i)
		}
		out = append(out, *p.Text)
	}
	return out, nil
}

// Claim is one sentence of an answer: its byte span in the answer text.
type Claim struct {
	Start, End int
	Text       string
}

// Claims splits text into sentences (at . ! ? followed by a space, and at
// line breaks) and keeps those with at least minWords words, at most max of
// them (the first ones). Spans are byte offsets into text.
func Claims(text string, minWords, max int) []Claim {
	var out []Claim
	start := 0
	flush := func(end int) {
		seg := text[start:end]
		lead := len(seg) - len(strings.TrimLeftFunc(seg, unicode.IsSpace))
		trimmed := strings.TrimSpace(seg)
		if trimmed != "" && len(strings.Fields(trimmed)) >= minWords && len(out) < max {
			s := start + lead
			out = append(out, Claim{Start: s, End: s + len(trimmed), Text: trimmed})
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			flush(i)
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' {
				flush(i + 1)
			}
		}
	}
	flush(len(text))
	return out
}

// Words are the lower-cased words of s of at least three letters or digits,
// the ones that carry a claim's content.
func Words(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := f[:0]
	for _, w := range f {
		if utf8.RuneCountInString(w) >= 3 && !stop[w] {
			out = append(out, w)
		}
	}
	return out
}

var stop = map[string]bool{
	"the": true, "and": true, "are": true, "was": true, "were": true, "for": true, "with": true, "that": true, "this": true,
	"from": true, "has": true, "have": true, "had": true, "not": true, "but": true, "you": true, "your": true, "its": true,
	"they": true, "their": true, "there": true, "which": true, "can": true, "will": true, "would": true, "also": true,
	"into": true, "than": true, "then": true, "them": true, "these": true, "those": true, "been": true, "being": true,
}

// Overlap is the share of claim's content words found in grounding's (1
// when the claim has none): the model-free support check a preview runs.
func Overlap(claim string, grounding map[string]bool) float64 {
	ws := Words(claim)
	if len(ws) == 0 {
		return 1
	}
	n := 0
	for _, w := range ws {
		if grounding[w] {
			n++
		}
	}
	return float64(n) / float64(len(ws))
}

// WordSet is the set of Words of texts.
func WordSet(texts []string) map[string]bool {
	m := map[string]bool{}
	for _, t := range texts {
		for _, w := range Words(t) {
			m[w] = true
		}
	}
	return m
}

// Spans formats claims' spans for a report ("12-40,50-80"): offsets, never
// the text, so that a report carries no answer text.
func Spans(cs []Claim) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d-%d", c.Start, c.End)
	}
	return b.String()
}
