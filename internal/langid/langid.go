//go:build !nolingua

package langid

import (
	"archive/zip"
	"bytes"
	"cmp"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe" // go:linkname, to read lingua's embedded models; n-grams hashed in place

	lingua "github.com/pemistahl/lingua-go"
	"google.golang.org/protobuf/encoding/protowire"
)

// linguaModels is lingua's embedded model archive (language-models/<iso>/
// <n>grams.pb.bin.zip); lingua exports no way to read it. A lingua upgrade
// that renames it makes New fail (no models), which TestAgreesWithLingua
// and the signal tests catch.
//
//go:linkname linguaModels github.com/pemistahl/lingua-go.languageModels
var linguaModels embed.FS

const maxNgram = 5

// Detector is a language detector over a fixed set of candidate languages,
// with their models loaded. It is immutable and safe for concurrent use.
type Detector struct {
	langs  []lingua.Language // candidates, in the order given (deduplicated)
	index  map[lingua.Language]int
	tables [maxNgram + 1]table // by n-gram length; [0] unused
	// oneAlpha are the alphabets of one candidate language each, with the
	// candidate's index (lingua's alphabets are disjoint scripts: a
	// character matches one at most, so their order does not matter).
	oneAlpha []oneAlphabet
	// zhSlot and jaSlot are where detectWithRules counts Chinese and
	// Japanese: their candidate index, or the slots after the candidates.
	zhSlot, jaSlot int
	unique         []lingua.Language // candidates with unique characters
	// latin1Slots[r] are the slots detectWithRules counts a rune r below
	// 256 in (ruleSlots, computed once: most runes of most texts are these).
	latin1Slots [256][]int
	// charIdx maps a character of lingua's charsToLanguagesMapping to the
	// candidate indices of the languages its entries name (repeats kept, as
	// lingua counts them), for the characters that name a candidate;
	// latin1CharIdx is the same for the runes below 256.
	charIdx       map[rune][]int
	latin1CharIdx [256][]int
	// alphas are alphabetsOf each candidate (by index), computed once:
	// filterByRules reads them on every detection.
	alphas [][]alphabet
}

// oneAlphabet is an alphabet only one candidate (index slot) is written in.
type oneAlphabet struct {
	a    alphabet
	slot int
}

// table is an open-addressing hash table from n-gram hashes to postings.
type table struct {
	keys  []uint64 // 0 is an empty slot
	start []uint32
	count []uint8
	lang  []uint8   // postings: candidate index
	logp  []float64 // postings: log of the n-gram's probability in lang
	mask  uint64
}

func (t *table) lookup(h uint64) (lo, hi uint32) {
	if len(t.keys) == 0 {
		return 0, 0
	}
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case h:
			return t.start[i], t.start[i] + uint32(t.count[i])
		case 0:
			return 0, 0
		}
	}
}

// New loads the models of languages (at least one; duplicates are ignored),
// building the tables from lingua's models; Load can read them from a cache.
func New(languages ...lingua.Language) (*Detector, error) {
	d, err := newDetector(languages)
	if err != nil {
		return nil, err
	}
	return d, d.build()
}

// build fills d.tables from lingua's models.
func (d *Detector) build() error {
	var buf bytes.Buffer
	for n := 1; n <= maxNgram; n++ {
		if err := d.loadTable(n, &buf); err != nil {
			return err
		}
	}
	return nil
}

// newDetector is a detector of languages without its tables.
func newDetector(languages []lingua.Language) (*Detector, error) {
	d := &Detector{index: map[lingua.Language]int{}}
	for _, l := range languages {
		if l == lingua.Unknown {
			return nil, fmt.Errorf("langid: the unknown language cannot be a candidate")
		}
		if _, dup := d.index[l]; dup {
			continue
		}
		d.index[l] = len(d.langs)
		d.langs = append(d.langs, l)
	}
	if len(d.langs) == 0 || len(d.langs) > 255 {
		return nil, fmt.Errorf("langid: %d candidate languages; give between 1 and 255", len(d.langs))
	}
	for a, l := range singleLanguageAlphabets() {
		if i, ok := d.index[l]; ok {
			d.oneAlpha = append(d.oneAlpha, oneAlphabet{a, i})
		}
	}
	slices.SortFunc(d.oneAlpha, func(x, y oneAlphabet) int { return int(x.a) - int(y.a) })
	d.zhSlot, d.jaSlot = len(d.langs), len(d.langs)+1
	if i, ok := d.index[lingua.Chinese]; ok {
		d.zhSlot = i
	}
	if i, ok := d.index[lingua.Japanese]; ok {
		d.jaSlot = i
	}
	for _, l := range d.langs {
		if uniqueCharacters(l) != "" {
			d.unique = append(d.unique, l)
		}
		d.alphas = append(d.alphas, alphabetsOf(l))
	}
	d.charIdx = map[rune][]int{}
	for chars, ls := range charsToLanguages {
		for _, r := range chars {
			for _, l := range ls {
				if i, ok := d.index[l]; ok {
					d.charIdx[r] = append(d.charIdx[r], i)
				}
			}
		}
	}
	for r := range d.latin1Slots {
		d.latin1Slots[r] = d.ruleSlots(rune(r), nil)
		d.latin1CharIdx[r] = d.charIdx[rune(r)]
	}
	return d, nil
}

var ngramNames = [...]string{1: "unigram", 2: "bigram", 3: "trigram", 4: "quadrigram", 5: "fivegram"}

func modelName(iso string, n int) string {
	return fmt.Sprintf("language-models/%s/%ss.pb.bin.zip", iso, ngramNames[n])
}

// loadTable builds d.tables[n] from every candidate's lingua model of
// n-grams. It is the cold start's largest allocation (the five-gram
// table of ten languages is about 45 MB), so what it holds besides the
// table is kept to exact sizes: each language's postings in one slice of
// the length a first pass over its model counts (16 bytes a posting, no
// pointers), the
// models' protobuf read in place (no message of strings), one decompression
// buffer reused for every file. The table is then filled by merging the
// languages' sorted postings, which gives the layout a sort of all of them
// by (hash, language) gives (what the table cache files hold).
func (d *Detector) loadTable(n int, buf *bytes.Buffer) error {
	per := make([][]posting, len(d.langs))
	for i, l := range d.langs {
		iso := strings.ToLower(l.IsoCode639_1().String())
		name := modelName(iso, n)
		raw, err := readModel(name, buf)
		if errors.Is(err, fs.ErrNotExist) && n != 1 {
			continue // some languages lack a model (Chinese has only unigrams); lingua scores them 0 too
		}
		if err != nil {
			return err
		}
		if per[i], err = d.postings(raw); err != nil {
			return fmt.Errorf("langid: decoding lingua's model %s: %w", name, err)
		}
	}
	d.tables[n] = mergeTable(per)
	return nil
}

// readModel decompresses lingua's model file name into buf (grown once to
// the largest file) and returns its bytes. The archive is read where it is
// embedded rather than copied out first.
func readModel(name string, buf *bytes.Buffer) ([]byte, error) {
	f, err := linguaModels.Open(name)
	if err != nil {
		return nil, fmt.Errorf("langid: lingua's model %s is missing (%w); the lingua-go version does not match this package", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("langid: lingua's model %s: %w", name, err)
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("langid: lingua's model %s cannot be read in place", name)
	}
	zr, err := zip.NewReader(ra, fi.Size())
	if err != nil || len(zr.File) == 0 {
		return nil, fmt.Errorf("langid: lingua's model %s is not a zip archive: %v", name, err)
	}
	zf, err := zr.File[0].Open()
	if err != nil {
		return nil, fmt.Errorf("langid: opening lingua's model %s: %w", name, err)
	}
	defer zf.Close()
	buf.Reset()
	// ReadFrom grows the buffer whenever less than MinRead is free, also at
	// the end: room for the whole file plus MinRead reads it without a copy.
	buf.Grow(int(zr.File[0].UncompressedSize64) + bytes.MinRead)
	if _, err := buf.ReadFrom(zf); err != nil { // the archive's CRC is checked at the end
		return nil, fmt.Errorf("langid: reading lingua's model %s: %w", name, err)
	}
	if data, ok := embeddedData(name); ok {
		releaseEmbedded(data)
	}
	return buf.Bytes(), nil
}

// posting is one n-gram of one language's model: its hash and the log of
// its probability.
type posting struct {
	h    uint64
	logp float64
}

// The wire fields of lingua's serialization.SerializableLanguageModel
// (serialization/model.proto) that the tables read.
const (
	modelNgramSets = 4 // repeated SerializableNgramSet
	setProbability = 1 // double
	setNgrams      = 2 // repeated string
)

// postings returns the postings of one model's serialised protobuf, sorted
// by hash, a hash listed twice kept once (which one is unspecified, as it was
// when all postings were sorted at once; no model of lingua 1.4 lists an
// n-gram twice or has two of its n-grams' hashes collide, which
// TestBuildMatchesReference checks).
// Sets whose probability is not positive are skipped, as lingua skips them.
// It reads the wire format in place, so that no string is allocated per
// n-gram, and counts the postings before it allocates them.
func (d *Detector) postings(raw []byte) ([]posting, error) {
	count := 0
	err := eachSet(raw, func(_ float64, set []byte) error {
		return eachNgram(set, func([]byte) { count++ })
	})
	if err != nil {
		return nil, err
	}
	ps := make([]posting, 0, count)
	_ = eachSet(raw, func(p float64, set []byte) error {
		lp := math.Log(p)
		return eachNgram(set, func(g []byte) {
			ps = append(ps, posting{d.hashString(unsafe.String(unsafe.SliceData(g), len(g))), lp})
		})
	})
	slices.SortFunc(ps, func(a, b posting) int { return cmp.Compare(a.h, b.h) })
	return slices.CompactFunc(ps, func(a, b posting) bool { return a.h == b.h }), nil
}

// eachSet calls f with each n-gram set of a model whose probability is
// positive, and the set's encoded message.
func eachSet(raw []byte, f func(p float64, set []byte) error) error {
	return eachField(raw, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != modelNgramSets || typ != protowire.BytesType {
			return nil
		}
		p := 0.0 // proto3: absent is zero; the last of repeated scalars wins
		err := eachField(v, func(num protowire.Number, typ protowire.Type, x []byte) error {
			if num == setProbability && typ == protowire.Fixed64Type {
				u, _ := protowire.ConsumeFixed64(x)
				p = math.Float64frombits(u)
			}
			return nil
		})
		if err != nil || p <= 0 {
			return err
		}
		return f(p, v)
	})
}

// eachNgram calls f with each n-gram of an encoded set.
func eachNgram(set []byte, f func(g []byte)) error {
	return eachField(set, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == setNgrams && typ == protowire.BytesType {
			f(v)
		}
		return nil
	})
}

// eachField calls f with each field of an encoded message: for a bytes
// field its contents, for another its encoded value.
func eachField(b []byte, f func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		if typ == protowire.BytesType {
			x, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			v, n = x, m
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			v = b[:n]
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// mergeTable builds the table of the languages' sorted postings (by
// language index): postings in (hash, language) order, each distinct hash
// in its slot.
func mergeTable(per [][]posting) table {
	total := 0
	for _, ps := range per {
		total += len(ps)
	}
	distinct := 0
	var last uint64
	m := newMerger(per)
	for i := 0; i < total; i++ {
		h, _, _ := m.next()
		if i == 0 || h != last {
			distinct++
		}
		last = h
	}
	size := 1
	for size < distinct*3/2+1 {
		size <<= 1
	}
	t := table{
		keys: make([]uint64, size), start: make([]uint32, size), count: make([]uint8, size),
		lang: make([]uint8, total), logp: make([]float64, total), mask: uint64(size - 1),
	}
	m = newMerger(per)
	slot := -1
	for i := 0; i < total; i++ {
		h, lang, lp := m.next()
		t.lang[i], t.logp[i] = uint8(lang), lp
		if slot >= 0 && t.keys[slot] == h {
			t.count[slot]++
			continue
		}
		s := h & t.mask
		for t.keys[s] != 0 {
			s = (s + 1) & t.mask
		}
		t.keys[s], t.start[s], t.count[s] = h, uint32(i), 1
		slot = int(s)
	}
	return t
}

// merger yields the postings of several sorted lists in (hash, list) order:
// a binary min-heap of the lists' heads.
type merger struct {
	per  [][]posting
	pos  []int
	heap []head
}

type head struct {
	h    uint64
	list int
}

func (a head) less(b head) bool { return a.h < b.h || a.h == b.h && a.list < b.list }

func newMerger(per [][]posting) *merger {
	m := &merger{per: per, pos: make([]int, len(per))}
	for i, ps := range per {
		if len(ps) > 0 {
			m.heap = append(m.heap, head{ps[0].h, i})
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return m
}

func (m *merger) down(i int) {
	h := m.heap
	x := h[i]
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			l = r
		}
		if !h[l].less(x) {
			break
		}
		h[i] = h[l]
		i = l
	}
	h[i] = x
}

// next returns the smallest head (the caller asks no more often than there
// are postings).
func (m *merger) next() (h uint64, list int, logp float64) {
	top := m.heap[0]
	p := m.per[top.list][m.pos[top.list]]
	m.pos[top.list]++
	if k := m.pos[top.list]; k < len(m.per[top.list]) {
		m.heap[0].h = m.per[top.list][k].h
	} else {
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	}
	if len(m.heap) > 1 {
		m.down(0)
	}
	return p.h, top.list, p.logp
}

// The n-gram hash is fixed (FNV-1a, then murmur3's finaliser so that the
// low bits the tables index by are mixed) rather than a per-process seed,
// so that built tables can be cached on disk and read back by a later
// process.
func (d *Detector) hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return nonzero(fmix64(h))
}

func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func nonzero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// Languages are the candidates, in the order New was given them.
func (d *Detector) Languages() []lingua.Language { return slices.Clone(d.langs) }

// Confidence is a candidate language and lingua's confidence in it.
type Confidence struct {
	Language lingua.Language
	Value    float64
}

// Confidences returns every candidate with its confidence, most likely first
// (ties by language), as lingua's ComputeLanguageConfidenceValues does.
func (d *Detector) Confidences(text string) []Confidence {
	vals := make([]Confidence, len(d.langs))
	for i, l := range d.langs {
		vals[i].Language = l
	}
	d.fill(text, vals)
	sort.Slice(vals, func(i, j int) bool {
		if vals[i].Value == vals[j].Value {
			return vals[i].Language < vals[j].Language
		}
		return vals[i].Value > vals[j].Value
	})
	return vals
}

func (d *Detector) set(vals []Confidence, l lingua.Language, v float64) {
	if i, ok := d.index[l]; ok {
		vals[i].Value = v
	}
}

func (d *Detector) fill(text string, vals []Confidence) {
	words := splitWords(strings.ToLower(text))
	if len(words) == 0 {
		return
	}
	if l := d.detectWithRules(words); l != lingua.Unknown {
		d.set(vals, l, 1)
		return
	}
	filtered := d.filterByRules(words)
	if len(filtered) == 1 {
		d.set(vals, filtered[0], 1)
		return
	}
	var inFiltered langSet
	for _, l := range filtered {
		inFiltered.add(d.index[l])
	}
	chars := 0
	for _, w := range words {
		chars += utf8.RuneCountInString(w)
	}
	lengths := []int{1, 2, 3, 4, 5}
	if chars >= 120 {
		lengths = []int{3}
	}
	nl := len(d.langs)
	sums := make([]float64, nl) // summed log-probabilities over lengths
	has := make([]bool, nl)     // some length gave the language a negative sum
	unigramCounts := []int(nil) // nil unless lengths include 1
	sum := make([]float64, nl)  // per length
	pre := prefixHashes(words, lengths[len(lengths)-1], make([]prefix, 0, chars))
	var grams []int32 // per length: the position in pre of each distinct n-gram
	var seen hashSet
	seen.reset(chars) // a length's distinct n-grams are at most the text's characters
	for _, n := range lengths {
		grams = distinctNgrams(pre, n, grams[:0], &seen)
		clear(sum)
		for _, at := range grams {
			g := &pre[at].g
			// The n-gram's log-probability in each filtered language, else
			// its longest prefix's that the language has.
			want := inFiltered
			left := len(filtered)
			for k := n - 1; k >= 0 && left > 0; k-- {
				lo, hi := d.tables[k+1].lookup(g[k])
				t := &d.tables[k+1]
				for p := lo; p < hi; p++ {
					if li := t.lang[p]; want.has(li) {
						want.remove(li)
						sum[li] += t.logp[p]
						left--
					}
				}
			}
		}
		anyProb := false
		for i := range sum {
			if inFiltered.has(uint8(i)) && sum[i] < 0 {
				sums[i] += sum[i]
				has[i] = true
				anyProb = true
			}
		}
		if n == 1 {
			unigramCounts = d.countUnigrams(pre, grams, filtered, sum, anyProb)
		}
	}
	// Lingua divides by the unigram count, takes exp (in decimals when it
	// underflows) and normalises; exp(s_i)/Σexp(s_j) is computed here
	// relative to the largest s, which needs no decimals.
	scores := make([]float64, nl)
	best := math.Inf(-1)
	any := false
	for _, l := range filtered {
		i := d.index[l]
		s := 0.0
		if has[i] {
			s = sums[i]
		}
		if unigramCounts != nil && unigramCounts[i] > 0 {
			s /= float64(unigramCounts[i])
		}
		if s == 0 {
			continue
		}
		scores[i], any = s, true
		best = max(best, s)
	}
	if !any {
		return
	}
	total := 0.0
	for i := range scores {
		if scores[i] != 0 {
			total += math.Exp(scores[i] - best)
		}
	}
	for i := range scores {
		if scores[i] != 0 {
			// lingua's decimal division keeps 16 decimal places.
			vals[i].Value = math.Round(math.Exp(scores[i]-best)/total*1e16) / 1e16
		}
	}
}

// countUnigrams replays lingua's countUnigrams, including its quirk: a
// filtered language without a unigram probability is replaced by the zero
// Language (Afrikaans), which then counts once per such language.
func (d *Detector) countUnigrams(pre []prefix, grams []int32, filtered []lingua.Language, sum []float64, anyProb bool) []int {
	// times[i] is how many filtered languages count as candidate i: each
	// adds one per unigram that i has a probability for (a model lists a
	// unigram once, so a unigram has one posting per language at most).
	times := make([]int, len(d.langs))
	for _, l := range filtered {
		if anyProb && !(sum[d.index[l]] < 0) {
			l = lingua.Language(0)
		}
		if i, ok := d.index[l]; ok {
			times[i]++
		}
	}
	counts := make([]int, len(d.langs))
	t := &d.tables[1]
	for _, at := range grams {
		lo, hi := t.lookup(pre[at].g[0])
		for p := lo; p < hi; p++ {
			counts[t.lang[p]] += times[t.lang[p]]
		}
	}
	return counts
}

// langSet is a set of candidate indices (there are at most 255).
type langSet [4]uint64

func (s *langSet) add(i int)        { s[i>>6] |= 1 << (i & 63) }
func (s *langSet) has(i uint8) bool { return s[i>>6]&(1<<(i&63)) != 0 }
func (s *langSet) remove(i uint8)   { s[i>>6] &^= 1 << (i & 63) }

// prefix is one position of a word: the hashes of the n-grams that start
// there, by length (g[k] is the (k+1)-gram's), for the k lengths the word
// has runes left for (at most the longest prefixHashes was asked for).
type prefix struct {
	g [maxNgram]uint64
	k int
}

// prefixHashes appends every position of words in order, with the hashes
// of its n-grams up to maxN runes (at most maxNgram). A prefix's hash is
// FNV-1a over its UTF-8 bytes, so the hashes of one position's n-grams are
// the steps of one FNV pass, computed once for every length fill reads
// (hashString hashes a model's n-gram the same way); a text that reads
// trigrams alone hashes no longer prefixes.
func prefixHashes(words []string, maxN int, out []prefix) []prefix {
	var enc [utf8.UTFMax]byte
	maxN = min(maxN, maxNgram)
	for _, w := range words {
		for i := 0; i < len(w); {
			var p prefix
			h := uint64(14695981039346656037)
			for j := i; p.k < maxN && j < len(w); p.k++ {
				if c := w[j]; c < utf8.RuneSelf {
					h = (h ^ uint64(c)) * 1099511628211
					j++
				} else {
					r, size := utf8.DecodeRuneInString(w[j:])
					j += size
					// The rune's encoding, as utf8.AppendRune gives it
					// ([]rune of an invalid byte is U+FFFD, and so is this).
					for _, c := range enc[:utf8.EncodeRune(enc[:], r)] {
						h = (h ^ uint64(c)) * 1099511628211
					}
				}
				p.g[p.k] = nonzero(fmix64(h))
			}
			out = append(out, p)
			_, size := utf8.DecodeRuneInString(w[i:])
			i += size
		}
	}
	return out
}

// distinctNgrams appends, for each distinct n-gram of the positions pre,
// the index in pre of its first occurrence, in order (fill sums their
// log-probabilities in this order, so it is part of the answer). seen is the
// scratch set of hashes already taken, cleared here; reset sizes it for the
// text.
func distinctNgrams(pre []prefix, n int, out []int32, seen *hashSet) []int32 {
	seen.clear()
	for i := range pre {
		if p := &pre[i]; p.k >= n && seen.add(p.g[n-1]) {
			out = append(out, int32(i))
		}
	}
	return out
}

// hashSet is a set of nonzero, well-mixed hashes (open addressing, 0 empty):
// one detection's scratch, reused across its n-gram lengths.
type hashSet struct {
	slots []uint64
	mask  uint64
}

// reset makes the set empty with room for at least n hashes at half load.
func (s *hashSet) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if len(s.slots) < size {
		s.slots = make([]uint64, size)
	} else {
		clear(s.slots)
	}
	s.mask = uint64(size - 1)
}

func (s *hashSet) clear() { clear(s.slots) }

// add adds h and reports whether it was not there.
func (s *hashSet) add(h uint64) bool {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		switch s.slots[i] {
		case h:
			return false
		case 0:
			s.slots[i] = h
			return true
		}
	}
}

// splitWords is lingua's splitTextIntoWords over lower-cased text: the
// matches of `\p{Han}|\p{Hangul}|\p{Hiragana}|\p{Katakana}|\p{L}+`, leftmost
// first (a run of letters that starts outside those scripts swallows them).
func splitWords(s string) []string {
	var words []string
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			i += max(size, 1)
			continue
		}
		if isCJK(r) {
			words = append(words, s[i:i+size])
			i += size
			continue
		}
		if !unicode.IsLetter(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if (r == utf8.RuneError && size <= 1) || !unicode.IsLetter(r) {
				break
			}
			j += size
		}
		words = append(words, s[i:j])
		i = j
	}
	return words
}

func isCJK(r rune) bool {
	return r >= cjkMin && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hangul, r) ||
		unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r))
}

// cjkMin is the lowest rune of the scripts isCJK tests: below it (most
// text) none of their range tables needs a search.
var cjkMin = func() rune {
	m := rune(unicode.MaxRune)
	for _, t := range []*unicode.RangeTable{unicode.Han, unicode.Hangul, unicode.Hiragana, unicode.Katakana} {
		if len(t.R16) > 0 {
			m = min(m, rune(t.R16[0].Lo))
		} else if len(t.R32) > 0 {
			m = min(m, rune(t.R32[0].Lo))
		}
	}
	return m
}()

// detectWithRules is lingua's detectLanguageWithRules. Its counts are kept
// by slot (slots) rather than in maps: the candidates, then Chinese and
// Japanese where they are not candidates (lingua counts them all the same),
// then Unknown.
func (d *Detector) detectWithRules(words []string) lingua.Language {
	nl := len(d.langs)
	ns, unknown := nl+3, nl+2
	var tb, cb, sb [32]int
	var total, counts []int
	if ns <= len(tb) {
		total, counts = tb[:ns], cb[:ns]
	} else {
		total, counts = make([]int, ns), make([]int, ns)
	}
	for _, w := range words {
		clear(counts)
		distinct := 0
		inc := func(slot int) {
			if counts[slot] == 0 {
				distinct++
			}
			counts[slot]++
		}
		for _, r := range w {
			slots := sb[:0]
			if uint32(r) < uint32(len(d.latin1Slots)) {
				slots = d.latin1Slots[r]
			} else {
				slots = d.ruleSlots(r, slots)
			}
			for _, s := range slots {
				inc(s)
			}
		}
		switch distinct {
		case 0:
			total[unknown]++
		case 1:
			s := slices.IndexFunc(counts, func(c int) bool { return c > 0 })
			if s < nl {
				total[s]++
			} else {
				total[unknown]++
			}
		default:
			if counts[d.zhSlot] > 0 && counts[d.jaSlot] > 0 {
				total[d.jaSlot]++
				continue
			}
			top, second, s := mostFrequentSlot(counts)
			if s < nl && top > second {
				total[s]++
			} else {
				total[unknown]++
			}
		}
	}
	if float64(total[unknown]) < float64(len(words))*0.5 {
		total[unknown] = 0
	}
	distinct := 0
	for _, c := range total {
		if c > 0 {
			distinct++
		}
	}
	switch distinct {
	case 0:
		return lingua.Unknown
	case 1:
		return d.slotLanguage(slices.IndexFunc(total, func(c int) bool { return c > 0 }))
	case 2:
		if total[d.zhSlot] > 0 && total[d.jaSlot] > 0 {
			return lingua.Japanese
		}
	}
	top, second, s := mostFrequentSlot(total)
	if top == second {
		return lingua.Unknown
	}
	return d.slotLanguage(s)
}

// ruleSlots appends the slots detectWithRules counts rune r in: the
// candidate of the one-language alphabet r is written in, else Chinese for
// Han, Japanese for kana, else each candidate whose unique characters hold r.
func (d *Detector) ruleSlots(r rune, slots []int) []int {
	for _, oa := range d.oneAlpha {
		if oa.a.matchesRune(r) {
			return append(slots, oa.slot)
		}
	}
	switch {
	case unicode.Is(unicode.Han, r):
		slots = append(slots, d.zhSlot)
	case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
		slots = append(slots, d.jaSlot)
	case unicode.Is(unicode.Latin, r) || unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Devanagari, r):
		for _, l := range d.unique {
			if strings.ContainsRune(uniqueCharacters(l), r) {
				slots = append(slots, d.index[l])
			}
		}
	}
	return slots
}

// slotLanguage is the language of a detectWithRules slot.
func (d *Detector) slotLanguage(s int) lingua.Language {
	switch nl := len(d.langs); {
	case s < nl:
		return d.langs[s]
	case s == nl:
		return lingua.Chinese
	case s == nl+1:
		return lingua.Japanese
	}
	return lingua.Unknown
}

// mostFrequentSlot returns the two highest counts of those above zero and a
// slot with the highest (which one, on a tie, does not matter to the
// callers: a tie is answered as unknown).
func mostFrequentSlot(counts []int) (top, second, slot int) {
	top, second, slot = -1, -1, -1
	for s, c := range counts {
		switch {
		case c <= 0:
		case c > top:
			top, second, slot = c, top, s
		case c > second:
			second = c
		}
	}
	return top, second, slot
}

// charIndices is charIdx[r].
func (d *Detector) charIndices(r rune) []int {
	if uint32(r) < uint32(len(d.latin1CharIdx)) {
		return d.latin1CharIdx[r]
	}
	return d.charIdx[r]
}

// filterByRules is lingua's filterLanguagesByRules (its maps kept as arrays
// by alphabet and by candidate index).
func (d *Detector) filterByRules(words []string) []lingua.Language {
	var alphas [numAlphabets]int
	nalphas := 0
	for _, w := range words {
		if a, ok := firstAlphabet(w); ok {
			if alphas[a] == 0 {
				nalphas++
			}
			alphas[a]++
		}
	}
	if nalphas == 0 {
		return d.langs
	}
	if nalphas > 1 {
		// Every alphabet counted the same number of words: no filter.
		first, same := -1, true
		for _, c := range alphas {
			if c == 0 {
				continue
			}
			if first < 0 {
				first = c
			} else if c != first {
				same = false
			}
		}
		if same {
			return d.langs
		}
	}
	// Lingua sorts the alphabets by count in map order: on a tie for the
	// most frequent (with a third alphabet counted differently) its choice
	// is random. The lowest alphabet is taken here.
	best, bestCount := alphabet(0), -1
	for a := alphabet(0); a < numAlphabets; a++ {
		if c := alphas[a]; c > 0 && c > bestCount {
			best, bestCount = a, c
		}
	}
	var filtered []lingua.Language
	var inFiltered [32]bool
	var in []bool
	if len(d.langs) <= len(inFiltered) {
		in = inFiltered[:len(d.langs)]
	} else {
		in = make([]bool, len(d.langs))
	}
	for i, l := range d.langs {
		if slices.Contains(d.alphas[i], best) {
			filtered = append(filtered, l)
			in[i] = true
		}
	}
	var cb [32]int
	var counts []int
	if len(d.langs) <= len(cb) {
		counts = cb[:len(d.langs)]
	} else {
		counts = make([]int, len(d.langs))
	}
	var db [16]rune
	distinct := db[:0]
	for _, w := range words {
		distinct = distinct[:0]
		for _, r := range w {
			if len(d.charIndices(r)) > 0 && !slices.Contains(distinct, r) {
				distinct = append(distinct, r)
			}
		}
		for _, r := range distinct {
			for _, i := range d.charIndices(r) {
				if in[i] {
					counts[i]++
				}
			}
		}
	}
	half := float64(len(words)) * 0.5
	var subset []lingua.Language
	for _, l := range filtered {
		if c := counts[d.index[l]]; c > 0 && float64(c) >= half {
			subset = append(subset, l)
		}
	}
	if len(subset) > 0 {
		return subset
	}
	return filtered
}

// embeddedData is the contents of lingua's embedded file name as the binary
// holds it (not a copy), for releaseEmbedded; ok is false if embed's
// directory entries no longer carry it (a Go release that changed them:
// TestEmbeddedDataIsTheFile catches that).
func embeddedData(name string) (data string, ok bool) {
	dir, base := path.Split(name)
	entries, err := linguaModels.ReadDir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if e.Name() != base {
			continue
		}
		// embed's directory entries are its *file {name, data string; hash}
		// (a layout the compiler writes: cmd/compile's staticdata.WriteEmbed).
		v := reflect.ValueOf(e)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return "", false
		}
		f := v.Elem().FieldByName("data")
		if !f.IsValid() || f.Kind() != reflect.String {
			return "", false
		}
		return f.String(), true
	}
	return "", false
}
