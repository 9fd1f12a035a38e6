//go:build !nolingua

package langid

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	lingua "github.com/pemistahl/lingua-go"
)

// cacheLangs are out of sorted order, so that the mapping of a file's
// sorted language indices to the caller's order is exercised.
var cacheLangs = []lingua.Language{lingua.Polish, lingua.Korean, lingua.English}

func cacheFile(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "tables-*.bin"))
	if err != nil || len(m) != 1 {
		t.Fatalf("cache files in %s: %v %v, want one", dir, m, err)
	}
	return m[0]
}

func sameAnswers(t *testing.T, got, want *Detector) {
	t.Helper()
	for _, text := range prefixes(edgeTexts) {
		if g, w := got.Confidences(text), want.Confidences(text); !slices.Equal(g, w) {
			t.Fatalf("%q: %v, built %v", text, g, w)
		}
	}
}

func logger(buf *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

func TestCacheRoundTrip(t *testing.T) {
	want, err := New(cacheLangs...)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "not", "yet") // a missing directory is created
	var log bytes.Buffer
	cold, err := Load(Options{CacheDir: dir, Logger: logger(&log)}, cacheLangs...)
	if err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 {
		t.Errorf("a cold load warned: %s", log.String())
	}
	sameAnswers(t, cold, want)
	f := cacheFile(t, dir)
	if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v (%v), want 0600", fi.Mode(), err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v (%v), want 0700", fi.Mode(), err)
	}
	before, _ := os.ReadFile(f)
	warm, err := Load(Options{CacheDir: dir, Logger: logger(&log)}, cacheLangs...)
	if err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 {
		t.Errorf("a warm load warned: %s", log.String())
	}
	sameAnswers(t, warm, want)
	if after, _ := os.ReadFile(f); !bytes.Equal(before, after) {
		t.Error("a warm load rewrote the cache file")
	}
	// The same set in another order shares the file.
	other, err := Load(Options{CacheDir: dir, Logger: logger(&log)}, lingua.English, lingua.Polish, lingua.Korean)
	if err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, other, want)
	cacheFile(t, dir)
	if log.Len() != 0 {
		t.Errorf("a reordered load warned: %s", log.String())
	}
	// And the warm read is what answered: reading the file succeeds.
	d, _ := newDetector(cacheLangs)
	sorted := slices.Sorted(slices.Values(cacheLangs))
	if err := d.readCache(f, d.cacheKey(sorted), sorted); err != nil {
		t.Errorf("reading the cache file: %v", err)
	}
}

func TestCacheDirUnusable(t *testing.T) {
	// A cache "directory" that is a file: the detector is built, with a
	// warning that the cache cannot be written.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	d, err := Load(Options{CacheDir: file, Logger: logger(&log)}, lingua.English, lingua.Korean)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "cannot write") {
		t.Errorf("no warning; log: %q", log.String())
	}
	if got := d.Confidences("the weather is nice today")[0].Language; got != lingua.English {
		t.Errorf("detected %v", got)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv(CacheEnv, "off")
	if d := DefaultCacheDir(); d != "" {
		t.Errorf("%s=off: %q, want no cache", CacheEnv, d)
	}
	dir := filepath.Join(t.TempDir(), "c")
	t.Setenv(CacheEnv, dir)
	if d := DefaultCacheDir(); d != dir {
		t.Errorf("%s=%s: %q", CacheEnv, dir, d)
	}
	t.Setenv(CacheEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if d := DefaultCacheDir(); !strings.HasSuffix(d, filepath.Join("junction", "langid")) {
		t.Errorf("default: %q", d)
	}
}

func tenLanguages() []lingua.Language {
	var langs []lingua.Language
	for _, c := range candidates[:10] {
		langs = append(langs, lingua.GetLanguageFromIsoCode639_1(c))
	}
	return langs
}

// BenchmarkLoadCold builds serve's ten common languages' tables from
// lingua's models (what New and a cold Load do).
func BenchmarkLoadCold(b *testing.B) {
	langs := tenLanguages()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(langs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadWarm reads the same tables from a cache file.
func BenchmarkLoadWarm(b *testing.B) {
	langs := tenLanguages()
	opts := Options{CacheDir: b.TempDir()}
	if _, err := Load(opts, langs...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(opts, langs...); err != nil {
			b.Fatal(err)
		}
	}
}
