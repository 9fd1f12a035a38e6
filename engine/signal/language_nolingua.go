//go:build nolingua

package signal

import "errors"

// LanguageDetector stands in for lingua in binaries built with -tags
// nolingua: lingua's models make up most of a full binary (about 130 of its
// 160 MB), and a deployment whose recipes use no language signal can leave
// them out. Compiling a recipe with a language signal then fails with
// ErrNoLanguageDetection.
type LanguageDetector struct{}

// ErrNoLanguageDetection is what NewLanguageDetector returns in a binary
// built without lingua.
var ErrNoLanguageDetection = errors.New("signals: this binary was built with -tags nolingua, so language signals are not available; use a full build (make build)")

// NewLanguageDetector fails: this build has no language models.
func NewLanguageDetector(...string) (*LanguageDetector, error) { return nil, ErrNoLanguageDetection }

// Knows is false for every code.
func (d *LanguageDetector) Knows(string) bool { return false }

// Detect cannot tell any language.
func (d *LanguageDetector) Detect(string) (string, float64) { return LanguageUndetermined, 0 }

// Languages is empty: this build has no language models.
func (d *LanguageDetector) Languages() []string { return nil }
