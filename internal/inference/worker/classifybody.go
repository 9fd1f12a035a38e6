package worker

import (
	"bytes"
	"strconv"

	"github.com/junction-router/junction/sdk/jsonscan"
)

// decodeClassify reads a classify body and its inputs. The common shapes go
// through decodeClassifyFast; everything else, errors included, through
// encoding/json (decode, then parseInputs), whose messages the spec's
// answers carry.
func decodeClassify(body []byte) (classifyRequest, []Pair, *apiError) {
	if req, inputs, ok := decodeClassifyFast(body); ok {
		return req, inputs, nil
	}
	var req classifyRequest
	if err := decode(body, &req); err != nil {
		return req, nil, err
	}
	inputs, err := parseInputs(req.Input)
	return req, inputs, err
}

// decodeClassifyFast reads, without reflection, the classify bodies the
// router's client and most callers send: an object whose members are among
// "model" (a string), "input" (a string or a non-empty list of strings) and
// "options" (an object whose members are among "overflow", a string,
// "max_tokens", an integer, and "return_meta", a boolean), each at most once,
// names spelled exactly, in any order. Anything else, and anything
// malformed, answers ok false, and decodeClassify reads the body the slow
// way: so this function only has to be right about what it accepts
// (FuzzClassifyBody checks that it agrees with the slow way there). It
// leaves req.Input empty: the inputs are returned parsed.
func decodeClassifyFast(body []byte) (req classifyRequest, inputs []Pair, ok bool) {
	s := scanner{b: body}
	if !s.next('{') {
		return req, nil, false
	}
	var seenModel, seenInput, seenOptions bool
	for first := true; ; first = false {
		if first && s.next('}') {
			break
		}
		key, ok := s.key()
		if !ok || !s.next(':') {
			return req, nil, false
		}
		switch {
		case string(key) == "model" && !seenModel:
			seenModel = true
			if req.Model, ok = s.str(); !ok {
				return req, nil, false
			}
		case string(key) == "input" && !seenInput:
			seenInput = true
			if inputs, ok = s.inputs(); !ok {
				return req, nil, false
			}
		case string(key) == "options" && !seenOptions:
			seenOptions = true
			if !s.options(&req) {
				return req, nil, false
			}
		default:
			return req, nil, false
		}
		if s.next(',') {
			continue
		}
		if !s.next('}') {
			return req, nil, false
		}
		break
	}
	if !seenInput || jsonscan.SkipSpace(body, s.i) != len(body) {
		return req, nil, false
	}
	return req, inputs, true
}

// scanner reads JSON values from b at i.
type scanner struct {
	b []byte
	i int
}

// next consumes c (after white space) if it comes next.
func (s *scanner) next(c byte) bool {
	s.i = jsonscan.SkipSpace(s.b, s.i)
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// raw consumes a string literal and returns it with its quotes.
func (s *scanner) raw() ([]byte, bool) {
	s.i = jsonscan.SkipSpace(s.b, s.i)
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	end := jsonscan.ValueEnd(s.b, s.i)
	if end < 0 {
		return nil, false
	}
	lit := s.b[s.i:end]
	s.i = end
	return lit, true
}

// key consumes a member name without escapes (a name with escapes is
// left to encoding/json). Callers compare it as string(key), which does
// not copy.
func (s *scanner) key() ([]byte, bool) {
	lit, ok := s.raw()
	if !ok || bytes.IndexByte(lit, '\\') >= 0 {
		return nil, false
	}
	return lit[1 : len(lit)-1], true
}

func (s *scanner) str() (string, bool) {
	lit, ok := s.raw()
	if !ok {
		return "", false
	}
	v, err := jsonscan.Unquote(lit)
	return v, err == nil
}

// inputs consumes a string or a non-empty list of strings.
func (s *scanner) inputs() ([]Pair, bool) {
	if !s.next('[') {
		text, ok := s.str()
		return []Pair{{Text: text}}, ok
	}
	var out []Pair
	for {
		text, ok := s.str()
		if !ok {
			return nil, false
		}
		out = append(out, Pair{Text: text})
		if s.next(',') {
			continue
		}
		return out, s.next(']')
	}
}

// options consumes the options object's common members.
func (s *scanner) options(req *classifyRequest) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	var seenOverflow, seenMax, seenMeta bool
	for {
		key, ok := s.key()
		if !ok || !s.next(':') {
			return false
		}
		switch {
		case string(key) == "overflow" && !seenOverflow:
			seenOverflow = true
			if req.Options.Overflow, ok = s.str(); !ok {
				return false
			}
		case string(key) == "max_tokens" && !seenMax:
			seenMax = true
			if req.Options.MaxTokens, ok = s.integer(); !ok {
				return false
			}
		case string(key) == "return_meta" && !seenMeta:
			seenMeta = true
			if req.Options.ReturnMeta, ok = s.boolean(); !ok {
				return false
			}
		default:
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// integer consumes a JSON integer (no fraction or exponent) that fits an
// int of any platform.
func (s *scanner) integer() (int, bool) {
	s.i = jsonscan.SkipSpace(s.b, s.i)
	start, i := s.i, s.i
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	digits := i
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		i++
	}
	n := i - digits
	if n == 0 || n > 9 || (n > 1 && s.b[digits] == '0') {
		return 0, false
	}
	if i < len(s.b) && (s.b[i] == '.' || s.b[i] == 'e' || s.b[i] == 'E') {
		return 0, false
	}
	v, err := strconv.Atoi(string(s.b[start:i]))
	s.i = i
	return v, err == nil
}

func (s *scanner) boolean() (bool, bool) {
	s.i = jsonscan.SkipSpace(s.b, s.i)
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, true
	}
	return false, false
}
