//go:build !nolingua

package signal

import "testing"

// ReleaseLanguageModels reaches lingua's caches (a lingua upgrade that
// renamed them would leave them empty here while detection fills its own),
// empties them, and a detector used afterwards loads what it misses again.
func TestReleaseLanguageModels(t *testing.T) {
	d, err := NewLanguageDetector("de")
	if err != nil {
		t.Fatal(err)
	}
	if languageModelsCached() == 0 {
		t.Fatal("lingua's caches look empty after a detector loaded its models: the names linked in language_lingua.go no longer match lingua's")
	}
	ReleaseLanguageModels()
	if n := languageModelsCached(); n != 0 {
		t.Fatalf("%d models still cached after ReleaseLanguageModels", n)
	}
	if got, _ := d.Detect("Wie spät ist es heute in Berlin, bitte?"); got != "de" {
		t.Fatalf("after the release: %q", got)
	}
	if languageModelsCached() == 0 {
		t.Fatal("detection after the release loaded nothing")
	}
	ReleaseLanguageModels()
}
