package decision

import (
	"reflect"
	"strings"
	"testing"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// slotsFor lays out one slot per named signal, in order.
func slotsFor(names ...string) (Slots, func(map[string]signal.Result) []signal.Result) {
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	slots := func(kind, name string) (int, bool) {
		i, ok := idx[kind+":"+name]
		return i, ok
	}
	results := func(set map[string]signal.Result) []signal.Result {
		out := make([]signal.Result, len(names))
		for n, r := range set {
			out[idx[n]] = r
		}
		return out
	}
	return slots, results
}

func leaf(kind, name string) recipes.RuleNode { return recipes.RuleNode{Type: kind, Name: name} }
func op(o string, c ...recipes.RuleNode) recipes.RuleNode {
	return recipes.RuleNode{Operator: o, Conditions: c}
}

var hit = signal.Result{Matched: true, Score: 1}

func TestOperators(t *testing.T) {
	slots, results := slotsFor("keyword:a", "keyword:b", "complexity:c")
	tests := []struct {
		name    string
		rule    recipes.RuleNode
		set     map[string]signal.Result
		want    bool
		matched []string
	}{
		{"empty AND is catch-all", op("AND"), nil, true, nil},
		{"AND all hold", op("AND", leaf("keyword", "a"), leaf("keyword", "b")), map[string]signal.Result{"keyword:a": hit, "keyword:b": hit}, true, []string{"keyword:a", "keyword:b"}},
		{"AND one fails", op("AND", leaf("keyword", "a"), leaf("keyword", "b")), map[string]signal.Result{"keyword:a": hit}, false, nil},
		{"OR one holds", op("OR", leaf("keyword", "a"), leaf("keyword", "b")), map[string]signal.Result{"keyword:b": hit}, true, []string{"keyword:b"}},
		{"OR none holds", op("OR", leaf("keyword", "a"), leaf("keyword", "b")), nil, false, nil},
		{"NOT of unmatched holds", op("NOT", leaf("keyword", "a")), nil, true, []string{"NOT keyword:a"}},
		{"NOT of matched fails", op("NOT", leaf("keyword", "a")), map[string]signal.Result{"keyword:a": hit}, false, nil},
		{"nested AND(OR, NOT)", op("AND", op("OR", leaf("keyword", "a"), leaf("keyword", "b")), op("NOT", leaf("keyword", "b"))),
			map[string]signal.Result{"keyword:a": hit}, true, []string{"keyword:a", "NOT keyword:b"}},
		{"complexity level matches", op("AND", leaf("complexity", "c:hard")), map[string]signal.Result{"complexity:c": {Matched: true, Level: "hard", Score: 0.4}}, true, []string{"complexity:c:hard"}},
		{"complexity other level fails", op("AND", leaf("complexity", "c:easy")), map[string]signal.Result{"complexity:c": {Matched: true, Level: "hard", Score: 0.4}}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Compile(recipes.Recipe{Decisions: []recipes.Decision{{Name: "d", Rules: tt.rule}}}, slots)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := set.Evaluate(results(tt.set))
			if ok != tt.want {
				t.Fatalf("matched = %v, want %v", ok, tt.want)
			}
			if ok && !reflect.DeepEqual(m.Matched, tt.matched) {
				t.Errorf("matched rules = %q, want %q", m.Matched, tt.matched)
			}
		})
	}
}

func TestOrderPriorityConfidenceName(t *testing.T) {
	slots, results := slotsFor("keyword:a", "embedding:x", "embedding:y")
	r := recipes.Recipe{Decisions: []recipes.Decision{
		{Name: "low", Priority: 1, Rules: op("AND")},
		{Name: "zeta", Priority: 50, Rules: op("OR", leaf("embedding", "x"))},
		{Name: "alpha", Priority: 50, Rules: op("OR", leaf("embedding", "y"))},
		{Name: "beta", Priority: 50, Rules: op("OR", leaf("embedding", "y"))},
		{Name: "top", Priority: 100, Rules: op("OR", leaf("keyword", "a"))},
	}}
	set, err := Compile(r, slots)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		set  map[string]signal.Result
		want string
	}{
		{"higher priority wins", map[string]signal.Result{"keyword:a": hit, "embedding:x": {Matched: true, Score: 0.99}}, "top"},
		{"then higher confidence", map[string]signal.Result{"embedding:x": {Matched: true, Score: 0.9}, "embedding:y": {Matched: true, Score: 0.8}}, "zeta"},
		{"then name on equal confidence", map[string]signal.Result{"embedding:x": {Matched: true, Score: 0.8}, "embedding:y": {Matched: true, Score: 0.8}}, "alpha"},
		{"falls through to lower priority", nil, "low"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := set.Evaluate(results(tt.set))
			if !ok || m.Decision.Config.Name != tt.want {
				t.Fatalf("got %v %v, want %s", ok, m.Decision, tt.want)
			}
		})
	}
}

func TestNoMatch(t *testing.T) {
	slots, results := slotsFor("keyword:a")
	set, err := Compile(recipes.Recipe{Decisions: []recipes.Decision{{Name: "d", Rules: op("OR", leaf("keyword", "a"))}}}, slots)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Evaluate(results(nil)); ok {
		t.Fatal("matched with no signal")
	}
}

func TestConfidence(t *testing.T) {
	slots, results := slotsFor("embedding:x", "embedding:y")
	tests := []struct {
		rule recipes.RuleNode
		want float64
	}{
		{op("AND", leaf("embedding", "x"), leaf("embedding", "y")), 0.6},
		{op("OR", leaf("embedding", "x"), leaf("embedding", "y")), 0.9},
		{op("AND"), 1},
	}
	res := results(map[string]signal.Result{"embedding:x": {Matched: true, Score: 0.9}, "embedding:y": {Matched: true, Score: 0.6}})
	for _, tt := range tests {
		set, _ := Compile(recipes.Recipe{Decisions: []recipes.Decision{{Name: "d", Rules: tt.rule}}}, slots)
		m, ok := set.Evaluate(res)
		if !ok || m.Confidence != tt.want {
			t.Errorf("%+v: confidence %v, want %v", tt.rule, m.Confidence, tt.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	slots, _ := slotsFor("keyword:a", "complexity:c")
	tests := []struct {
		rule recipes.RuleNode
		want string
	}{
		{op("NOT", leaf("keyword", "a"), leaf("keyword", "a")), "exactly one"},
		{op("XOR", leaf("keyword", "a")), "unknown operator"},
		{op("AND", leaf("keyword", "missing")), "does not define"},
		{op("AND", leaf("complexity", "c")), "needs a level"},
	}
	for _, tt := range tests {
		_, err := Compile(recipes.Recipe{Decisions: []recipes.Decision{{Name: "d", Rules: tt.rule}}}, slots)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err %v, want it to mention %q", tt.rule, err, tt.want)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	slots, results := slotsFor("keyword:a", "keyword:b", "embedding:x")
	r := recipes.Recipe{Decisions: []recipes.Decision{
		{Name: "one", Priority: 100, Rules: op("AND", leaf("keyword", "a"), op("NOT", leaf("keyword", "b")))},
		{Name: "two", Priority: 50, Rules: op("OR", leaf("embedding", "x"), leaf("keyword", "b"))},
		{Name: "all", Priority: 1, Rules: op("AND")},
	}}
	set, _ := Compile(r, slots)
	res := results(map[string]signal.Result{"embedding:x": {Matched: true, Score: 0.8}})
	b.ReportAllocs()
	for b.Loop() {
		set.Evaluate(res)
	}
}
