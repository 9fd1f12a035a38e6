package defaultmodels

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The manifest's artifact digests are those of the files Write creates now.
func TestManifestArtifactsMatchWrite(t *testing.T) {
	man, err := ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.ArtifactDigests()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != (len(ModelNames)+len(JointNames))*len(ArtifactFiles) || !maps.Equal(got, man.Artifacts) {
		t.Fatalf("written files %v, the manifest records %v; run `make models`", got, man.Artifacts)
	}
}

// A cached config.json whose labels were swapped is never trusted because
// the complete marker exists: CacheDir notices and rebuilds it.
func TestCacheDirRebuildsAChangedFile(t *testing.T) {
	root := t.TempDir()
	dir, err := CacheDir(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, DomainName, "config.json")
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	swapped := bytes.Replace(orig, []byte(`"0": "`), []byte(`"0": "swapped-`), 1)
	if bytes.Equal(swapped, orig) {
		t.Fatalf("no label to swap in %s", orig)
	}
	if err := os.WriteFile(cfg, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	var mm *MismatchError
	if err := VerifyModel(dir, DomainName); !errors.As(err, &mm) || mm.Path != cfg {
		t.Fatalf("VerifyModel = %v, want a mismatch naming %s", err, cfg)
	}
	again, err := CacheDir(root)
	if err != nil || again != dir {
		t.Fatalf("CacheDir = %q, %v", again, err)
	}
	if now, _ := os.ReadFile(cfg); !bytes.Equal(now, orig) {
		t.Fatalf("the changed config.json was kept:\n%s", now)
	}
	if err := os.Remove(filepath.Join(dir, JailbreakName, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	if err := VerifyModel(dir, JailbreakName); !errors.As(err, &mm) || mm.Got != "" {
		t.Fatalf("a missing file: %v", err)
	}
}

// BenchmarkVerify is the cost CacheDir adds to every load of the cached
// default models (three models, nine files).
func BenchmarkVerify(b *testing.B) {
	dir, err := CacheDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, m := range ModelNames {
		for _, f := range ArtifactFiles {
			st, _ := os.Stat(filepath.Join(dir, m, f))
			size += st.Size()
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if err := Verify(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// CheckLoad: a cached built-in is checked; pinned at the built-ins'
// revision it loads, at another it is refused; other directories are left
// to the caller.
func TestCheckLoad(t *testing.T) {
	dir, err := CacheDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rev, err := Revision()
	if err != nil || len(rev) != 40 {
		t.Fatalf("Revision = %q, %v", rev, err)
	}
	p := filepath.Join(dir, EmbedderName)
	if ok, err := CheckLoad(p, ""); !ok || err != nil {
		t.Errorf("cached, no revision: %v %v", ok, err)
	}
	if ok, err := CheckLoad(p, rev); !ok || err != nil {
		t.Errorf("cached, its revision: %v %v", ok, err)
	}
	if _, err := CheckLoad(p, strings.Repeat("0", 40)); err == nil {
		t.Error("cached, another revision: accepted")
	}
	other := t.TempDir()
	if ok, err := CheckLoad(other, ""); ok || err != nil {
		t.Errorf("another directory: %v %v", ok, err)
	}
	if _, err := CheckLoad(other, rev); err == nil {
		t.Error("another directory pinned at the built-ins' revision: accepted")
	}
}
