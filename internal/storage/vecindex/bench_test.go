package vecindex

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchIndex is n chunks of 100 dimensions in files of 50 chunks, half the
// files with attribute even=true.
func benchIndex(b *testing.B, n int) *Index {
	b.Helper()
	x := New()
	const dim, perFile = 100, 50
	x.AddStore("vs_bench", dim)
	r := rand.New(rand.NewPCG(7, 8))
	for f := 0; f*perFile < n; f++ {
		chunks := make([]Chunk, perFile)
		for c := range chunks {
			chunks[c] = Chunk{Index: c, Row: int64(f*perFile + c), Vector: randVec(r, dim)}
		}
		if err := x.AddFile("vs_bench", fmt.Sprintf("file-%06d", f), map[string]any{"even": f%2 == 0}, chunks); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		x := benchIndex(b, n)
		r := rand.New(rand.NewPCG(9, 10))
		queries := make([][]float32, 64)
		for i := range queries {
			queries[i] = randVec(r, 100)
		}
		allow := func(_, _ string, attrs map[string]any) bool { return attrs["even"] == true }
		name := fmt.Sprintf("%dk", n/1000)
		b.Run(name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := x.Search(queries[i%len(queries)], 10, []string{"vs_bench"}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/filter", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := x.Search(queries[i%len(queries)], 10, []string{"vs_bench"}, allow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDot100(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, y := randVec(r, 100), randVec(r, 100)
	var s float32
	for b.Loop() {
		s += Dot(x, y)
	}
	_ = s
}

// BenchmarkSimHashSketch is one sketch: what a semantic lookup of a large
// namespace pays before its scan, and a store before taking the lock.
func BenchmarkSimHashSketch(b *testing.B) {
	for _, dim := range []int{100, 1024} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			h := NewSimHash(dim)
			v := make([]float32, dim)
			for i := range v {
				v[i] = float32(i%7) - 3
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v[i%dim]++
				_ = h.Sketch(v)
			}
		})
	}
}
