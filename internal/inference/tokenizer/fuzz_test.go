package tokenizer_test

import (
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// FuzzTokens checks, for any input and every fixture tokenizer: no panic; offsets inside the text, ordered and
// on character boundaries; and reading with a limit gives a prefix of the whole text's tokens.
func FuzzTokens(f *testing.F) {
	var tks []*tokenizer.Tokenizer
	for _, name := range []string{"bert-uncased.json", "roberta-bpe.json", "wordlevel.json", "unigram.json", "xlmr-unigram.json"} {
		tk, err := tokenizer.Load("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		tks = append(tks, tk)
	}
	for _, s := range []string{"", " ", "Hello, y'all!", "é's  world 12!\n", "[MASK] <mask>  x", "\x00\xff\xfe ü 東京", "a\u00a0b\u3000c", "##able", "'s'll 'd"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 {
			limit = -limit
		}
		limit %= 64
		for _, tk := range tks {
			full, complete := tk.Tokens(s, -1)
			if !complete {
				t.Fatal("unlimited read incomplete")
			}
			prev := 0
			for _, tok := range full {
				if tok.Start < 0 || tok.End > len(s) || tok.Start > tok.End || tok.Start < prev-1 {
					t.Fatalf("%s: token %+v out of order or outside %d bytes (%q)", tk.Model(), tok, len(s), s)
				}
				if utf8.ValidString(s) && (!utf8.RuneStart(s[min(tok.Start, len(s)-1)]) && tok.Start < len(s)) {
					t.Fatalf("%s: token %+v starts inside a character of %q", tk.Model(), tok, s)
				}
				prev = tok.Start
			}
			got, complete := tk.Tokens(s, limit)
			want := full
			if len(want) > limit {
				want = want[:limit]
			}
			if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("%s: limit %d gives %v, want %v", tk.Model(), limit, got, want)
			}
			if complete != (len(full) <= limit) {
				t.Fatalf("%s: complete=%v with %d tokens and limit %d", tk.Model(), complete, len(full), limit)
			}
			e := tk.Encode(s)
			if e.Len() != len(full)+tk.NumSpecial(false) {
				t.Fatalf("%s: encoding has %d tokens, want %d", tk.Model(), e.Len(), len(full)+tk.NumSpecial(false))
			}
		}
	})
}
