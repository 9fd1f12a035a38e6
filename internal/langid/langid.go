//go:build !nolingua

package langid

import (
	"archive/zip"
	"bytes"
	"embed"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
	_ "unsafe" // go:linkname, to read lingua's embedded models

	lingua "github.com/pemistahl/lingua-go"
	"github.com/pemistahl/lingua-go/serialization"
	"google.golang.org/protobuf/proto"
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
	// charLangs maps a character of lingua's charsToLanguagesMapping to the
	// languages its entry names.
	charLangs map[rune][]lingua.Language
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
	for n := 1; n <= maxNgram; n++ {
		if err := d.loadTable(n); err != nil {
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
	d.charLangs = map[rune][]lingua.Language{}
	for chars, ls := range charsToLanguages {
		for _, r := range chars {
			d.charLangs[r] = append(d.charLangs[r], ls...)
		}
	}
	return d, nil
}

var ngramNames = [...]string{1: "unigram", 2: "bigram", 3: "trigram", 4: "quadrigram", 5: "fivegram"}

type posting struct {
	h    uint64
	lang uint8
	logp float64
}

func modelName(iso string, n int) string {
	return fmt.Sprintf("language-models/%s/%ss.pb.bin.zip", iso, ngramNames[n])
}

func (d *Detector) loadTable(n int) error {
	var ps []posting
	for i, l := range d.langs {
		iso := strings.ToLower(l.IsoCode639_1().String())
		name := modelName(iso, n)
		data, err := linguaModels.ReadFile(name)
		if err != nil && n != 1 {
			continue // some languages lack a model (Chinese has only unigrams); lingua scores them 0 too
		}
		if err != nil {
			return fmt.Errorf("langid: lingua's model %s is missing (%v); the lingua-go version does not match this package", name, err)
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil || len(zr.File) == 0 {
			return fmt.Errorf("langid: lingua's model %s is not a zip archive: %v", name, err)
		}
		f, err := zr.File[0].Open()
		if err != nil {
			return fmt.Errorf("langid: opening lingua's model %s: %w", name, err)
		}
		raw, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("langid: reading lingua's model %s: %w", name, err)
		}
		var m serialization.SerializableLanguageModel
		if err := proto.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("langid: decoding lingua's model %s: %w", name, err)
		}
		for _, set := range m.NgramSets {
			if set.Probability <= 0 {
				continue // lingua skips these (probability > 0 test)
			}
			lp := math.Log(set.Probability)
			for _, g := range set.Ngrams {
				ps = append(ps, posting{d.hashString(g), uint8(i), lp})
			}
		}
	}
	slices.SortFunc(ps, func(a, b posting) int {
		if a.h != b.h {
			if a.h < b.h {
				return -1
			}
			return 1
		}
		return int(a.lang) - int(b.lang)
	})
	// A model lists an n-gram once; keep the first posting per (hash,
	// language) all the same.
	ps = slices.CompactFunc(ps, func(a, b posting) bool { return a.h == b.h && a.lang == b.lang })
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
	t := &d.tables[n]
	t.keys = make([]uint64, size)
	t.start = make([]uint32, size)
	t.count = make([]uint8, size)
	t.lang = make([]uint8, len(ps))
	t.logp = make([]float64, len(ps))
	t.mask = uint64(size - 1)
	for i := 0; i < len(ps); {
		j := i
		for j < len(ps) && ps[j].h == ps[i].h {
			t.lang[j], t.logp[j] = ps[j].lang, ps[j].logp
			j++
		}
		s := ps[i].h & t.mask
		for t.keys[s] != 0 {
			s = (s + 1) & t.mask
		}
		t.keys[s], t.start[s], t.count[s] = ps[i].h, uint32(i), uint8(j-i)
		i = j
	}
	return nil
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
	inFiltered := make([]bool, len(d.langs))
	for _, l := range filtered {
		inFiltered[d.index[l]] = true
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
	sums := make([]float64, nl)  // summed log-probabilities over lengths
	has := make([]bool, nl)      // some length gave the language a negative sum
	unigramCounts := []int(nil)  // nil unless lengths include 1
	sum := make([]float64, nl)   // per length
	found := make([]bool, nl)    // per n-gram
	var grams [][maxNgram]uint64 // per length: prefix hashes of each distinct n-gram
	var seen hashSet
	seen.reset(chars) // a length's distinct n-grams are at most the text's characters
	for _, n := range lengths {
		grams = d.ngrams(words, n, grams[:0], &seen)
		clear(sum)
		for _, g := range grams {
			clear(found)
			left := len(filtered)
			for k := n - 1; k >= 0 && left > 0; k-- {
				lo, hi := d.tables[k+1].lookup(g[k])
				t := &d.tables[k+1]
				for p := lo; p < hi; p++ {
					li := t.lang[p]
					if inFiltered[li] && !found[li] {
						found[li] = true
						sum[li] += t.logp[p]
						left--
					}
				}
			}
		}
		anyProb := false
		for i := range sum {
			if inFiltered[i] && sum[i] < 0 {
				sums[i] += sum[i]
				has[i] = true
				anyProb = true
			}
		}
		if n == 1 {
			unigramCounts = d.countUnigrams(grams, filtered, sum, anyProb)
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
func (d *Detector) countUnigrams(grams [][maxNgram]uint64, filtered []lingua.Language, sum []float64, anyProb bool) []int {
	counts := make([]int, len(d.langs))
	t := &d.tables[1]
	for _, l := range filtered {
		if anyProb && !(sum[d.index[l]] < 0) {
			l = lingua.Language(0)
		}
		i, ok := d.index[l]
		if !ok {
			continue
		}
		for _, g := range grams {
			lo, hi := t.lookup(g[0])
			for p := lo; p < hi; p++ {
				if int(t.lang[p]) == i {
					counts[i]++
					break
				}
			}
		}
	}
	return counts
}

// ngrams appends, for each distinct n-gram of words, the hashes of its
// prefixes (lengths 1..n), in the order of their first occurrence (fill sums
// their log-probabilities in this order, so it is part of the answer).
//
// A prefix's hash is FNV-1a over its UTF-8 bytes, so the hashes of one
// n-gram's prefixes are the steps of one FNV pass (hashBytes of each prefix,
// in n steps rather than 1+2+…+n, as hashString hashes a model's n-gram). seen is the scratch set of hashes already
// taken, cleared here; reset sizes it for the text.
func (d *Detector) ngrams(words []string, n int, out [][maxNgram]uint64, seen *hashSet) [][maxNgram]uint64 {
	seen.clear()
	var enc [utf8.UTFMax]byte
	for _, w := range words {
		for i := 0; i < len(w); {
			var g [maxNgram]uint64
			h := uint64(14695981039346656037)
			j, k := i, 0
			for ; k < n && j < len(w); k++ {
				r, size := utf8.DecodeRuneInString(w[j:])
				j += size
				// The rune's encoding, as utf8.AppendRune gives it ([]rune
				// of an invalid byte is U+FFFD, and so is this).
				for _, c := range enc[:utf8.EncodeRune(enc[:], r)] {
					h = (h ^ uint64(c)) * 1099511628211
				}
				g[k] = nonzero(fmix64(h))
			}
			if k < n {
				break // fewer than n runes left in the word
			}
			_, size := utf8.DecodeRuneInString(w[i:])
			i += size
			if seen.add(g[n-1]) {
				out = append(out, g)
			}
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
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hangul, r) ||
		unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

// detectWithRules is lingua's detectLanguageWithRules. Its counts are kept
// by slot (slots) rather than in maps: the candidates, then Chinese and
// Japanese where they are not candidates (lingua counts them all the same),
// then Unknown.
func (d *Detector) detectWithRules(words []string) lingua.Language {
	nl := len(d.langs)
	ns, unknown := nl+3, nl+2
	var tb, cb [32]int
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
			matched := false
			for _, oa := range d.oneAlpha {
				if oa.a.matchesRune(r) {
					inc(oa.slot)
					matched = true
					break
				}
			}
			if matched {
				continue
			}
			switch {
			case unicode.Is(unicode.Han, r):
				inc(d.zhSlot)
			case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
				inc(d.jaSlot)
			case unicode.Is(unicode.Latin, r) || unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Devanagari, r):
				for _, l := range d.unique {
					if strings.ContainsRune(uniqueCharacters(l), r) {
						inc(d.index[l])
					}
				}
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

// filterByRules is lingua's filterLanguagesByRules (its maps kept as arrays
// by alphabet and by candidate index).
func (d *Detector) filterByRules(words []string) []lingua.Language {
	var alphas [numAlphabets]int
	nalphas := 0
	for _, w := range words {
		for a := alphabet(0); a < numAlphabets; a++ {
			if a.matchesWord(w) {
				if alphas[a] == 0 {
					nalphas++
				}
				alphas[a]++
				break
			}
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
			if _, ok := d.charLangs[r]; ok && !slices.Contains(distinct, r) {
				distinct = append(distinct, r)
			}
		}
		for _, r := range distinct {
			for _, l := range d.charLangs[r] {
				if i, ok := d.index[l]; ok && in[i] {
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
