package tokenizer

import (
	"reflect"
	"testing"
)

func splitStrings(p preTokenizer, s string) []string {
	var out []string
	for _, w := range p.split([]text{newText(s, 0)}, true) {
		out = append(out, w.String())
	}
	return out
}

// The Qwen 2 pattern, and the splits its look-ahead gives (worked out from the regex's leftmost-first rule and
// confirmed with Hugging Face tokenizers 0.23.2).
func TestWhitespaceLookaheadSplit(t *testing.T) {
	const qwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	p, ok, err := newWhitespaceLookahead(qwen2)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	got := splitStrings(p, "Hello world'S 123  x\n\ny  ")
	want := []string{"Hello", " world", "'S", " ", "1", "2", "3", " ", " x", "\n\n", "y", "  "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// The GPT-2 pattern through the generic path agrees with the hand-written split.
	g, _, _ := newWhitespaceLookahead(gpt2Pattern)
	for _, s := range []string{"Hello é's  world 12!\n", "a  \tb\n\n c  ", "x'll 'd"} {
		if a, b := splitStrings(g, s), splitStrings(gpt2Split{}, s); !reflect.DeepEqual(a, b) {
			t.Errorf("%q: generic %q, hand-written %q", s, a, b)
		}
	}
}

// The splits below are Hugging Face tokenizers 0.23.2's for the same strings and pre-tokenizers (Split with the
// Qwen 2 pattern, behaviour isolated; Whitespace; BertPreTokenizer), run on the GPU machine.
func TestSplitsMatchHF(t *testing.T) {
	const qwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	q, _, _ := newWhitespaceLookahead(qwen2)
	s := "a\u00a0b\u3000c ¿Qué? don't\t\tgo 1,234.5"
	for _, c := range []struct {
		name string
		p    preTokenizer
		want []string
	}{
		{"split-qwen2", q, []string{"a", "\u00a0b", "\u3000c", " ¿", "Qué", "?", " don", "'t", "\t", "\tgo", " ", "1", ",", "2", "3", "4", ".", "5"}},
		{"whitespace", whitespacePre{}, []string{"a", "b", "c", "¿", "Qué", "?", "don", "'", "t", "go", "1", ",", "234", ".", "5"}},
		{"bert", bertPre{}, []string{"a", "b", "c", "¿", "Qué", "?", "don", "'", "t", "go", "1", ",", "234", ".", "5"}},
	} {
		if got := splitStrings(c.p, s); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// Symbols, numbers that are not digits, connector punctuation and a zero-width joiner (Whitespace, Bert), and
// contractions, no-break spaces, emoji and trailing newlines (GPT-2 byte level): HF tokenizers 0.23.2's splits.
func TestSplitsMatchHFSymbols(t *testing.T) {
	s := "x² ½ Ⅻ a_b c‿d 3.14 e\u200dz €5 ©x"
	if got, want := splitStrings(whitespacePre{}, s), []string{"x", "²", "½", "Ⅻ", "a_b", "c‿d", "3", ".", "14", "e\u200dz", "€", "5", "©", "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("whitespace: got %q\nwant %q", got, want)
	}
	if got, want := splitStrings(bertPre{}, s), []string{"x²", "½", "Ⅻ", "a", "_", "b", "c", "‿", "d", "3", ".", "14", "e\u200dz", "€5", "©x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("bert: got %q\nwant %q", got, want)
	}
	var got []string
	for _, w := range (&byteLevel{useRegex: true}).split([]text{newText("I'M don'T  \u00a0x 12ab 💡!! it's\n\n ", 0)}, true) {
		got = append(got, w.String())
	}
	if want := []string{"I", "'", "M", "Ġdon", "'", "T", "ĠĠ", "Âł", "x", "Ġ12", "ab", "ĠðŁĴ¡!!", "Ġit", "'s", "ĊĊĠ"}; !reflect.DeepEqual(got, want) {
		t.Errorf("byte level: got %q\nwant %q", got, want)
	}
}
