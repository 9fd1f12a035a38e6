package pii

import (
	"context"
	"slices"
	"strings"
)

// DefaultScanBytes bounds the text one safety scan (pii, jailbreak) reads per
// request. Input beyond it is left unscanned and on_unscanned decides.
const DefaultScanBytes = 256 << 10

// MaxSpans is the most spans one scan result keeps (Matches.Spans). Past it
// the spans of the newest messages are kept and Matches.Truncated is set: a
// plugin that must mask everything learns that it cannot.
const MaxSpans = 256

// Texts is what a safety scan reads of a request. The router's signals
// (engine/signal's Input) and the plugin harness's stand-in for them
// (internal/plugin.StandInPII) both describe a request this way, so that
// both budget, scan and place spans with this one code.
type Texts struct {
	// User holds the content of every user message, oldest first.
	User []string
	// Last is scanned when there is no user message (the last message's text).
	Last string
	// UserMessages holds, for each User entry, its index in the request's
	// messages. When it is shorter than User the missing entries are taken to
	// be their User index (a caller whose messages are all user messages need
	// not fill it).
	UserMessages []int
	// Messages is how many messages the request has: Last is message
	// Messages-1.
	Messages int
}

// Budget returns the texts a safety scan reads, newest first, cut to budget
// bytes, and whether anything was left out. Newest first because the last
// message is the one being sent now; older ones were most likely scanned when
// they were new. When from is not nil, the User index of each text returned
// is appended to it (-1 for Last, read because there are no user texts) and
// the result returned as at.
func (in *Texts) Budget(budget int, from []int) (texts []string, at []int, over bool) {
	all := in.User
	fallback := false
	if len(all) == 0 && in.Last != "" {
		all, fallback = []string{in.Last}, true
	}
	out := make([]string, 0, len(all))
	left := budget
	for i := len(all) - 1; i >= 0; i-- {
		t := all[i]
		if strings.TrimSpace(t) == "" {
			continue // nothing to scan; a model need not see it
		}
		if len(t) > left {
			if left <= 0 {
				return out, from, true
			}
			t, over = TruncateUTF8(t, left), true
		}
		left -= len(t)
		out = append(out, t)
		if from != nil {
			k := i
			if fallback {
				k = -1
			}
			from = append(from, k)
		}
		if over {
			return out, from, true
		}
	}
	return out, from, false
}

// MessageOf is the request message index of User[k] (k -1: Last).
func (in *Texts) MessageOf(k int) int {
	switch {
	case k < 0:
		return max(in.Messages-1, 0)
	case k < len(in.UserMessages):
		return in.UserMessages[k]
	}
	return k
}

// TruncateUTF8 cuts s to at most n bytes without splitting a rune.
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Found is an entity a scan found, with the request message it is in.
type Found struct {
	Entity
	Message int
}

// Scan runs Detect over the texts Budget gives (the newest message's
// entities first) and reports whether the budget left anything out. It stops
// with ctx's error when ctx ends between texts.
func Scan(ctx context.Context, in *Texts, budget int, heuristics bool) (found []Found, over bool, err error) {
	var fromBuf [4]int
	texts, from, over := in.Budget(budget, fromBuf[:0])
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, over, err
		}
		msg := in.MessageOf(from[i])
		es := Detect(t, heuristics)
		found = slices.Grow(found, len(es))
		for _, e := range es {
			found = append(found, Found{Entity: e, Message: msg})
		}
	}
	return found, over, nil
}

// Span is one piece of personal data a scan counted, placed in the request:
// Message is the index in the request's messages, Start and End (exclusive)
// byte offsets into that message's text content as flattened for routing
// (text parts joined by newlines).
type Span struct {
	Message    int
	Start, End int
	Type       string
	Score      float64
}

// Matches is what one pii signal counts of a scan's entities.
type Matches struct {
	Count int
	// Score is the highest confidence counted.
	Score float64
	// Types are the entity types counted, sorted.
	Types []string
	// Spans are the entities counted, sorted by message and offset, at most
	// MaxSpans (the newest messages' kept); Truncated says some were left out.
	Spans     []Span
	Truncated bool
}

// Select counts the entities of found whose type is in types (nil: every
// type) with confidence at least threshold.
func Select(found []Found, types map[string]bool, threshold float64) Matches {
	var m Matches
	for k, e := range found {
		if (types != nil && !types[e.Type]) || e.Confidence < threshold {
			continue
		}
		m.Count++
		m.Score = max(m.Score, e.Confidence)
		if !slices.Contains(m.Types, e.Type) {
			m.Types = append(m.Types, e.Type)
		}
		// found holds the newest message's entities first: past the bound,
		// those are the ones kept.
		if len(m.Spans) == MaxSpans {
			m.Truncated = true
			continue
		}
		if m.Spans == nil {
			m.Spans = make([]Span, 0, min(len(found)-k, MaxSpans))
		}
		m.Spans = append(m.Spans, Span{Message: e.Message, Start: e.Start, End: e.End, Type: e.Type, Score: e.Confidence})
	}
	slices.SortFunc(m.Spans, func(a, b Span) int {
		if a.Message != b.Message {
			return a.Message - b.Message
		}
		return a.Start - b.Start
	})
	slices.Sort(m.Types)
	return m
}
