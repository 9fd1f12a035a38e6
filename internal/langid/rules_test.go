//go:build !nolingua

package langid

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	lingua "github.com/pemistahl/lingua-go"
)

// detectWithRulesReference is detectWithRules as first written, with maps
// (the detector's one-language alphabets as a map too): what
// detectWithRules must answer.
func detectWithRulesReference(d *Detector, words []string) lingua.Language {
	oneAlpha := map[alphabet]lingua.Language{}
	for _, oa := range d.oneAlpha {
		oneAlpha[oa.a] = d.langs[oa.slot]
	}
	total := map[lingua.Language]int{}
	for _, w := range words {
		counts := map[lingua.Language]int{}
		for _, r := range w {
			matched := false
			for a, l := range oneAlpha {
				if unicode.Is(alphabetTables[a], r) {
					counts[l]++
					matched = true
					break
				}
			}
			if matched {
				continue
			}
			switch {
			case unicode.Is(unicode.Han, r):
				counts[lingua.Chinese]++
			case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
				counts[lingua.Japanese]++
			case unicode.Is(unicode.Latin, r) || unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Devanagari, r):
				for _, l := range d.unique {
					if strings.ContainsRune(uniqueCharacters(l), r) {
						counts[l]++
					}
				}
			}
		}
		switch len(counts) {
		case 0:
			total[lingua.Unknown]++
		case 1:
			for l := range counts {
				if _, ok := d.index[l]; ok {
					total[l]++
				} else {
					total[lingua.Unknown]++
				}
			}
		default:
			_, zh := counts[lingua.Chinese]
			_, ja := counts[lingua.Japanese]
			if zh && ja {
				total[lingua.Japanese]++
				continue
			}
			top, second, topLang := mostFrequentReference(counts)
			if _, ok := d.index[topLang]; ok && top > second {
				total[topLang]++
			} else {
				total[lingua.Unknown]++
			}
		}
	}
	if float64(total[lingua.Unknown]) < float64(len(words))*0.5 {
		delete(total, lingua.Unknown)
	}
	switch len(total) {
	case 0:
		return lingua.Unknown
	case 1:
		for l := range total {
			return l
		}
	case 2:
		_, zh := total[lingua.Chinese]
		_, ja := total[lingua.Japanese]
		if zh && ja {
			return lingua.Japanese
		}
	}
	top, second, topLang := mostFrequentReference(total)
	if top == second {
		return lingua.Unknown
	}
	return topLang
}

// mostFrequent returns the two highest counts and a language with the
// highest (which one, on a tie, does not matter to the callers: a tie is
// answered as unknown).
func mostFrequentReference(counts map[lingua.Language]int) (top, second int, lang lingua.Language) {
	top, second = -1, -1
	for l, c := range counts {
		switch {
		case c > top:
			top, second, lang = c, top, l
		case c > second:
			second = c
		}
	}
	return top, second, lang
}

// TestDetectWithRulesMatchesReference compares detectWithRules and
// filterByRules with their map versions on random words over many scripts (one-language alphabets, Han,
// kana, unique characters, Latin, digits) for candidate sets with and
// without Chinese and Japanese, and on the edge and shared texts.
func TestDetectWithRulesMatchesReference(t *testing.T) {
	sets := [][]lingua.Language{
		{lingua.English, lingua.German},
		{lingua.English, lingua.German, lingua.French, lingua.Spanish, lingua.Italian, lingua.Portuguese, lingua.Dutch, lingua.Russian, lingua.Chinese, lingua.Japanese},
		{lingua.Japanese, lingua.Korean, lingua.Greek},
		{lingua.Chinese, lingua.Polish, lingua.Ukrainian, lingua.Catalan, lingua.Hebrew},
		{lingua.German, lingua.Russian, lingua.Hindi, lingua.Arabic, lingua.Afrikaans},
	}
	for _, c := range candidates {
		sets[len(sets)-1] = append(sets[len(sets)-1], lingua.GetLanguageFromIsoCode639_1(c))
	}
	texts := append([]string{"", "urgent: where is my parcel? answer in one word, please."}, edgeTexts...)
	if !testing.Short() {
		texts = append(texts, sharedTexts(t)...)
	}
	letters := []rune("abcxyzäößüéèçñãåæøðþíóúýÿłąęśźżјїєґ中文字日本ひらがなカタカナ한국어αβγδабвгдеёжאבגדابتथदनअ١٢3")
	rng := rand.New(rand.NewPCG(5, 6))
	var words [][]string
	for _, text := range texts {
		words = append(words, splitWords(strings.ToLower(text)))
	}
	for range 20000 {
		var ws []string
		for range 1 + rng.IntN(6) {
			var b strings.Builder
			for range 1 + rng.IntN(5) {
				b.WriteRune(letters[rng.IntN(len(letters))])
			}
			ws = append(ws, b.String())
		}
		words = append(words, ws)
	}
	for _, set := range sets {
		d, err := newDetector(set)
		if err != nil {
			t.Fatal(err)
		}
		for _, ws := range words {
			if got, want := d.detectWithRules(ws), detectWithRulesReference(d, ws); got != want {
				t.Fatalf("candidates %v, words %q: detectWithRules %v, reference %v", set, ws, got, want)
			}
			if got, want := d.filterByRules(ws), filterByRulesReference(d, ws); !slices.Equal(got, want) {
				t.Fatalf("candidates %v, words %q: filterByRules %v, reference %v", set, ws, got, want)
			}
		}
	}
}

// filterByRulesReference is filterByRules as first written, with maps.
func filterByRulesReference(d *Detector, words []string) []lingua.Language {
	alphas := map[alphabet]int{}
	for _, w := range words {
		for a := alphabet(0); a < numAlphabets; a++ {
			if matchesWordReference(a, w) {
				alphas[a]++
				break
			}
		}
	}
	if len(alphas) == 0 {
		return d.langs
	}
	if len(alphas) > 1 {
		distinct := map[int]bool{}
		for _, c := range alphas {
			distinct[c] = true
		}
		if len(distinct) == 1 {
			return d.langs
		}
	}
	// Lingua sorts the alphabets by count in map order: on a tie for the
	// most frequent (with a third alphabet counted differently) its choice
	// is random. The lowest alphabet is taken here.
	best, bestCount := alphabet(0), -1
	for a := alphabet(0); a < numAlphabets; a++ {
		if c, ok := alphas[a]; ok && c > bestCount {
			best, bestCount = a, c
		}
	}
	var filtered []lingua.Language
	for i, l := range d.langs {
		if slices.Contains(d.alphas[i], best) {
			filtered = append(filtered, l)
		}
	}
	charLangs := map[rune][]lingua.Language{}
	for chars, ls := range charsToLanguages {
		for _, r := range chars {
			charLangs[r] = append(charLangs[r], ls...)
		}
	}
	counts := map[lingua.Language]int{}
	var distinct []rune
	for _, w := range words {
		distinct = distinct[:0]
		for _, r := range w {
			if _, ok := charLangs[r]; ok && !slices.Contains(distinct, r) {
				distinct = append(distinct, r)
			}
		}
		for _, r := range distinct {
			for _, l := range charLangs[r] {
				if slices.Contains(filtered, l) {
					counts[l]++
				}
			}
		}
	}
	half := float64(len(words)) * 0.5
	var subset []lingua.Language
	for _, l := range filtered {
		if c := counts[l]; c > 0 && float64(c) >= half {
			subset = append(subset, l)
		}
	}
	if len(subset) > 0 {
		return subset
	}
	return filtered
}

// matchesWordReference is alphabet.matchesWord on the script's range table
// alone (no Latin-1 table).
func matchesWordReference(a alphabet, w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !unicode.Is(alphabetTables[a], r) {
			return false
		}
	}
	return true
}

// TestLatin1Tables checks the alphabets' table for runes below 256 and
// isCJK's lower bound against the range-table searches they stand for
// (detectWithRules' and filterByRules' own tables are checked through their
// answers, against the references above).
func TestLatin1Tables(t *testing.T) {
	for r := rune(0); r < 0x3100; r++ {
		for a := alphabet(0); a < numAlphabets; a++ {
			if got, want := a.matchesRune(r), unicode.Is(alphabetTables[a], r); got != want {
				t.Fatalf("alphabet %d, %U: matchesRune %v, range table %v", a, r, got, want)
			}
		}
		want := unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hangul, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
		if got := isCJK(r); got != want {
			t.Fatalf("%U: isCJK %v, range tables %v", r, got, want)
		}
	}
}
