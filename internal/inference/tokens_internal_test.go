package inference

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// TestSharedTokensMatchTheTokenizer checks that every answer of the memo is what the tokenizer itself gives
// for the same text and limit, whatever calls came before (a shorter limit, a longer one, the whole text).
func TestSharedTokensMatchTheTokenizer(t *testing.T) {
	tok, err := tokenizer.Load("tokenizer/testdata/bert-uncased.json")
	if err != nil {
		t.Fatal(err)
	}
	st := &sharedTokenizer{tok: tok, seed: maphash.MakeSeed()}
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	texts := []string{"Hello world", long, long[:len(long)/2], "naïve café", "x"}
	sequences := [][]int{{5, 50, -1, 3, 1000, 2, 0}, {-1, 5, 400, 10}, {400, 401, 399, -1}, {1, 1, 2}}
	for _, text := range texts {
		for _, seq := range sequences {
			st.recent, st.next = [memoEntries]*memoEntry{}, 0
			for _, limit := range seq {
				got, gotComplete := st.Tokens(text, limit)
				want, wantComplete := tok.Tokens(text, limit)
				if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) || gotComplete != wantComplete {
					t.Fatalf("%.20q, limits %v, at %d: %d tokens (complete %v), the tokenizer gives %d (complete %v)",
						text, seq, limit, len(got), gotComplete, len(want), wantComplete)
				}
				if cap(got) != len(got) {
					t.Fatalf("a shared slice has spare capacity (%d > %d): an append would write into the memo", cap(got), len(got))
				}
			}
		}
	}
}

// TestSharedTokensConcurrent has many goroutines ask about the same texts at once, under -race: each gets the
// tokenizer's answer, and the memo tokenises each text about once rather than once per caller.
func TestSharedTokensConcurrent(t *testing.T) {
	tok, err := tokenizer.Load("tokenizer/testdata/wordlevel.json")
	if err != nil {
		t.Fatal(err)
	}
	st := &sharedTokenizer{tok: tok, seed: maphash.MakeSeed()}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				text := fmt.Sprintf("text number %d of the run %s", i%20, strings.Repeat("word ", i%7))
				limit := []int{-1, 512, 3}[(i+g)%3]
				got, gc := st.Tokens(text, limit)
				want, wc := tok.Tokens(text, limit)
				if !reflect.DeepEqual(got, want) || gc != wc {
					t.Errorf("%q under %d: %v %v, want %v %v", text, limit, got, gc, want, wc)
					return
				}
			}
		}()
	}
	wg.Wait()
}
