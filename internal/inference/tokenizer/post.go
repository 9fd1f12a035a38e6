package tokenizer

import (
	"encoding/json"
	"fmt"
)

// templateItem is one element of a post-processing template: a run of special tokens, or a sequence (0 = A,
// 1 = B) of the input.
type templateItem struct {
	sequence int // -1 for special tokens
	ids      []int64
	tokens   []string
	typeID   int64
}

type template struct {
	single, pair []templateItem
	trimOffsets  bool
}

func (t template) added(pair bool) int {
	items := t.single
	if pair {
		items = t.pair
	}
	n := 0
	for _, it := range items {
		n += len(it.ids)
	}
	return n
}

// noTemplate is used without a post-processor: the tokens as they are; a pair is A then B.
var noTemplate = template{
	single: []templateItem{{sequence: 0}},
	pair:   []templateItem{{sequence: 0}, {sequence: 1, typeID: 1}},
}

type postSpec struct {
	Type          string            `json:"type"`
	Single        []json.RawMessage `json:"single"`
	Pair          []json.RawMessage `json:"pair"`
	SpecialTokens map[string]struct {
		ID     string   `json:"id"`
		IDs    []int64  `json:"ids"`
		Tokens []string `json:"tokens"`
	} `json:"special_tokens"`
	Sep         []json.RawMessage `json:"sep"`
	Cls         []json.RawMessage `json:"cls"`
	TrimOffsets *bool             `json:"trim_offsets"`
	Processors  []json.RawMessage `json:"processors"`
}

func parsePostProcessor(raw json.RawMessage, lookup func(string) (int64, bool)) (template, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return noTemplate, nil
	}
	var s postSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return template{}, err
	}
	special := func(pair []json.RawMessage, what string) (templateItem, error) {
		if len(pair) != 2 {
			return templateItem{}, fmt.Errorf("%s: want [token, id]", what)
		}
		var tok string
		var id int64
		if err := json.Unmarshal(pair[0], &tok); err != nil {
			return templateItem{}, fmt.Errorf("%s token: %v", what, err)
		}
		if err := json.Unmarshal(pair[1], &id); err != nil {
			return templateItem{}, fmt.Errorf("%s id: %v", what, err)
		}
		return templateItem{sequence: -1, ids: []int64{id}, tokens: []string{tok}}, nil
	}
	switch s.Type {
	case "BertProcessing":
		cls, err := special(s.Cls, "cls")
		if err != nil {
			return template{}, err
		}
		sep, err := special(s.Sep, "sep")
		if err != nil {
			return template{}, err
		}
		sep1 := sep
		sep1.typeID = 1
		return template{
			single: []templateItem{cls, {sequence: 0}, sep},
			pair:   []templateItem{cls, {sequence: 0}, sep, {sequence: 1, typeID: 1}, sep1},
		}, nil
	case "RobertaProcessing":
		cls, err := special(s.Cls, "cls")
		if err != nil {
			return template{}, err
		}
		sep, err := special(s.Sep, "sep")
		if err != nil {
			return template{}, err
		}
		return template{
			single:      []templateItem{cls, {sequence: 0}, sep},
			pair:        []templateItem{cls, {sequence: 0}, sep, sep, {sequence: 1}, sep},
			trimOffsets: boolOr(s.TrimOffsets, true),
		}, nil
	case "ByteLevel":
		t := noTemplate
		t.trimOffsets = boolOr(s.TrimOffsets, true)
		return t, nil
	case "TemplateProcessing":
		parse := func(items []json.RawMessage, what string) ([]templateItem, error) {
			var out []templateItem
			for i, raw := range items {
				var it struct {
					SpecialToken *struct {
						ID     string `json:"id"`
						TypeID int64  `json:"type_id"`
					} `json:"SpecialToken"`
					Sequence *struct {
						ID     string `json:"id"`
						TypeID int64  `json:"type_id"`
					} `json:"Sequence"`
				}
				if err := json.Unmarshal(raw, &it); err != nil {
					return nil, fmt.Errorf("%s[%d]: %v", what, i, err)
				}
				switch {
				case it.Sequence != nil:
					seq := 0
					if it.Sequence.ID == "B" {
						seq = 1
					}
					out = append(out, templateItem{sequence: seq, typeID: it.Sequence.TypeID})
				case it.SpecialToken != nil:
					st, ok := s.SpecialTokens[it.SpecialToken.ID]
					item := templateItem{sequence: -1, typeID: it.SpecialToken.TypeID}
					if ok && len(st.IDs) > 0 {
						item.ids, item.tokens = st.IDs, st.Tokens
					} else if id, found := lookup(it.SpecialToken.ID); found {
						item.ids, item.tokens = []int64{id}, []string{it.SpecialToken.ID}
					} else {
						return nil, fmt.Errorf("%s[%d]: special token %q is neither in special_tokens nor in the vocabulary", what, i, it.SpecialToken.ID)
					}
					if len(item.tokens) != len(item.ids) {
						item.tokens = make([]string, len(item.ids))
						for k := range item.tokens {
							item.tokens[k] = it.SpecialToken.ID
						}
					}
					out = append(out, item)
				default:
					return nil, fmt.Errorf("%s[%d]: neither SpecialToken nor Sequence", what, i)
				}
			}
			return out, nil
		}
		single, err := parse(s.Single, "single")
		if err != nil {
			return template{}, err
		}
		pair, err := parse(s.Pair, "pair")
		if err != nil {
			return template{}, err
		}
		if len(pair) == 0 {
			pair = append(append([]templateItem{}, single...), templateItem{sequence: 1, typeID: 1})
		}
		return template{single: single, pair: pair}, nil
	case "Sequence":
		t := noTemplate
		trim := false
		for i, p := range s.Processors {
			sub, err := parsePostProcessor(p, lookup)
			if err != nil {
				return template{}, fmt.Errorf("processors[%d]: %w", i, err)
			}
			trim = trim || sub.trimOffsets
			if sub.added(false) > 0 || sub.added(true) > 0 {
				t = sub
			}
		}
		t.trimOffsets = trim
		return t, nil
	}
	return template{}, fmt.Errorf("post_processor type %q is not supported (supported: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence)", s.Type)
}
