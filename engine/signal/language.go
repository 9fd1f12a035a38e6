package signal

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/junction-router/junction/recipes"
)

// MethodLingua names lingua language detection in routing output.
const MethodLingua = "lingua"

// LanguageUndetermined is the Value of a language result when the text is too
// short or too ambiguous to tell (ISO 639-2 "und").
const LanguageUndetermined = "und"

// commonLanguages are always candidates, beside the languages signals name:
// a detector that only knows the configured languages would call every
// English request "de" when the recipe only asks about German. The set is kept
// to ten because detection runs lingua's high-accuracy algorithm (internal/langid):
// low-accuracy mode (trigrams only) misread a quarter of short prompts in our
// check ("What is the capital of France?" as German), while high accuracy over
// these ten got all but "hello" right; each language costs CPU per request and
// about 6 MB of tables (docs/benchmarks.md, "Language detection").
var commonLanguages = []string{"en", "es", "fr", "de", "it", "pt", "nl", "ru", "zh", "ja"}

// maxLanguageBytes is how much of the text detection reads. Lingua's cost
// grows with the text's distinct n-grams; the beginning of a prompt says which
// language its author writes in, and what follows is often pasted code or data.
const maxLanguageBytes = 512

// minLanguageLetters is the least evidence detection answers on: below it
// ("ok", "hello", "thanks!") every mode guesses, and a guess would make a
// language signal match confidently on nothing.
const minLanguageLetters = 12

// letterWeight counts letters, with ideographic and syllabic scripts weighted
// three times: one Han or Hangul character carries about as much as a short word.
func letterWeight(text string) int {
	n := 0
	for _, r := range text {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			n += 3
		case unicode.IsLetter(r):
			n++
		}
		if n >= minLanguageLetters {
			return n
		}
	}
	return n
}

type languageSet struct {
	signals []languageSignal
	det     *LanguageDetector
}

type languageSignal struct {
	name  string
	codes map[string]bool
}

func newLanguageSet(cfg []recipes.LanguageSignal, det *LanguageDetector) (Set, error) {
	var all []string
	set := &languageSet{}
	for _, c := range cfg {
		if len(c.Languages) == 0 {
			return nil, fmt.Errorf("signals: language signal %q lists no languages", c.Name)
		}
		ls := languageSignal{name: c.Name, codes: map[string]bool{}}
		for _, l := range c.Languages {
			l = strings.ToLower(strings.TrimSpace(l))
			ls.codes[l] = true
			all = append(all, l)
		}
		set.signals = append(set.signals, ls)
	}
	if det == nil {
		var err error
		if det, err = NewLanguageDetector(all...); err != nil {
			return nil, err
		}
	}
	for _, l := range all {
		if !det.Knows(l) {
			return nil, fmt.Errorf("signals: language %q is not a candidate of the shared language detector", l)
		}
	}
	set.det = det
	return set, nil
}

func (s *languageSet) Kind() string { return recipes.KindLanguage }

// Cheap is false: detection takes tens of microseconds (internal/langid).
func (s *languageSet) Cheap() bool { return false }

func (s *languageSet) Missing(code string) []Result {
	out := make([]Result, len(s.signals))
	for i, ls := range s.signals {
		out[i] = Result{Kind: recipes.KindLanguage, Name: ls.name, Method: MethodLingua, Error: code}
	}
	return out
}

func (s *languageSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	if ctx.Err() != nil {
		return stamp(s.Missing(CodeDeadline), start)
	}
	code, conf := s.det.Detect(inputOrEmpty(in).Text)
	out := make([]Result, len(s.signals))
	for i, ls := range s.signals {
		out[i] = Result{Kind: recipes.KindLanguage, Name: ls.name, Method: MethodLingua,
			Value: code, Score: conf, Matched: code != LanguageUndetermined && ls.codes[code]}
	}
	return stamp(out, start)
}
