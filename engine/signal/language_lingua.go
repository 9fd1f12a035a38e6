//go:build !nolingua

package signal

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	_ "unsafe" // go:linkname, for ReleaseLanguageModels

	lingua "github.com/pemistahl/lingua-go"
)

// LanguageDetector is a lingua detector built once with its models loaded. It
// is safe for concurrent use; one detector can serve every recipe of a
// generation.
//
// It runs lingua in low-accuracy mode, measured against high-accuracy mode on
// 29 candidate languages (see docs/models.md): memory 23 MB instead of 481 MB,
// startup 0.2 s instead of 4.7 s, about 3 times faster per request (~0.2 ms vs
// ~0.7 ms). High accuracy only differs on texts under 120 characters (longer
// texts use trigrams in both modes), where the two modes agreed on 91% of the
// shared data's short prompts; low accuracy is weaker on very short text (a
// few words), which is the trade accepted here.
type LanguageDetector struct {
	det   lingua.LanguageDetector
	known map[string]bool
}

// NewLanguageDetector builds a detector for the common languages plus codes
// (ISO 639-1) and loads its models, so that the first request is not slow.
func NewLanguageDetector(codes ...string) (*LanguageDetector, error) {
	d := &LanguageDetector{known: map[string]bool{}}
	var isos []lingua.IsoCode639_1
	for _, c := range append(slices.Clone(commonLanguages), codes...) {
		c = strings.ToLower(strings.TrimSpace(c))
		if d.known[c] {
			continue
		}
		iso := lingua.GetIsoCode639_1FromValue(c)
		if iso == lingua.UnknownIsoCode639_1 {
			return nil, fmt.Errorf("signals: language %q is not an ISO 639-1 code the language detector knows", c)
		}
		d.known[c] = true
		isos = append(isos, iso)
	}
	d.det = lingua.NewLanguageDetectorBuilder().
		FromIsoCodes639_1(isos...).
		WithPreloadedLanguageModels().
		Build()
	// Preloading covers trigram models only; a trigram a model lacks falls back
	// to bigram and unigram models, which lingua loads on first use. Warm them
	// for every script here rather than on a user's request.
	for _, w := range []string{
		"the quick brown fox xq jumps over zqj lazy dogs", "быстрая лиса ъь прыгает", "سريع ثعلب ظغ",
		"快速的狐狸跳", "すばやい狐", "빠른 여우", "तेज़ लोमड़ी", "γρήγορη αλεπού", "שועל מהיר",
	} {
		d.det.ComputeLanguageConfidenceValues(w)
	}
	return d, nil
}

// Knows reports whether code is one of the detector's candidate languages.
func (d *LanguageDetector) Knows(code string) bool { return d.known[strings.ToLower(code)] }

// Detect returns the ISO 639-1 code of text's language and lingua's confidence
// in it, or LanguageUndetermined and 0.
func (d *LanguageDetector) Detect(text string) (string, float64) {
	text = truncateUTF8(text, maxLanguageBytes)
	if letterWeight(text) < minLanguageLetters {
		return LanguageUndetermined, 0
	}
	vals := d.det.ComputeLanguageConfidenceValues(text)
	if len(vals) == 0 || vals[0].Value() <= 0 || (len(vals) > 1 && vals[0].Value() == vals[1].Value()) {
		return LanguageUndetermined, 0
	}
	return strings.ToLower(vals[0].Language().IsoCode639_1().String()), vals[0].Value()
}

// Languages are the detector's candidate languages (ISO 639-1), sorted.
func (d *LanguageDetector) Languages() []string { return slices.Sorted(maps.Keys(d.known)) }

// lingua keeps every language model it loads in these package-level caches,
// shared by all its detectors, and has no way to unload them; they are
// reached here by name so that ReleaseLanguageModels can empty them.
// TestReleaseLanguageModels fails if an upgrade of lingua renames them.
//
//go:linkname linguaUnigrams github.com/pemistahl/lingua-go.unigramModels
var linguaUnigrams sync.Map

//go:linkname linguaBigrams github.com/pemistahl/lingua-go.bigramModels
var linguaBigrams sync.Map

//go:linkname linguaTrigrams github.com/pemistahl/lingua-go.trigramModels
var linguaTrigrams sync.Map

//go:linkname linguaQuadrigrams github.com/pemistahl/lingua-go.quadrigramModels
var linguaQuadrigrams sync.Map

//go:linkname linguaFivegrams github.com/pemistahl/lingua-go.fivegramModels
var linguaFivegrams sync.Map

// ReleaseLanguageModels empties lingua's model caches (about 15 MB of heap
// per language in high-accuracy mode), for a caller that knows no detector
// is in use any more (serve's model loader, when no configuration generation
// has a language signal). A detector used afterwards still works: lingua
// loads the models it misses again, slowly.
func ReleaseLanguageModels() {
	for _, m := range []*sync.Map{&linguaUnigrams, &linguaBigrams, &linguaTrigrams, &linguaQuadrigrams, &linguaFivegrams} {
		m.Clear()
	}
}

// languageModelsCached counts the models lingua holds (for tests).
func languageModelsCached() int {
	n := 0
	for _, m := range []*sync.Map{&linguaUnigrams, &linguaBigrams, &linguaTrigrams, &linguaQuadrigrams, &linguaFivegrams} {
		m.Range(func(any, any) bool { n++; return true })
	}
	return n
}
