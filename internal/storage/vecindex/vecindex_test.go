package vecindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

type ref struct {
	store, file string
	chunk       int
	row         int64
	vec         []float32
	attrs       map[string]any
}

// brute is the reference ranking: exact cosine, ties by file, chunk, store.
func brute(all []ref, q []float32, k int, stores map[string]bool, allow func(string, string, map[string]any) bool) []Result {
	qn := append([]float32(nil), q...)
	Normalize(qn)
	var out []Result
	for _, r := range all {
		if !stores[r.store] || (allow != nil && !allow(r.store, r.file, r.attrs)) {
			continue
		}
		v := append([]float32(nil), r.vec...)
		Normalize(v)
		out = append(out, Result{StoreID: r.store, FileID: r.file, ChunkIndex: r.chunk, Row: r.row, Score: Dot(qn, v)})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.FileID != b.FileID {
			return a.FileID < b.FileID
		}
		if a.ChunkIndex != b.ChunkIndex {
			return a.ChunkIndex < b.ChunkIndex
		}
		return a.StoreID < b.StoreID
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}

func same(t *testing.T, what string, got, want []Result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.StoreID != w.StoreID || g.FileID != w.FileID || g.ChunkIndex != w.ChunkIndex || g.Row != w.Row || math.Abs(float64(g.Score-w.Score)) > 1e-6 {
			t.Fatalf("%s: result %d is %+v, want %+v", what, i, g, w)
		}
	}
}

// build fills an index with files of chunks across stores and returns the
// reference rows.
func build(t testing.TB, x *Index, r *rand.Rand, stores []string, dim, files, perFile int) []ref {
	var all []ref
	row := int64(0)
	for _, s := range stores {
		x.AddStore(s, dim)
	}
	for f := 0; f < files; f++ {
		s := stores[f%len(stores)]
		id := fmt.Sprintf("file-%05d", r.IntN(1_000_000))
		attrs := map[string]any{"even": f%2 == 0}
		var chunks []Chunk
		for c := 0; c < perFile; c++ {
			row++
			v := randVec(r, dim)
			chunks = append(chunks, Chunk{Index: c, Row: row, Vector: v})
		}
		if _, dup := x.stores[s].byID[id]; dup {
			continue
		}
		if err := x.AddFile(s, id, attrs, chunks); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			all = append(all, ref{store: s, file: id, chunk: c.Index, row: c.Row, vec: c.Vector, attrs: attrs})
		}
	}
	return all
}

func TestSearchMatchesBruteForce(t *testing.T) {
	for _, size := range []struct {
		name           string
		files, perFile int
	}{{"small", 40, 5}, {"parallel", 500, 60}} {
		t.Run(size.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			x := New()
			x.workers = 4 // exercise the split even on one core
			const dim = 24
			all := build(t, x, r, []string{"vs_a", "vs_b", "vs_c"}, dim, size.files, size.perFile)
			both := map[string]bool{"vs_a": true, "vs_b": true}
			calls := map[string]int{}
			var mu sync.Mutex
			allow := func(s, f string, attrs map[string]any) bool {
				mu.Lock()
				calls[s+"/"+f]++
				mu.Unlock()
				return attrs["even"] == true
			}
			for i := 0; i < 20; i++ {
				q := randVec(r, dim)
				k := []int{1, 5, 50, 1000}[i%4]
				got, err := x.Search(q, k, []string{"vs_a", "vs_b"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				same(t, "unfiltered", got, brute(all, q, k, both, nil))
				clear(calls)
				got, _ = x.Search(q, k, []string{"vs_b", "vs_a"}, allow)
				same(t, "filtered", got, brute(all, q, k, both, func(_, _ string, a map[string]any) bool { return a["even"] == true }))
				for f, n := range calls {
					if n != 1 {
						t.Fatalf("the filter was asked %d times about %s", n, f)
					}
				}
			}
			// Remove a third of the files and compare again.
			removed := map[string]bool{}
			for i, rf := range all {
				if i%3 == 0 && !removed[rf.file] {
					removed[rf.file] = true
					x.RemoveFile(rf.store, rf.file)
				}
			}
			var kept []ref
			for _, rf := range all {
				if !removed[rf.file] {
					kept = append(kept, rf)
				}
			}
			for i := 0; i < 10; i++ {
				q := randVec(r, dim)
				got, _ := x.Search(q, 100, []string{"vs_a", "vs_b", "vs_c"}, nil)
				same(t, "after removals", got, brute(kept, q, 100, map[string]bool{"vs_a": true, "vs_b": true, "vs_c": true}, nil))
			}
			n := 0
			for _, s := range []string{"vs_a", "vs_b", "vs_c"} {
				n += x.Len(s)
			}
			if n != len(kept) {
				t.Fatalf("Len says %d vectors, want %d", n, len(kept))
			}
		})
	}
}

func TestTiesAndErrors(t *testing.T) {
	x := New()
	x.AddStore("s1", 3)
	x.AddStore("s2", 3)
	v := []float32{1, 2, 3}
	for _, f := range []string{"f3", "f1", "f2"} {
		x.AddFile("s1", f, nil, []Chunk{{Index: 2, Row: 1, Vector: v}, {Index: 0, Row: 2, Vector: v}, {Index: 1, Row: 3, Vector: v}})
	}
	x.AddFile("s2", "f1", nil, []Chunk{{Index: 0, Row: 9, Vector: v}})
	got, _ := x.Search([]float32{2, 4, 6}, 5, []string{"s2", "s1"}, nil)
	var keys []string
	for _, r := range got {
		keys = append(keys, fmt.Sprintf("%s/%s#%d", r.StoreID, r.FileID, r.ChunkIndex))
	}
	if fmt.Sprint(keys) != "[s1/f1#0 s2/f1#0 s1/f1#1 s1/f1#2 s1/f2#0]" {
		t.Fatalf("ties: %v", keys)
	}
	if math.Abs(float64(got[0].Score)-1) > 1e-6 {
		t.Fatalf("score %v", got[0].Score)
	}
	if _, err := x.Search(v, 1, []string{"nope"}, nil); err == nil {
		t.Fatal("unknown store accepted")
	}
	if _, err := x.Search([]float32{1}, 1, []string{"s1"}, nil); err == nil {
		t.Fatal("short query accepted")
	}
	if err := x.AddFile("s1", "bad", nil, []Chunk{{Vector: []float32{1}}}); err == nil {
		t.Fatal("short vector accepted")
	}
	if err := x.AddFile("nope", "f", nil, nil); err == nil {
		t.Fatal("unknown store accepted")
	}
	// Re-adding a file replaces it.
	x.AddFile("s1", "f1", nil, []Chunk{{Index: 7, Row: 70, Vector: []float32{-1, 0, 0}}})
	if x.Len("s1") != 7 {
		t.Fatalf("after replacing a file: %d vectors", x.Len("s1"))
	}
	if x.Total() != x.Len("s1")+x.Len("s2") {
		t.Fatalf("Total %d, stores hold %d and %d", x.Total(), x.Len("s1"), x.Len("s2"))
	}
	x.RemoveFileEverywhere("f1")
	if x.Len("s1") != 6 || x.Len("s2") != 0 {
		t.Fatalf("after removing f1 everywhere: %d, %d", x.Len("s1"), x.Len("s2"))
	}
	x.DropStore("s2")
	if _, ok := x.Dimension("s2"); ok {
		t.Fatal("a dropped store is still known")
	}
	// A zero vector scores 0 rather than NaN.
	x.AddFile("s1", "zero", nil, []Chunk{{Index: 0, Row: 99, Vector: []float32{0, 0, 0}}})
	got, _ = x.Search([]float32{0, 0, 1}, 100, []string{"s1"}, nil)
	for _, r := range got {
		if r.Score != r.Score {
			t.Fatal("NaN score")
		}
	}
}

func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 40; n++ {
		a, b := randVec(r, n), randVec(r, n)
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		if got := Dot(a, b); math.Abs(float64(got)-want) > 1e-4 {
			t.Fatalf("n=%d: %v, want %v", n, got, want)
		}
	}
}

// TestConcurrentSearchAndWrites runs searches while files come and go
// (meaningful under -race).
func TestConcurrentSearchAndWrites(t *testing.T) {
	x := New()
	x.workers = 2
	x.AddStore("s", 8)
	r := rand.New(rand.NewPCG(5, 6))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := x.Search(randVec(r, 8), 10, []string{"s"}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for i := 1; i < len(res); i++ {
					if res[i].Score > res[i-1].Score {
						t.Error("out of order")
						return
					}
				}
			}
		}(uint64(g))
	}
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("f%d", i)
		chunks := make([]Chunk, 100)
		for c := range chunks {
			chunks[c] = Chunk{Index: c, Row: int64(i*100 + c), Vector: randVec(r, 8)}
		}
		x.AddFile("s", id, nil, chunks)
		if i%3 == 0 {
			x.RemoveFile("s", fmt.Sprintf("f%d", i/2))
		}
	}
	close(stop)
	wg.Wait()
}

func TestLookup(t *testing.T) {
	x := New()
	x.AddStore("s", 2)
	x.AddStore("other", 2)
	if err := x.AddFile("s", "f", map[string]any{"k": "v"}, []Chunk{{Index: 0, Row: 10, Vector: []float32{3, 0}}, {Index: 1, Row: 11, Vector: []float32{1, 1}}}); err != nil {
		t.Fatal(err)
	}
	r, ok := x.Lookup([]float32{0, 2}, 11, []string{"s"}, nil)
	if !ok || r.ChunkIndex != 1 || r.FileID != "f" || r.Attributes["k"] != "v" || r.Score < 0.7070 || r.Score > 0.7072 {
		t.Fatalf("lookup: %+v %v", r, ok)
	}
	res, _ := x.Search([]float32{0, 2}, 1, []string{"s"}, nil)
	if len(res) != 1 || res[0].Score != r.Score {
		t.Fatalf("search scored %+v, lookup %v", res, r.Score)
	}
	if _, ok := x.Lookup([]float32{0, 2}, 12, []string{"s"}, nil); ok {
		t.Fatal("an unknown row was found")
	}
	if _, ok := x.Lookup([]float32{0, 2}, 10, []string{"s"}, func(string, string, map[string]any) bool { return false }); ok {
		t.Fatal("a refused file was found")
	}
	if _, ok := x.Lookup([]float32{0, 2, 1}, 10, []string{"s"}, nil); ok {
		t.Fatal("a query of another dimension was scored")
	}
	if _, ok := x.Lookup([]float32{0, 2}, 10, []string{"other", "s"}, nil); !ok {
		t.Fatal("a row of the second store named was not found")
	}
	if _, ok := x.Lookup([]float32{0, 2}, 10, []string{"other"}, nil); ok {
		t.Fatal("a row of a store not named was found")
	}
	if !x.Covers([]string{"s"}) || !x.Covers([]string{"other", "s"}) {
		t.Fatal("store s holds every vector")
	}
	x.AddFile("other", "g", nil, []Chunk{{Row: 20, Vector: []float32{1, 0}}})
	if x.Covers([]string{"s", "s"}) || !x.Covers([]string{"other", "s"}) {
		t.Fatal("Covers does not count store other's vector")
	}
	x.RemoveFile("s", "f")
	if _, ok := x.Lookup([]float32{0, 2}, 10, []string{"s"}, nil); ok {
		t.Fatal("a removed file was found")
	}
}
