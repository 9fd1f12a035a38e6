package signal

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/junction-router/junction/recipes"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"   \n\t ", 0},
		{"hello", 1},
		{"hello world", 2},
		{"internationalization", 3}, // 20 letters: 1+19/8
		{"1234567", 3},              // digit groups of three
		{"x^2", 3},                  // x, ^, 2
		{"...", 2},                  // punctuation run of three
		{"東京タワー", 5},                // one per character
		{"привет", 3},               // six non-Latin letters
		{"Über", 1},
		{"e\u0301", 1}, // a combining mark joins its letter
		{"😀", 1},
	} {
		if got := EstimateTokens(tc.text); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// Counts from cl100k_base (gpt-tokenizer 4.0.0) on texts of the shared data and
// a few others; the estimate should stay within 35% of each.
func TestEstimateTokensNearCl100k(t *testing.T) {
	for _, tc := range []struct {
		text   string
		cl100k int
	}{
		{"In the rock opera Tommy, Tommy becomes deaf and blind after witnessing a terrible murder, although there is nothing organically wrong with his ears or eyes. Tommy is suffering from", 34},
		{"Wie heißt der chef von Zeit online?", 9},
		{"What is the biggest risk factor for infection with Ebola?", 11},
		{"Hello, world! How are you today?", 9},
		{"func main() {\n\tfmt.Println(\"hello\")\n\tfor i := 0; i < 10; i++ {\n\t\tx[i] = i * 2\n\t}\n}", 36},
		{"The total was 1234567.89 dollars on 2024-01-15 at 10:30.", 24},
		{"{\"name\": \"Alice\", \"age\": 30, \"emails\": [\"a@example.com\"]}", 20},
		{"我想了解更多关于机器学习的知识，请给我推荐一些书。", 28},
	} {
		got := EstimateTokens(tc.text)
		if math.Abs(float64(got-tc.cl100k))/float64(tc.cl100k) > 0.35 {
			t.Errorf("EstimateTokens(%.30q) = %d, cl100k says %d", tc.text, got, tc.cl100k)
		}
	}
}

func TestContext(t *testing.T) {
	s := compileOne(t, recipes.Signals{Context: []recipes.ContextSignal{
		{Name: "any"},
		{Name: "long", MinTokens: 10},
		{Name: "short", MaxTokens: 5},
		{Name: "window", MinTokens: 3, MaxTokens: 6},
	}}, Models{})
	for _, tc := range []struct {
		name  string
		in    Input
		value string
		want  map[string]bool
	}{
		{"empty", Input{}, "0", map[string]bool{"any": true, "long": false, "short": true, "window": false}},
		{"two words", Input{AllTexts: []string{"hello world"}}, "2", map[string]bool{"any": true, "long": false, "short": true, "window": false}},
		{"sums every message", Input{Text: "ignored when AllTexts is set", AllTexts: []string{"one two three", "four five six"}}, "6",
			map[string]bool{"any": true, "long": false, "short": false, "window": true}},
		{"falls back to Text", Input{Text: "a b c d"}, "4", map[string]bool{"any": true, "long": false, "short": true, "window": true}},
		{"long", Input{AllTexts: []string{"one two three four five six seven eight nine ten eleven"}}, "11",
			map[string]bool{"any": true, "long": true, "short": false, "window": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			got := byName(s.Evaluate(t.Context(), &in))
			for n, w := range tc.want {
				r := got[n]
				if r.Matched != w || r.Value != tc.value || r.Method != MethodTokensEstimate {
					t.Errorf("%s: %+v, want matched=%v value=%s", n, r, w, tc.value)
				}
			}
		})
	}
	if !s.Cheap() {
		t.Error("context should be cheap")
	}
}

func TestContextCompileErrors(t *testing.T) {
	for name, c := range map[string]recipes.ContextSignal{
		"negative":      {Name: "c", MinTokens: -1},
		"max below min": {Name: "c", MinTokens: 10, MaxTokens: 5},
	} {
		if _, err := Compile(recipes.Signals{Context: []recipes.ContextSignal{c}}, nil, Models{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// estimateTokensBytewise is EstimateTokens as it was before runs of one ASCII
// class were counted at once: one byte at a time.
func estimateTokensBytewise(s string) int {
	n := 0
	latin, other, digits, punct := 0, 0, 0, 0
	flush := func() {
		if latin > 0 {
			n += 1 + (latin-1)/8
		}
		n += (other+1)/2 + (digits+2)/3 + (punct+1)/2
		latin, other, digits, punct = 0, 0, 0, 0
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				if digits+punct > 0 {
					flush()
				}
				latin++
			case c >= '0' && c <= '9':
				if latin+other+punct > 0 {
					flush()
				}
				digits++
			case c == ' ' || c == '\n' || c == '\t' || c == '\r':
				flush()
			case c < ' ' || c == 0x7f:
			default:
				if latin+other+digits > 0 {
					flush()
				}
				punct++
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case unicode.IsMark(r):
		case !isWordRune(r) && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			flush()
			n++
		case unicode.IsLetter(r):
			if digits+punct > 0 {
				flush()
			}
			if unicode.Is(unicode.Latin, r) {
				latin++
			} else {
				other++
			}
		case unicode.IsDigit(r):
			if latin+other+punct > 0 {
				flush()
			}
			digits++
		case unicode.IsSpace(r):
			flush()
		default:
			if latin+other+digits > 0 {
				flush()
			}
			punct++
		}
	}
	flush()
	return n
}

// TestEstimateTokensMatchesBytewise: counting ASCII runs at once gives the
// byte-by-byte count on random texts of every class (letters, digits, spaces,
// controls, punctuation, Latin and other letters, marks, Han, invalid bytes).
func TestEstimateTokensMatchesBytewise(t *testing.T) {
	pieces := []string{"a", "Z", "word", "internationalization", "7", "123", " ", "\n", "\t", "\r", "\x00", "\x7f", ".", "\"", ":", "!?",
		"é", "Über", "привет", "\u0301", "東", "タ", "١٢", "😀", "\xff", "\xe2\x80", "ß", "٣"}
	rng := rand.New(rand.NewPCG(16, 15))
	for k := 0; k < 50000; k++ {
		var b strings.Builder
		for n := rng.IntN(24); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := EstimateTokens(s), estimateTokensBytewise(s); got != want {
			t.Fatalf("EstimateTokens(%q) = %d, byte by byte %d", s, got, want)
		}
	}
}
