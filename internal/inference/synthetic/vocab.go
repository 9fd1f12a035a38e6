package synthetic

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

type vocabBuilder struct {
	ids   map[string]int64
	order []string
}

func (v *vocabBuilder) add(tok string) {
	if _, ok := v.ids[tok]; ok || tok == "" {
		return
	}
	v.ids[tok] = int64(len(v.order))
	v.order = append(v.order, tok)
}

func stripAccents(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

func (s Spec) words() []string {
	out := append([]string(nil), s.Words...)
	for i := 0; i < s.ExtraWords; i++ {
		out = append(out, "w"+strconv.Itoa(i))
	}
	return out
}

func added(id int64, content string) map[string]any {
	return map[string]any{"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
}

// buildTokenizer writes a tokenizer.json of the spec's kind over its words.
func buildTokenizer(s Spec) ([]byte, map[string]int64, error) {
	v := &vocabBuilder{ids: map[string]int64{}}
	doc := map[string]any{"version": "1.0", "truncation": nil, "padding": nil}
	var addedTokens []map[string]any
	switch s.Tokenizer {
	case WordPiece:
		for _, t := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} {
			addedTokens = append(addedTokens, added(int64(len(v.order)), t))
			v.add(t)
		}
		for _, r := range punctuation + "abcdefghijklmnopqrstuvwxyz0123456789" {
			v.add(string(r))
		}
		for _, r := range "abcdefghijklmnopqrstuvwxyz0123456789" {
			v.add("##" + string(r))
		}
		for _, w := range s.words() {
			w = stripAccents(strings.ToLower(w))
			for _, r := range w {
				if r > unicode.MaxASCII && unicode.Is(unicode.Han, r) {
					v.add(string(r))
				}
			}
			if !strings.ContainsFunc(w, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
				v.add(w)
			}
		}
		for _, suf := range []string{"ing", "able", "s", "ed", "er"} {
			v.add("##" + suf)
		}
		doc["normalizer"] = map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true}
		doc["pre_tokenizer"] = map[string]any{"type": "BertPreTokenizer"}
		doc["post_processor"] = map[string]any{
			"type": "TemplateProcessing",
			"single": []any{
				map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}},
			},
			"pair": []any{
				map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}},
				map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 1}},
			},
			"special_tokens": map[string]any{
				"[CLS]": map[string]any{"id": "[CLS]", "ids": []int64{v.ids["[CLS]"]}, "tokens": []string{"[CLS]"}},
				"[SEP]": map[string]any{"id": "[SEP]", "ids": []int64{v.ids["[SEP]"]}, "tokens": []string{"[SEP]"}},
			},
		}
		doc["model"] = map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": v.ids}
	case BPE:
		for _, t := range []string{"<s>", "<pad>", "</s>", "<unk>", "<mask>"} {
			addedTokens = append(addedTokens, added(int64(len(v.order)), t))
			v.add(t)
		}
		for b := 0; b < 256; b++ {
			v.add(string(byteToRune[b]))
		}
		var merges []string
		seen := map[string]bool{}
		learn := func(word string) {
			var syms []string
			for _, c := range []byte(word) {
				syms = append(syms, string(byteToRune[c]))
			}
			cur := syms[0]
			for _, next := range syms[1:] {
				m := cur + " " + next
				if !seen[m] {
					seen[m] = true
					merges = append(merges, m)
				}
				cur += next
				v.add(cur)
			}
		}
		for _, w := range s.words() {
			learn(w)
			learn(" " + w)
		}
		doc["normalizer"] = nil
		doc["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
		doc["post_processor"] = map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0}, "trim_offsets": true, "add_prefix_space": false}
		doc["model"] = map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "vocab": v.ids, "merges": merges}
	case WordLevel:
		for _, t := range []string{"[PAD]", "[UNK]"} {
			addedTokens = append(addedTokens, added(int64(len(v.order)), t))
			v.add(t)
		}
		for _, r := range punctuation {
			v.add(string(r))
		}
		for _, w := range s.words() {
			v.add(strings.ToLower(w))
		}
		doc["normalizer"] = map[string]any{"type": "Lowercase"}
		doc["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
		doc["post_processor"] = nil
		doc["model"] = map[string]any{"type": "WordLevel", "unk_token": "[UNK]", "vocab": v.ids}
	}
	doc["added_tokens"] = addedTokens
	data, err := json.Marshal(doc)
	return data, v.ids, err
}

// byteToRune is GPT-2's byte-to-printable-rune table (bytes_to_unicode).
var byteToRune = func() (t [256]rune) {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}()
