//go:build !nolingua

package signal

import (
	"testing"

	lingua "github.com/pemistahl/lingua-go"
)

// A LanguageDetector's models are its own, not in lingua's process-wide
// caches; ReleaseLanguageModels still reaches those caches (a lingua upgrade
// that renamed them would leave them full here) and empties them, and
// detection does not depend on them.
func TestReleaseLanguageModels(t *testing.T) {
	d, err := NewLanguageDetector("de")
	if err != nil {
		t.Fatal(err)
	}
	if n := languageModelsCached(); n != 0 {
		t.Fatalf("building a detector filled lingua's caches with %d models; they should belong to the detector", n)
	}
	lingua.NewLanguageDetectorBuilder().FromLanguages(lingua.English, lingua.German).Build().
		ComputeLanguageConfidenceValues("Wie spät ist es heute in Berlin, bitte?")
	if languageModelsCached() == 0 {
		t.Fatal("lingua's caches look empty after lingua loaded models: the names linked in language_lingua.go no longer match lingua's")
	}
	ReleaseLanguageModels()
	if n := languageModelsCached(); n != 0 {
		t.Fatalf("%d models still cached after ReleaseLanguageModels", n)
	}
	if got, _ := d.Detect("Wie spät ist es heute in Berlin, bitte?"); got != "de" {
		t.Fatalf("after the release: %q", got)
	}
	if n := languageModelsCached(); n != 0 {
		t.Fatalf("detection filled lingua's caches with %d models", n)
	}
}
