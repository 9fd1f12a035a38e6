package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
)

// TextSpan is a span of personal data as routing detects it (pii.Span, which
// engine/signal calls PIISpan, has the same fields): Message indexes the request's messages, Start
// and End are byte offsets into that message's flattened text
// (chat.Message.Content).
type TextSpan struct {
	Message    int
	Start, End int
	Type       string
	Score      float64
}

// LocatePII turns the spans routing detected (TextSpan: offsets into each
// message's flattened text) into the spans plugins read: offsets into
// the message's string content, or into the text of the content part that
// holds them (abi.PIISpan.Part). A span that crosses from one text part into
// the next is split into one span per part (the newline that joins them in the
// flattened text is in neither). A span whose message is not in c, or not
// where its offsets say, is an error: routing and the request are out of step.
// truncated and unscanned become the record's flags.
func LocatePII(c *chat.Request, spans []TextSpan, truncated, unscanned bool) (*abi.PIISpans, error) {
	out := &abi.PIISpans{}
	if truncated {
		out.Flags |= abi.PIITruncated
	}
	if unscanned {
		out.Flags |= abi.PIIUnscanned
	}
	if len(spans) == 0 {
		return out, nil
	}
	if c == nil {
		return nil, fmt.Errorf("personal-data spans for a request without a chat body")
	}
	var elems []json.RawMessage
	var parts []partText // the current message's text parts (nil: string content)
	current := -1
	out.Spans = make([]abi.PIISpan, 0, len(spans))
	for _, s := range spans {
		if s.Message < 0 || s.Message >= len(c.Messages) || s.Start < 0 || s.Start >= s.End || s.End > len(c.Messages[s.Message].Content) {
			return nil, fmt.Errorf("personal-data span [%d,%d) of messages[%d] is outside the request's messages", s.Start, s.End, s.Message)
		}
		if s.Message != current {
			if elems == nil {
				// Spans are sorted by message: split only as far as the last.
				need := spans[len(spans)-1].Message + 1
				var err error
				if elems, _, err = arrayPrefix(c.Fields["messages"], need); err != nil || len(elems) != need {
					return nil, fmt.Errorf("personal-data spans: the request's messages cannot be read (%v)", err)
				}
			}
			if s.Message >= len(elems) {
				return nil, fmt.Errorf("personal-data spans are not sorted by message")
			}
			var err error
			if parts, err = textParts(elems[s.Message], c.Messages[s.Message].Content); err != nil {
				return nil, fmt.Errorf("personal-data spans: messages[%d]: %w", s.Message, err)
			}
			current = s.Message
		}
		score := float32(s.Score)
		if parts == nil {
			out.Spans = append(out.Spans, abi.PIISpan{Message: uint32(s.Message), Part: abi.NoPart,
				Start: uint32(s.Start), End: uint32(s.End), Type: s.Type, Score: score})
			continue
		}
		for _, p := range parts {
			lo, hi := max(s.Start, p.at), min(s.End, p.at+p.n)
			if lo < hi {
				out.Spans = append(out.Spans, abi.PIISpan{Message: uint32(s.Message), Part: uint32(p.index),
					Start: uint32(lo - p.at), End: uint32(hi - p.at), Type: s.Type, Score: score})
			}
		}
	}
	if n := len(out.Spans); n > abi.MaxPIISpans {
		// Splitting at part boundaries made more: keep the newest, as routing does.
		out.Spans = out.Spans[n-abi.MaxPIISpans:]
		out.Flags |= abi.PIITruncated
	}
	return out, nil
}

// partText is one text part of a message's content: its index in the content
// array, where its text starts in the flattened text, and its length.
type partText struct{ index, at, n int }

// textParts reads a message's content the way chat flattens it (the text of
// every part that has one, joined by newlines); nil for string content. It
// scans the JSON rather than decoding it (this runs per request with personal
// data), and checks that the parts add up to the flattened text it was given.
func textParts(msg json.RawMessage, flat string) ([]partText, error) {
	ms, err := objectMembers(msg)
	if err != nil {
		return nil, err
	}
	content := lookupLast(msg, ms, "content")
	if i := skipWS(content, 0); i >= len(content) || content[i] != '[' {
		return nil, nil
	}
	elems, _, err := arrayPrefix(content, -1)
	if err != nil {
		return nil, err
	}
	out := make([]partText, 0, len(elems))
	at := 0
	for k, e := range elems {
		pm, err := objectMembers(e)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", k, err)
		}
		raw := lookupLast(e, pm, "text")
		if isNull(raw) {
			continue
		}
		text, err := unquote(bytes.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("content[%d].text: %w", k, err)
		}
		if len(out) > 0 {
			at++ // the newline joining it to the previous part
		}
		out = append(out, partText{index: k, at: at, n: len(text)})
		at += len(text)
	}
	if at != len(flat) {
		return nil, fmt.Errorf("its text parts (%d bytes) do not make up its text (%d bytes)", at, len(flat))
	}
	return out, nil
}

// shiftPII keeps spans in step with a plugin's message edits (in the order
// applied): an insert moves the later messages' spans up, a removal drops
// the removed message's spans and moves the later ones down, a replacement
// drops the replaced message's spans (they described the old text; the
// plugin that replaced it answers for the new one).
func shiftPII(p *abi.PIISpans, edits []messageEdit) {
	if p == nil || len(p.Spans) == 0 {
		return
	}
	for _, e := range edits {
		i := uint32(e.index)
		kept := p.Spans[:0]
		for _, s := range p.Spans {
			switch {
			case s.Message < i:
			case e.insert:
				s.Message++
			case s.Message == i:
				continue // removed or replaced
			case e.remove:
				s.Message--
			}
			kept = append(kept, s)
		}
		p.Spans = kept
	}
}

// lookupLast finds key in obj the way encoding/json (and so chat's
// flattening) does: names match case-insensitively, and of repeated keys the
// last one wins.
func lookupLast(obj []byte, ms []member, key string) json.RawMessage {
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		name := m.key
		if m.escaped {
			s, err := unquote(append(append([]byte{'"'}, m.key...), '"'))
			if err != nil {
				continue
			}
			name = []byte(s)
		}
		if bytes.EqualFold(name, []byte(key)) {
			return obj[m.start:m.end]
		}
	}
	return nil
}
