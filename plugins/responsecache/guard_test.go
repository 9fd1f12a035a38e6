package responsecache

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// Pair is one labelled pair of testdata/pairs.jsonl.
type pair struct {
	A, B      string
	ShouldHit bool `json:"should_hit"`
	Category  string
}

func loadPairs(t *testing.T) []pair {
	t.Helper()
	f, err := os.Open("testdata/pairs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ps []pair
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p pair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("pairs.jsonl: %v", err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestGuardOnPairs holds the lexical guard alone to the labelled set: it
// refuses every pair that must not hit, whatever an embedder would say (the
// similarity comes on top of it; internal/cacheeval measures both).
func TestGuardOnPairs(t *testing.T) {
	ps := loadPairs(t)
	if len(ps) < 300 {
		t.Fatalf("%d pairs, want at least 300", len(ps))
	}
	agreed := 0
	paraphrases := 0
	for _, p := range ps {
		ok, why := Agree(p.A, p.B)
		if !p.ShouldHit && ok {
			t.Errorf("%s: %q and %q agree", p.Category, p.A, p.B)
		}
		if p.ShouldHit {
			paraphrases++
			if ok {
				agreed++
			} else {
				t.Logf("paraphrase refused: %q / %q: %s", p.A, p.B, why)
			}
		}
	}
	t.Logf("paraphrases the guard lets through: %d/%d", agreed, paraphrases)
}
