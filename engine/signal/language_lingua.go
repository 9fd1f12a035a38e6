//go:build !nolingua

package signal

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/junction-router/junction/internal/langid"
	lingua "github.com/pemistahl/lingua-go"
)

// LanguageDetector is lingua's language detection, as internal/langid runs
// it: lingua's high-accuracy algorithm over lingua's models, which langid
// loads into compact tables the detector owns (about 60 MB for the ten
// common languages instead of lingua's 150 MB, and about a tenth of lingua's
// CPU per request; TestAgreesWithLingua there checks it answers as lingua
// does). It is safe for concurrent use; one detector can serve every recipe
// of a generation, and its memory goes when the last user drops it.
type LanguageDetector struct {
	det   *langid.Detector
	known map[string]bool
}

// NewLanguageDetector builds a detector for the common languages plus codes
// (ISO 639-1) and loads all their models, so that no request loads any.
func NewLanguageDetector(codes ...string) (*LanguageDetector, error) {
	d := &LanguageDetector{known: map[string]bool{}}
	var langs []lingua.Language
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
		langs = append(langs, lingua.GetLanguageFromIsoCode639_1(iso))
	}
	// The tables are cached in the user cache directory (JUNCTION_LANGID_CACHE
	// names another, or "off"): building them takes seconds of CPU, reading
	// them back a few milliseconds.
	det, err := langid.Load(langid.Options{CacheDir: langid.DefaultCacheDir()}, langs...)
	if err != nil {
		return nil, fmt.Errorf("signals: loading the language models: %w", err)
	}
	d.det = det
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
	vals := d.det.Confidences(text)
	if len(vals) == 0 || vals[0].Value <= 0 || (len(vals) > 1 && vals[0].Value == vals[1].Value) {
		return LanguageUndetermined, 0
	}
	return strings.ToLower(vals[0].Language.IsoCode639_1().String()), vals[0].Value
}

// Languages are the detector's candidate languages (ISO 639-1), sorted.
func (d *LanguageDetector) Languages() []string { return slices.Sorted(maps.Keys(d.known)) }
