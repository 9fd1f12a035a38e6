package sqlite

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

// TestMeasure reports the numbers in docs/benchmarks.md ("Stored data"):
// ingestion throughput (CompleteFile with real SQLite), search latency
// (Store.Search end to end, texts read from SQLite) at 10k and 100k chunks
// of 100 dimensions, with and without a filter, dense and hybrid (with
// Query.Text), and the memory a 100k-chunk
// index takes after a reopen. It runs only with JUNCTION_STOREBENCH=1:
//
//	JUNCTION_STOREBENCH=1 go test -run TestMeasure -v ./internal/storage/sqlite/
func TestMeasure(t *testing.T) {
	if os.Getenv("JUNCTION_STOREBENCH") != "1" {
		t.Skip("set JUNCTION_STOREBENCH=1 to measure")
	}
	const dim, perFile, textBytes = 100, 50, 1000
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, dir)
	r := rand.New(rand.NewPCG(11, 12))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	// Texts of words drawn from a Zipf distribution (s=1.1) over a
	// vocabulary whose most frequent words are the English stopwords the
	// query parser drops, then made-up words, as natural text is; queries
	// are four words drawn the same way (most share a frequent word with
	// thousands of chunks, the costly case for the full-text side).
	vocab := make([]string, 20000)
	sw := make([]string, 0, len(storage.Stopwords))
	for w := range storage.Stopwords {
		sw = append(sw, w)
	}
	sort.Strings(sw)
	letters := "abcdefghijklmnopqrstuvwxyz"
	for i := range vocab {
		if i < len(sw) {
			vocab[i] = sw[i]
			continue
		}
		w := make([]byte, 3+r.IntN(7))
		for j := range w {
			w[j] = letters[r.IntN(len(letters))]
		}
		vocab[i] = string(w)
	}
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	words := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[zipf.Uint64()])
		}
		return b.String()
	}
	newText := func() string {
		var b strings.Builder
		for b.Len() < textBytes {
			b.WriteString(vocab[zipf.Uint64()])
			b.WriteByte(' ')
		}
		return b.String()[:textBytes]
	}

	fill := func(name string, n int) (storage.VectorStore, time.Duration) {
		v, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: name, EmbeddingModel: "bench", Dimensions: dim})
		if err != nil {
			t.Fatal(err)
		}
		var spent time.Duration
		for f := 0; f*perFile < n; f++ {
			file, err := s.CreateFile(ctx, storage.NewFile{Filename: fmt.Sprintf("%s-%d.txt", name, f), Purpose: "assistants"}, strings.NewReader("x"), 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.AttachFile(ctx, v.ID, file.ID, map[string]any{"even": f%2 == 0}, storage.Chunking{}); err != nil {
				t.Fatal(err)
			}
			chunks := make([]storage.Chunk, perFile)
			for c := range chunks {
				chunks[c] = storage.Chunk{Index: c, Text: newText(), Tokens: 200, Vector: vec()}
			}
			start := time.Now()
			if err := s.CompleteFile(ctx, v.ID, file.ID, chunks); err != nil {
				t.Fatal(err)
			}
			spent += time.Since(start)
		}
		return v, spent
	}
	small, _ := fill("small", 10_000)
	big, spent := fill("big", 100_000)
	t.Logf("ingest: 100000 chunks (%d per CompleteFile, %d dims, %d-byte texts) in %v: %.0f chunks/s",
		perFile, dim, textBytes, spent.Round(time.Millisecond), 100_000/spent.Seconds())

	even, _ := storage.ParseFilter([]byte(`{"type":"eq","key":"even","value":true}`))
	measure := func(label string, v storage.VectorStore, f *storage.Filter) {
		queries := make([][]float32, 300)
		texts := make([]string, len(queries))
		for i := range queries {
			queries[i] = vec()
			for matchExpr(texts[i]) == "" { // four stopwords: a dense search
				texts[i] = words(4)
			}
		}
		for _, q := range queries[:20] { // warm up
			s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: q, K: 10, Filter: f})
		}
		lat := make([]time.Duration, len(queries))
		for i, q := range queries {
			start := time.Now()
			hits, err := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: q, K: 10, Filter: f})
			lat[i] = time.Since(start)
			if err != nil || len(hits) != 10 {
				t.Fatalf("search: %d hits, %v", len(hits), err)
			}
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		// The same queries split: the index scan alone, then the hits' reads.
		var allow func(string, string, map[string]any) bool
		if f != nil {
			allow = func(_, _ string, a map[string]any) bool { return f.Match(a) }
		}
		scan, read := make([]time.Duration, len(queries)), make([]time.Duration, len(queries))
		for i, q := range queries {
			start := time.Now()
			res, _ := s.index.Search(q, 10, []string{v.ID}, allow)
			mid := time.Now()
			s.Hits(ctx, res)
			scan[i], read[i] = mid.Sub(start), time.Since(mid)
		}
		sort.Slice(scan, func(i, j int) bool { return scan[i] < scan[j] })
		sort.Slice(read, func(i, j int) bool { return read[i] < read[j] })
		t.Logf("search %s: index scan p50 %v, reading 10 hits p50 %v", label, scan[len(scan)/2].Round(time.Microsecond), read[len(read)/2].Round(time.Microsecond))
		t.Logf("search %s: p50 %v p99 %v (k=10, %d queries)", label, lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), len(lat))
		// Hybrid: the same vectors with four words of text, with common
		// words left out (the default bound) and, alternately, kept (the
		// bound off), three runs each; the medians are reported.
		round := 0
		hybrid := func(bound func(int) int) (p50, p99, lex50, lex99 time.Duration) {
			s.commonDocs = bound
			defer func() { s.commonDocs = defaultCommonDocs }()
			for i := range lat {
				start := time.Now()
				hits, err := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: queries[i], Text: texts[i], K: 10, Filter: f})
				lat[i] = time.Since(start)
				if err != nil || len(hits) != 10 {
					t.Fatalf("hybrid search: %d hits, %v", len(hits), err)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			lexical := make([]time.Duration, len(queries))
			for i := range lexical {
				start := time.Now()
				s.lexical(ctx, storage.QueryTerms(texts[i]), queries[i], []string{v.ID}, storage.Candidates(10), allow)
				lexical[i] = time.Since(start)
			}
			sort.Slice(lexical, func(i, j int) bool { return lexical[i] < lexical[j] })
			if round == 0 && bound(0) < math.MaxInt {
				denseOnly := 0
				for _, text := range texts {
					if terms, _ := s.rareTerms(ctx, storage.QueryTerms(text)); len(terms) == 0 {
						denseOnly++
					}
				}
				t.Logf("hybrid %s: %d of %d queries have no word under the bound (a dense search)", label, denseOnly, len(texts))
			}
			return lat[len(lat)/2], lat[len(lat)*99/100], lexical[len(lexical)/2], lexical[len(lexical)*99/100]
		}
		off := func(int) int { return math.MaxInt }
		bounds := []struct {
			name  string
			bound func(int) int
		}{
			{"all words", off},
			{"words in <= max(1000, 1%) chunks (the default)", defaultCommonDocs},
		}
		if os.Getenv("JUNCTION_STOREBENCH_BOUNDS") == "1" {
			bounds = append(bounds,
				struct {
					name  string
					bound func(int) int
				}{"words in <= max(1000, 2%) chunks", func(n int) int { return max(1000, n/50) }},
				struct {
					name  string
					bound func(int) int
				}{"words in <= max(1000, 5%) chunks", func(n int) int { return max(1000, n/20) }},
				struct {
					name  string
					bound func(int) int
				}{"words in <= 500 chunks", func(int) int { return 500 }},
			)
		}
		runs := make([][4][]time.Duration, len(bounds))
		for round = 0; round < 3; round++ {
			for b := range bounds {
				p50, p99, l50, l99 := hybrid(bounds[b].bound)
				for j, d := range []time.Duration{p50, p99, l50, l99} {
					runs[b][j] = append(runs[b][j], d)
				}
			}
		}
		med := func(d []time.Duration) time.Duration {
			d = slices.Clone(d)
			slices.Sort(d)
			return d[len(d)/2].Round(time.Microsecond)
		}
		for b, r := range runs {
			t.Logf("hybrid %s, %s: p50 %v p99 %v (k=10, 4-word texts; the full-text candidates alone p50 %v p99 %v; medians of 3 runs, p50s %v)",
				label, bounds[b].name, med(r[0]), med(r[1]), med(r[2]), med(r[3]), r[0])
		}
		// FTS5's rank optimisation: ORDER BY rank (bm25 by default) against
		// ORDER BY bm25(...), the same rare terms, LIMIT 50.
		if f == nil && v.ID == big.ID {
			for round := 0; round < 2; round++ {
				for _, order := range []string{"rank", "bm25(chunks_fts)"} {
					d := make([]time.Duration, len(texts))
					for i, text := range texts {
						terms, _ := s.rareTerms(ctx, storage.QueryTerms(text))
						if len(terms) == 0 {
							continue
						}
						start := time.Now()
						rows, err := s.r.QueryContext(ctx, `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY `+order+` LIMIT 50`, orExpr(terms))
						if err != nil {
							t.Fatal(err)
						}
						for rows.Next() {
						}
						rows.Close()
						d[i] = time.Since(start)
					}
					slices.Sort(d)
					t.Logf("full-text query ORDER BY %s LIMIT 50 (rare terms): p50 %v p99 %v", order, d[len(d)/2].Round(time.Microsecond), d[len(d)*99/100].Round(time.Microsecond))
				}
			}
		}
	}
	measure("10k", small, nil)
	measure("10k/filter", small, even)
	measure("100k", big, nil)
	measure("100k/filter", big, even)

	// Memory of the index: reopen and compare before and after Open.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	rss0, heap0 := rss(t), heapInUse()
	start := time.Now()
	s = openAt(t, dir)
	opened := time.Since(start)
	defer s.Close()
	runtime.GC()
	debug.FreeOSMemory()
	rss1, heap1 := rss(t), heapInUse()
	t.Logf("reopen with 110000 chunks: Open took %v; RSS +%.1f MiB, Go heap +%.1f MiB (%.1f MiB RSS per 100k chunks)",
		opened.Round(time.Millisecond), mib(rss1-rss0), mib(heap1-heap0), mib(rss1-rss0)*100/110)
	if n := s.index.Len(big.ID); n != 100_000 {
		t.Fatalf("index has %d vectors after reopen", n)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func heapInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// rss reads the resident set size from /proc (Linux).
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}
