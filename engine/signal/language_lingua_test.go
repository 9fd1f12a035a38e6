//go:build !nolingua

package signal

import (
	"sync"
	"testing"
	_ "unsafe" // go:linkname, to count lingua's cached models

	lingua "github.com/pemistahl/lingua-go"
)

// A LanguageDetector's models are its own, not in lingua's process-wide
// caches (which nothing could empty): building one and detecting with it
// leave those caches empty, while lingua's own detector fills them (so the
// names linked below still match lingua's).
func TestDetectorLeavesLinguaCachesEmpty(t *testing.T) {
	d, err := NewLanguageDetector("de")
	if err != nil {
		t.Fatal(err)
	}
	if n := languageModelsCached(); n != 0 {
		t.Fatalf("building a detector filled lingua's caches with %d models; they should belong to the detector", n)
	}
	if got, _ := d.Detect("Wie spät ist es heute in Berlin, bitte?"); got != "de" {
		t.Fatalf("detected %q", got)
	}
	if n := languageModelsCached(); n != 0 {
		t.Fatalf("detection filled lingua's caches with %d models", n)
	}
	lingua.NewLanguageDetectorBuilder().FromLanguages(lingua.English, lingua.German).Build().
		ComputeLanguageConfidenceValues("Wie spät ist es heute in Berlin, bitte?")
	if languageModelsCached() == 0 {
		t.Fatal("lingua's caches look empty after lingua loaded models: the names linked in this file no longer match lingua's")
	}
}

// lingua keeps every language model it loads in these package-level caches,
// shared by all its detectors, and has no way to unload them; they are
// reached here by name so that the test below can tell that serve's
// detector (internal/langid) never fills them.
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

// languageModelsCached counts the models lingua holds (for tests).
func languageModelsCached() int {
	n := 0
	for _, m := range []*sync.Map{&linguaUnigrams, &linguaBigrams, &linguaTrigrams, &linguaQuadrigrams, &linguaFivegrams} {
		m.Range(func(any, any) bool { n++; return true })
	}
	return n
}
