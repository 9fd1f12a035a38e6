package signal

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/junction-router/junction/recipes"
)

func TestKeyword(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sig     recipes.KeywordSignal
		text    string
		matched bool
		value   string
	}{
		{"or any", recipes.KeywordSignal{Keywords: []string{"urgent", "asap"}}, "please answer asap", true, "asap"},
		{"or none", recipes.KeywordSignal{Keywords: []string{"urgent", "asap"}}, "take your time", false, ""},
		{"or lower-case operator", recipes.KeywordSignal{Operator: "or", Keywords: []string{"x"}}, "x marks", true, "x"},
		{"or value is the earliest hit", recipes.KeywordSignal{Keywords: []string{"urgent", "asap"}}, "asap, it is urgent", true, "asap"},
		{"and all", recipes.KeywordSignal{Operator: "AND", Keywords: []string{"refund", "order"}}, "I want a refund for my order", true, "refund"},
		{"and missing one", recipes.KeywordSignal{Operator: "AND", Keywords: []string{"refund", "order"}}, "I want a refund", false, ""},
		{"case-insensitive by default", recipes.KeywordSignal{Keywords: []string{"urgent"}}, "URGENT: server down", true, "urgent"},
		{"case-sensitive hit", recipes.KeywordSignal{Keywords: []string{"GPU"}, CaseSensitive: true}, "my GPU is slow", true, "GPU"},
		{"case-sensitive miss", recipes.KeywordSignal{Keywords: []string{"GPU"}, CaseSensitive: true}, "my gpu is slow", false, ""},
		{"whole word: no match inside a word", recipes.KeywordSignal{Keywords: []string{"asap"}}, "Asaph wrote psalms", false, ""},
		{"whole word: punctuation is a boundary", recipes.KeywordSignal{Keywords: []string{"asap"}}, "do it (asap)!", true, "asap"},
		{"whole word: later occurrence counts", recipes.KeywordSignal{Keywords: []string{"cat"}}, "concatenate the cat", true, "cat"},
		{"word_boundary false: substring", recipes.KeywordSignal{Keywords: []string{"asap"}, WordBoundary: boolPtr(false)}, "Asaph wrote psalms", true, "asap"},
		{"word_boundary true explicit", recipes.KeywordSignal{Keywords: []string{"asap"}, WordBoundary: boolPtr(true)}, "asaph", false, ""},
		{"C++ matches", recipes.KeywordSignal{Keywords: []string{"C++"}}, "I write C++ daily", true, "C++"},
		{"C++ at end with period", recipes.KeywordSignal{Keywords: []string{"c++"}}, "I love C++.", true, "c++"},
		{"C++ inside a word", recipes.KeywordSignal{Keywords: []string{"C++"}}, "ABC++ is not it", false, ""},
		{"C# matches", recipes.KeywordSignal{Keywords: []string{"C#"}}, "port this to C#", true, "C#"},
		{"dotted keyword", recipes.KeywordSignal{Keywords: []string{"node.js"}}, "a Node.js server", true, "node.js"},
		{"dotted keyword inside a word", recipes.KeywordSignal{Keywords: []string{"node.js"}}, "mynode.js", false, ""},
		{"phrase", recipes.KeywordSignal{Keywords: []string{"machine learning"}}, "intro to Machine Learning?", true, "machine learning"},
		{"underscore joins words", recipes.KeywordSignal{Keywords: []string{"foo"}}, "call foo_bar()", false, ""},
		{"digits join words", recipes.KeywordSignal{Keywords: []string{"gpt"}}, "gpt4 is here", false, ""},
		{"unicode case folding", recipes.KeywordSignal{Keywords: []string{"café"}}, "Un CAFÉ, s'il vous plaît", true, "café"},
		{"unicode letters are word runes", recipes.KeywordSignal{Keywords: []string{"öl"}}, "der Ölpreis steigt", false, ""},
		{"unicode boundary", recipes.KeywordSignal{Keywords: []string{"öl"}}, "Öl, Gas und Strom", true, "öl"},
		{"greek", recipes.KeywordSignal{Keywords: []string{"αθήνα"}}, "Ταξίδι στην ΑΘΉΝΑ", true, "αθήνα"},
		{"han needs no spaces", recipes.KeywordSignal{Keywords: []string{"東京"}}, "明日東京に行きます", true, "東京"},
		{"thai needs no spaces", recipes.KeywordSignal{Keywords: []string{"สวัสดี"}}, "คำว่าสวัสดีครับ", true, "สวัสดี"},
		{"latin next to han is a boundary", recipes.KeywordSignal{Keywords: []string{"gpu"}}, "我的GPU坏了", true, "gpu"},
		{"empty text", recipes.KeywordSignal{Keywords: []string{"x"}}, "", false, ""},
		{"keyword longer than text", recipes.KeywordSignal{Keywords: []string{"urgently"}}, "urge", false, ""},
		{"non-ascii text, ascii keyword", recipes.KeywordSignal{Keywords: []string{"urgent"}}, "Très URGENT — répondez", true, "urgent"},
		{"shared pattern in one signal", recipes.KeywordSignal{Operator: "AND", Keywords: []string{"a", "A"}}, "a", true, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sig.Name = "k"
			s := compileOne(t, recipes.Signals{Keywords: []recipes.KeywordSignal{tc.sig}}, Models{})
			r := evalText(s, tc.text)[0]
			if r.Matched != tc.matched || r.Value != tc.value {
				t.Fatalf("matched=%v value=%q, want %v %q", r.Matched, r.Value, tc.matched, tc.value)
			}
			wantScore := 0.0
			if tc.matched {
				wantScore = 1
			}
			if r.Score != wantScore || r.Kind != recipes.KindKeyword || r.Method != MethodKeyword || r.Name != "k" {
				t.Fatalf("result = %+v", r)
			}
		})
	}
}

// Several signals with different options share the automata; each must still
// see only its own rules.
func TestKeywordSignalsShareOnePass(t *testing.T) {
	s := compileOne(t, recipes.Signals{Keywords: []recipes.KeywordSignal{
		{Name: "loose", Keywords: []string{"script"}, WordBoundary: boolPtr(false)},
		{Name: "strict", Keywords: []string{"script"}},
		{Name: "exact", Keywords: []string{"Script"}, CaseSensitive: true, WordBoundary: boolPtr(false)},
		{Name: "all", Operator: "AND", Keywords: []string{"java", "script"}},
	}}, Models{})
	got := byName(evalText(s, "I write JavaScript"))
	want := map[string]bool{"loose": true, "strict": false, "exact": true, "all": false}
	for n, w := range want {
		if got[n].Matched != w {
			t.Errorf("%s: matched=%v, want %v", n, got[n].Matched, w)
		}
	}
	if rs := evalText(s, "x"); rs[0].Name != "loose" || rs[3].Name != "all" {
		t.Errorf("results are not in configuration order: %v", rs)
	}
}

func TestKeywordCompileErrors(t *testing.T) {
	for name, sig := range map[string]recipes.KeywordSignal{
		"operator":      {Name: "k", Operator: "XOR", Keywords: []string{"a"}},
		"no keywords":   {Name: "k"},
		"empty keyword": {Name: "k", Keywords: []string{"a", ""}},
		"invalid utf-8": {Name: "k", Keywords: []string{"\xff"}},
	} {
		if _, err := Compile(recipes.Signals{Keywords: []recipes.KeywordSignal{sig}}, nil, Models{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// The automaton must agree with a brute-force search on random text over a
// small alphabet, where overlaps and failure links are exercised heavily.
func TestAutomatonAgreesWithBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", " ", "é", "+", "-", "東"}
	randStr := func(n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for round := 0; round < 300; round++ {
		var b automatonBuilder
		var pats []string
		for i := 0; i < 1+rng.IntN(8); i++ {
			p := randStr(1 + rng.IntN(4))
			b.add(p)
			pats = append(pats, p)
		}
		a := b.build(false)
		text := randStr(rng.IntN(40))
		hits := a.scan(text)
		for id, p := range a.patterns {
			wantAny, wantWhole := int32(-1), int32(-1)
			for i := 0; i+len(p) <= len(text); i++ {
				if !strings.HasPrefix(text[i:], p) || !utf8.RuneStart(text[i]) {
					continue
				}
				if wantAny < 0 {
					wantAny = int32(i)
				}
				if wantWhole < 0 && a.boundaryOK(text, int32(id), i, i+len(p)) {
					wantWhole = int32(i)
				}
			}
			h := hits[id]
			if h.whole != wantWhole || (wantWhole < 0 && h.any != wantAny) || (h.any >= 0 && h.any != wantAny) {
				t.Fatalf("text %q pattern %q: got %+v, want any=%d whole=%d (patterns %q)", text, p, h, wantAny, wantWhole, pats)
			}
		}
	}
}

var benchKeywords = recipes.Signals{Keywords: []recipes.KeywordSignal{
	{Name: "urgent", Keywords: []string{"urgent", "asap", "immediately", "right now", "emergency"}},
	{Name: "code", Keywords: []string{"python", "golang", "c++", "javascript", "rust", "kotlin", "typescript", "sql", "bash", "compile"}},
	{Name: "billing", Operator: "AND", Keywords: []string{"refund", "order"}},
	{Name: "brands", CaseSensitive: true, Keywords: []string{"OpenAI", "Anthropic", "Mistral", "Gemini", "Llama"}},
}}

const benchText = "Hi team, I need help with my order from last week. The invoice shows a charge I do not recognise " +
	"and I would like a refund as soon as possible. Also, can you explain how to call the API from Python " +
	"with streaming enabled? Thanks!"

// BenchmarkKeyword: four signals, 22 keywords, a 230-byte message.
func BenchmarkKeyword(b *testing.B) {
	s := compileOne(b, benchKeywords, Models{})
	in := &Input{Text: benchText}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

// BenchmarkKeywordLong: the same signals over a 23 KB message.
func BenchmarkKeywordLong(b *testing.B) {
	s := compileOne(b, benchKeywords, Models{})
	in := &Input{Text: strings.Repeat(strings.ReplaceAll(benchText, "refund", "money"), 100)}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

// BenchmarkKeywordRegexpBaseline is what the automaton replaces: one
// case-insensitive, word-bounded regular expression per signal.
func BenchmarkKeywordRegexpBaseline(b *testing.B) {
	var res []*regexp.Regexp
	for _, k := range benchKeywords.Keywords {
		var alts []string
		for _, w := range k.Keywords {
			alts = append(alts, regexp.QuoteMeta(w))
		}
		flags := "(?i)"
		if k.CaseSensitive {
			flags = ""
		}
		res = append(res, regexp.MustCompile(flags+`\b(?:`+strings.Join(alts, "|")+`)\b`))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, re := range res {
			re.FindStringIndex(benchText)
		}
	}
}
