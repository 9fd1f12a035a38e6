package signal

import (
	"math"
	"testing"

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
