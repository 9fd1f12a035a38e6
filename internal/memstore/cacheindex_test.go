package memstore

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/lexical"
)

// bruteBest is the reference a semantic lookup is held to: the live entry
// of ns of q's dimension with the highest cosine (float64, the old scan).
func bruteBest(c *Cache, ns string, q []float32, now time.Time) (value []byte, sim float64) {
	sim = math.Inf(-1)
	if n := c.nss[ns]; n != nil {
		for el := n.lru.Front(); el != nil; el = el.Next() {
			e := el.Value.(*entry)
			if now.Before(e.expires) && len(e.embedding) == len(q) {
				if s := float64(cosine(e.embedding, q)); s > sim {
					value, sim = e.value, s
				}
			}
		}
	}
	return value, sim
}

// checkSlots fails when a namespace's slots, sketches, list and keys
// disagree.
func checkSlots(t *testing.T, c *Cache) {
	t.Helper()
	for name, n := range c.nss {
		if len(n.scan) != n.lru.Len() || len(n.hx) != len(n.scan) || len(n.keys) != n.lru.Len() {
			t.Fatalf("%s: scan %d, sketches %d, list %d, keys %d", name, len(n.scan), len(n.hx), n.lru.Len(), len(n.keys))
		}
		for i, s := range n.scan {
			e := s.el.Value.(*entry)
			if e.pos != i {
				t.Fatalf("slot %d points at an entry at %d", i, e.pos)
			}
			var want uint64
			if len(e.embedding) > 0 {
				want = c.simhash(len(e.embedding)).Sketch(e.embedding)
			}
			if n.hx[i].sketch != want || n.hx[i].expires != s.expires {
				t.Fatalf("slot %d: sketch %x expires %d, want %x %d", i, n.hx[i].sketch, n.hx[i].expires, want, s.expires)
			}
		}
	}
}

// TestSketchSearchAgreesWithScan runs the sketch search (forced on every
// namespace) through stores, overwrites, evictions, expiries and lookups of
// clustered vectors, against the brute-force scan: a hit must be an entry
// whose exact cosine is the similarity reported and reaches the threshold
// (never a false hit), and of the lookups the brute force answers, the
// search must answer nearly all (its recall, held to a floor).
func TestSketchSearchAgreesWithScan(t *testing.T) {
	for _, dim := range []int{32, 100, 256} {
		t.Run(fmt.Sprintf("dim=%d", dim), func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(dim)))
			now := time.Unix(1000, 0)
			c := &Cache{MaxEntries: 800, LinearScan: -1, Now: func() time.Time { return now }}
			ctx := context.Background()
			// 40 cluster centres; a vector is a centre plus noise, so a
			// namespace holds many near neighbours of every query.
			centres := make([][]float32, 40)
			for i := range centres {
				centres[i] = make([]float32, dim)
				for j := range centres[i] {
					centres[i][j] = float32(r.NormFloat64())
				}
			}
			vec := func(noise float64) []float32 {
				c := centres[r.Intn(len(centres))]
				v := make([]float32, dim)
				for j := range v {
					v[j] = c[j] + float32(noise*r.NormFloat64())
				}
				return v
			}
			var brute, found, same, lookups int
			for step := 0; step < 6000; step++ {
				switch k := r.Intn(10); {
				case k < 6:
					var emb []float32
					switch r.Intn(30) {
					case 0: // none: an exact-only entry
					case 1: // another dimension (an embedder changed)
						emb = vec(0.3)[:dim/2]
					default:
						emb = vec(0.2 + 0.4*r.Float64())
					}
					ttl := time.Duration(5+r.Intn(60)) * time.Second
					if err := c.Store(ctx, "ns", fmt.Sprintf("k%d", r.Intn(1200)), []byte(fmt.Sprint(step)), ttl, emb); err != nil {
						t.Fatal(err)
					}
				case k < 7:
					now = now.Add(time.Duration(r.Intn(2000)) * time.Millisecond)
				default:
					q := vec(0.2 + 0.4*r.Float64())
					th := []float32{0.8, 0.9, 0.92, 0.95}[r.Intn(4)]
					want, wantSim := bruteBest(c, "ns", q, now)
					got, ok, err := c.Lookup(ctx, "ns", "absent", q, th)
					if err != nil {
						t.Fatal(err)
					}
					lookups++
					if math.Abs(wantSim-float64(th)) < 1e-5 {
						continue // on the threshold: float rounding decides
					}
					if wantSim >= float64(th) {
						brute++
					}
					if !ok {
						continue
					}
					found++
					if wantSim < float64(th) {
						t.Fatalf("step %d: a hit (similarity %v) where the best entry scores %v under %v", step, got.Similarity, wantSim, th)
					}
					e := c.nss["ns"].lru.Front().Value.(*entry) // the hit was made the most recent
					if string(e.value) != string(got.Value) {
						t.Fatalf("step %d: the hit is not the most recent entry", step)
					}
					if exact := float64(cosine(e.embedding, q)); math.Abs(exact-float64(got.Similarity)) > 1e-5 || exact < float64(th)-1e-5 {
						t.Fatalf("step %d: reported similarity %v, exact %v, threshold %v", step, got.Similarity, exact, th)
					}
					if string(got.Value) == string(want) {
						same++
					}
				}
				if step%500 == 0 {
					checkSlots(t, c)
				}
			}
			recall := float64(found) / float64(brute)
			t.Logf("%d lookups: brute force hits %d, the sketch search %d (recall %.4f), the same entry %d", lookups, brute, found, recall, same)
			if brute < 500 {
				t.Fatalf("only %d lookups the brute force answers: the data does not test recall", brute)
			}
			if recall < 0.97 {
				t.Errorf("recall %.4f under 0.97", recall)
			}
		})
	}
}

// TestSketchRecallGatewayQuestions measures the sketch search's recall on
// BenchmarkGatewayCacheMiss's questions (one template, a new word each: a
// namespace crowded with near-identical entries, the hard case) embedded
// by the harness's hashed 1,024-dim embedder: 2,000 stored, looked up
// reworded (true near-duplicates) and new (misses), at the example
// configuration's threshold and lower ones.
func TestSketchRecallGatewayQuestions(t *testing.T) {
	emb := lexical.NewHashedEmbedder(1024)
	ctx := context.Background()
	ask := func(i int) string { return "What is the capital of " + gatewayWord(i) + " please?" }
	idx := &Cache{MaxEntries: 10000}
	full := &Cache{MaxEntries: 10000, LinearScan: math.MaxInt}
	const stored, queries = 2000, 300
	for i := 0; i < stored; i++ {
		v := emb.Vector(ask(i))
		for _, c := range []*Cache{idx, full} {
			if err := c.Store(ctx, "ns", fmt.Sprint(i), []byte(fmt.Sprint(i)), time.Hour, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	rewordings := []string{"what is the capital of %s please", "What's the capital of %s, please?", "Please, what is the capital of %s?", "what is the capital city of %s please?"}
	for _, th := range []float32{0.8, 0.85, 0.92} {
		var brute, found, same int
		var bruteRe, foundRe int // the rewordings'
		for i := 0; i < queries; i++ {
			text := ask(stored + i) // a new question
			if i%2 == 0 {
				text = fmt.Sprintf(rewordings[i%len(rewordings)], gatewayWord(i*6))
			}
			q := emb.Vector(text)
			want, okWant, _ := full.Lookup(ctx, "ns", "", q, th)
			got, ok, _ := idx.Lookup(ctx, "ns", "", q, th)
			if ok && got.Similarity < th {
				t.Fatalf("a hit at %v under the threshold %v", got.Similarity, th)
			}
			if okWant {
				brute++
				if i%2 == 0 {
					bruteRe++
				}
			}
			if ok {
				if !okWant {
					t.Fatalf("%q: the sketch search hit where the full scan did not", text)
				}
				found++
				if i%2 == 0 {
					foundRe++
				}
				if string(got.Value) == string(want.Value) {
					same++
				}
			}
		}
		t.Logf("threshold %.2f: full scan hits %d/%d, sketch search %d (recall %.3f), the same entry %d; of the rewordings %d, %d", th, brute, queries, found, float64(found)/float64(max(brute, 1)), same, bruteRe, foundRe)
		if bruteRe == 0 {
			t.Fatalf("threshold %.2f: the full scan hits no rewording: they test no recall", th)
		}
		// The rewordings are what a cache is for: all found. The new
		// questions' nearest entries (the same template, another word)
		// score just over 0.92 among thousands that score just under:
		// the sketches rank them coarsely, and some are missed (the
		// guard refuses such hits anyway: another content word).
		if foundRe != bruteRe {
			t.Errorf("threshold %.2f: %d of %d rewordings found", th, foundRe, bruteRe)
		}
		if float64(found) < 0.8*float64(brute) {
			t.Errorf("threshold %.2f: recall %d/%d under 0.8", th, found, brute)
		}
	}
}

// gatewayWord is internal/gateway's word: a lower-case word unique to i.
func gatewayWord(i int) string {
	var buf []byte
	for i++; i > 0; i /= 26 {
		buf = append(buf, byte('a'+i%26))
	}
	return string(buf) + "land"
}
