package memstore

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

// TestSemanticScanMatchesCosine checks the normalised dot-product scan
// against the plain cosine over the LRU list (front first, first best wins)
// through stores, overwrites, evictions, expiries and hits. The namespace
// stays small enough (50 entries) to be scanned in full; the sketch search
// is held to the same reference in TestSketchSearchAgreesWithScan.
func TestSemanticScanMatchesCosine(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	now := time.Unix(1000, 0)
	c := &Cache{MaxEntries: 50, Now: func() time.Time { return now }}
	ctx := context.Background()
	vec := func() []float32 {
		dim := 8
		if r.Intn(10) == 0 {
			dim = 5
		}
		v := make([]float32, dim)
		if r.Intn(15) != 0 { // some all-zero vectors
			for i := range v {
				v[i] = float32(r.Intn(5) - 2) // small integers: ties happen
			}
		}
		return v
	}
	for step := 0; step < 3000; step++ {
		switch r.Intn(4) {
		case 0, 1:
			var emb []float32
			if r.Intn(5) != 0 {
				emb = vec()
			}
			ttl := time.Duration(1+r.Intn(20)) * time.Second
			if err := c.Store(ctx, "ns", fmt.Sprintf("k%d", r.Intn(80)), []byte(fmt.Sprint(step)), ttl, emb); err != nil {
				t.Fatal(err)
			}
		case 2:
			now = now.Add(time.Duration(r.Intn(1500)) * time.Millisecond)
		default:
			q := vec()
			th := float32(r.Intn(5))/4 - 0.25
			// The reference: the old scan over the list.
			var want []byte
			wantSim := float32(math.Inf(-1))
			if n := c.nss["ns"]; n != nil {
				for el := n.lru.Front(); el != nil; el = el.Next() {
					e := el.Value.(*entry)
					if now.Before(e.expires) && len(e.embedding) == len(q) {
						if s := cosine(e.embedding, q); s > wantSim+1e-5 {
							want, wantSim = e.value, s
						}
					}
				}
			}
			if wantSim < th {
				want = nil
			}
			got, ok, err := c.Lookup(ctx, "ns", "absent", q, th)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(wantSim-th)) < 1e-5 {
				continue // on the threshold: float rounding decides
			}
			if ok != (want != nil) || (ok && (string(got.Value) != string(want) || math.Abs(float64(got.Similarity-wantSim)) > 1e-5)) {
				t.Fatalf("step %d: got %q %v %v, want %q %v", step, got.Value, got.Similarity, ok, want, wantSim)
			}
			checkSlots(t, c)
		}
	}
}
