package slots

import (
	"slices"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		text          string
		slots, conten string
	}{
		{"Convert 250 dollars to euros", "num:250 unit:dollar unit:to:euro", "convert"},
		{"Convert $1,000 to EUR", "num:1000 unit:dollar unit:to:euro", "convert"},
		{"What is 30 degrees celsius in fahrenheit?", "num:30 unit:celsius unit:degree unit:to:fahrenheit", ""},
		{"What's the status of flight XY987 tomorrow?", "date:tomorrow id:xy987", "flight status"},
		{`Translate "dog" into French`, "lang:to:french quote:dog", "translat"},
		{"Why isn't os.path.join working in my_func?", "code:my_func code:os.path.join neg:1", "why work"},
		{"How do I get from Paris to London?", "entity:from:paris entity:to:london", ""},
		{"Use `git rebase` or getUserName", "code:getUserName code:git rebase", ""},
		{"Is 2.50 the same as 2.5?", "num:2.5", "sam"},
		{"Pay $ 5 now. $", "num:5 unit:dollar", "now pay"},
	} {
		s := Extract(tc.text)
		if got := strings.Join(s.Slots, " "); got != tc.slots {
			t.Errorf("%q: slots %q, want %q", tc.text, got, tc.slots)
		}
		if got := strings.Join(s.Content, " "); got != tc.conten {
			t.Errorf("%q: content %q, want %q", tc.text, got, tc.conten)
		}
	}
}

func TestAgree(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"How do I reset my password?", "how can I reset my password", true},
		{"Why is my code not working?", "Why isn't my code working?", true},
		{"translate dog", "translate cat", false},
		{"Is coffee good?", "Is coffee not good?", false},
		{"from Paris to London", "from London to Paris", false},
	} {
		if ok, why := Agree(Extract(tc.a), Extract(tc.b)); ok != tc.want {
			t.Errorf("%q / %q: %v (%s), want %v", tc.a, tc.b, ok, why, tc.want)
		}
	}
	if Extract("a 1").Signature() == Extract("a 2").Signature() || Extract("x 1").Signature() != Extract("y 1").Signature() {
		t.Error("signature")
	}
	long := strings.Repeat("word ", MaxText)
	if s := Extract(long); !slices.Contains(s.Content, "word") || len(s.Content) > 2 {
		t.Errorf("long text: %v", s.Content)
	}
}

// TestExtractOddInput: odd input never panics.
func TestExtractOddInput(t *testing.T) {
	for _, s := range []string{"", "'", "`", `""`, "n't", "$", "€€€ £", "1,,,", ".5", "\xff\xfe", "“unclosed", "a.b. c_ d", "--", "()", "0", "00.00", "1:2:3", "'''", "isn't'"} {
		_ = Extract(s)
		_ = Extract(s + " " + s + ". " + s)
	}
}
