//go:build !nolingua && !race

// The build tests run without the race detector (make test runs them after
// the race run): a table build is one goroutine's work, and under the
// detector the reference build alone took 49 s of make test.

package langid

import (
	"archive/zip"
	"bytes"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	lingua "github.com/pemistahl/lingua-go"
	"github.com/pemistahl/lingua-go/serialization"
	"google.golang.org/protobuf/proto"
)

// loadTableReference is how the tables were first built: every model
// decoded into its protobuf message, all postings in one slice sorted by
// (hash, language). loadTable reads the wire format in place and merges
// per-language slices to hold less at once; the tables must come out the
// same, slot for slot (the table cache files hold this layout).
func (d *Detector) loadTableReference(t *testing.T, n int) table {
	type post struct {
		h    uint64
		lang uint8
		logp float64
	}
	var ps []post
	for i, l := range d.langs {
		data, err := linguaModels.ReadFile(modelName(strings.ToLower(l.IsoCode639_1().String()), n))
		if err != nil {
			continue
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		f, err := zr.File[0].Open()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var m serialization.SerializableLanguageModel
		if err := proto.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		for _, set := range m.NgramSets {
			if set.Probability <= 0 {
				continue
			}
			lp := math.Log(set.Probability)
			for _, g := range set.Ngrams {
				ps = append(ps, post{d.hashString(g), uint8(i), lp})
			}
		}
	}
	slices.SortFunc(ps, func(a, b post) int {
		if a.h != b.h {
			if a.h < b.h {
				return -1
			}
			return 1
		}
		return int(a.lang) - int(b.lang)
	})
	before := len(ps)
	ps = slices.CompactFunc(ps, func(a, b post) bool { return a.h == b.h && a.lang == b.lang })
	if len(ps) != before {
		// The new build keeps the first of a model's repeated hashes, the
		// reference an arbitrary one: they agree only without repeats.
		t.Fatalf("%d-grams: %d postings repeat a (hash, language)", n, before-len(ps))
	}
	distinct := 0
	for i := range ps {
		if i == 0 || ps[i].h != ps[i-1].h {
			distinct++
		}
	}
	size := 1
	for size < distinct*3/2+1 {
		size <<= 1
	}
	tb := table{keys: make([]uint64, size), start: make([]uint32, size), count: make([]uint8, size),
		lang: make([]uint8, len(ps)), logp: make([]float64, len(ps)), mask: uint64(size - 1)}
	for i := 0; i < len(ps); {
		j := i
		for j < len(ps) && ps[j].h == ps[i].h {
			tb.lang[j], tb.logp[j] = ps[j].lang, ps[j].logp
			j++
		}
		s := ps[i].h & tb.mask
		for tb.keys[s] != 0 {
			s = (s + 1) & tb.mask
		}
		tb.keys[s], tb.start[s], tb.count[s] = ps[i].h, uint32(i), uint8(j-i)
		i = j
	}
	return tb
}

func sameTable(t *testing.T, n int, got, want *table) {
	t.Helper()
	if got.mask != want.mask || !slices.Equal(got.keys, want.keys) || !slices.Equal(got.start, want.start) ||
		!slices.Equal(got.count, want.count) || !slices.Equal(got.lang, want.lang) ||
		!slices.EqualFunc(got.logp, want.logp, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
		t.Fatalf("%d-grams: the table differs from the reference build (%d/%d slots, %d/%d postings)",
			n, len(got.keys), len(want.keys), len(got.lang), len(want.lang))
	}
}

// TestBuildMatchesReference checks the built tables against the reference
// build for serve's common languages (Chinese and Japanese have no models
// of some lengths) and, out of sorted order, three more.
func TestBuildMatchesReference(t *testing.T) {
	sets := [][]lingua.Language{tenLanguages(), {lingua.Zulu, lingua.Arabic, lingua.Greek}}
	if testing.Short() {
		sets = sets[1:]
	}
	for _, langs := range sets {
		d, err := New(langs...)
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= maxNgram; n++ {
			want := d.loadTableReference(t, n)
			sameTable(t, n, &d.tables[n], &want)
		}
	}
}

// TestBuildAllocatesLittle guards the cold start's peak: building serve's
// ten common languages' tables allocated 774 MB (every model's protobuf
// message, one growing slice of all postings) for 63 MB of tables; now the
// tables, one exact slice of postings per language, and small buffers.
func TestBuildAllocatesLittle(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := New(tenLanguages()...)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	tables, postings := 0, 0
	for n := 1; n <= maxNgram; n++ {
		tb := &d.tables[n]
		tables += 13*len(tb.keys) + 9*len(tb.lang)
		postings += len(tb.lang)
	}
	// The tables, 16 bytes a posting while they are merged, and 32 MB for
	// the decompression buffer, the archives' readers and the detector's
	// rules (about 5 MB of it used).
	limit := uint64(tables + 16*postings + 32<<20)
	if n := after.TotalAlloc - before.TotalAlloc; n > limit {
		t.Errorf("the build allocated %d MB, want at most %d MB (%d MB of tables, %d postings)", n>>20, limit>>20, tables>>20, postings)
	}
}

// TestEmbeddedDataIsTheFile checks that embeddedData still finds an
// embedded model's contents (what releaseEmbedded is given): the same bytes
// as the file.
func TestEmbeddedDataIsTheFile(t *testing.T) {
	name := modelName("en", 3)
	want, err := linguaModels.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := embeddedData(name)
	if !ok || got != string(want) {
		t.Fatalf("embeddedData(%s): %d bytes, ok %v; want the file's %d bytes", name, len(got), ok, len(want))
	}
	if _, ok := embeddedData("language-models/en/none.zip"); ok {
		t.Error("embeddedData found a file that does not exist")
	}
}
