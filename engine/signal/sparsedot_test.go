package signal

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/lexical"
)

// TestSparseBestMatchIsDense checks that bestMatch over the nonzero
// components of a lexical vector answers exactly (to the bit) what the full
// comparison answers, on random texts against random candidate sets, and
// that lexicalNonzero declines other embedders' vectors and dense ones.
func TestSparseBestMatchIsDense(t *testing.T) {
	emb := newSharedEmbedder(lexical.NewHashedEmbedder(0))
	words := strings.Fields("urgent where is my parcel answer in one word please refund charged twice credit card " +
		"prove that derive the closed form design a distributed algorithm capital of say hello translate Grüße 日本語")
	rng := rand.New(rand.NewPCG(7, 8))
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	ctx := context.Background()
	sparse := 0
	for round := range 300 {
		var cands []string
		for range 1 + rng.IntN(6) {
			cands = append(cands, text(1+rng.IntN(6)))
		}
		cv, err := emb.embedAll(ctx, cands)
		if err != nil {
			t.Fatal(err)
		}
		q := text(rng.IntN(3 + round%40))
		v, err := emb.embed(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		nz := emb.lexicalNonzero(v, nil)
		if nz == nil {
			continue
		}
		sparse++
		b1, a1, m1, e1 := bestMatch(v, nil, cv)
		b2, a2, m2, e2 := bestMatch(v, nz, cv)
		if b1 != b2 || a1 != a2 || m1 != m2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("%q against %q: dense %v %d %v %v, sparse %v %d %v %v", q, cands, b1, a1, m1, e1, b2, a2, m2, e2)
		}
	}
	if sparse < 200 {
		t.Fatalf("only %d of 300 query vectors were sparse enough: the sparse path went untested", sparse)
	}
	if nz := emb.lexicalNonzero(make([]float32, 8), nil); nz == nil || len(nz) != 0 {
		t.Errorf("a zero lexical vector: nz %v, want empty", nz)
	}
	dense := make([]float32, 16)
	for i := range dense {
		dense[i] = 0.25
	}
	if nz := emb.lexicalNonzero(dense, nil); nz != nil {
		t.Errorf("a dense vector gave nz %v, want nil (full comparison)", nz)
	}
	if nz := newSharedEmbedder(fixedEmbedder{}).lexicalNonzero(make([]float32, 8), nil); nz != nil {
		t.Errorf("another embedder's vector gave nz %v, want nil", nz)
	}
	if _, err := sparseDot(make([]float32, 3), nil, make([]float32, 4)); err == nil {
		t.Error("sparseDot of vectors of different sizes: no error")
	}
}

// fixedEmbedder is an Embedder that is not the lexical one.
type fixedEmbedder struct{}

func (fixedEmbedder) Method() string { return "fixed" }
func (fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	return nil, fmt.Errorf("not used")
}
