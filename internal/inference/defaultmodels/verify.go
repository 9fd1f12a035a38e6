package defaultmodels

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Models lists the model directories Write creates, and ArtifactFiles the
// files in each: every one of them is named in the manifest's artifacts.
var (
	ModelNames    = []string{EmbedderName, DomainName, JailbreakName}
	ArtifactFiles = []string{"model.onnx", "config.json", "tokenizer.json"}
)

// CompleteMarker is the file that says a cache directory was written whole.
// It says nothing about the files' integrity: VerifyModel does.
const CompleteMarker = "complete"

// ArtifactDigests writes the bundle's model directories under a temporary
// directory and returns each file's digest by "model/file" (what `make
// models` records in the manifest's artifacts).
func (b *Bundle) ArtifactDigests() (map[string]string, error) {
	tmp, err := os.MkdirTemp("", "junction-defaultmodels-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := b.Write(tmp); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range append(slices.Clone(ModelNames), JointNames...) {
		for _, f := range ArtifactFiles {
			d, err := fileDigest(filepath.Join(tmp, m, f))
			if err != nil {
				return nil, err
			}
			out[m+"/"+f] = d
		}
	}
	return out, nil
}

// MismatchError says which cached file differs from the manifest.
type MismatchError struct {
	Path      string
	Got, Want string
}

func (e *MismatchError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("defaultmodels: %s is missing (the manifest records %s)", e.Path, e.Want)
	}
	return fmt.Sprintf("defaultmodels: %s has digest %s, but the committed manifest records %s: the file was changed after it was written", e.Path, e.Got, e.Want)
}

// VerifyModel checks every file of the built-in model name in dir (a cache
// directory CacheDir made) against the committed manifest's SHA-256, so
// that a file changed in the cache is never loaded. It reads each file once.
func VerifyModel(dir, name string) error {
	man, err := ReadManifest()
	if err != nil {
		return err
	}
	if !slices.Contains(ModelNames, name) && !slices.Contains(JointNames, name) {
		return fmt.Errorf("defaultmodels: %q is not a built-in model (%s)", name, strings.Join(ModelNames, ", "))
	}
	if len(man.Artifacts) == 0 {
		return fmt.Errorf("defaultmodels: the manifest records no artifact digests; run `make models`")
	}
	for _, f := range ArtifactFiles {
		key := name + "/" + f
		want := man.Artifacts[key]
		if want == "" {
			return fmt.Errorf("defaultmodels: the manifest records no digest for %s; run `make models`", key)
		}
		p := filepath.Join(dir, name, f)
		got, err := fileDigest(p)
		if os.IsNotExist(err) {
			return &MismatchError{Path: p, Want: want}
		}
		if err != nil {
			return err
		}
		if got != want {
			return &MismatchError{Path: p, Got: got, Want: want}
		}
	}
	return nil
}

// Verify checks every built-in model in dir, the joint ones too (see VerifyModel).
func Verify(dir string) error {
	for _, name := range append(slices.Clone(ModelNames), JointNames...) {
		if err := VerifyModel(dir, name); err != nil {
			return err
		}
	}
	return nil
}

// IsCache reports whether dir is a cache directory CacheDir wrote: its
// built-in models are then checked against the manifest when loaded.
func IsCache(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, CompleteMarker))
	return err == nil
}

// Revision is the built-in models' commit-style revision: the first 40 hex
// digits of the manifest's digest (list-models shows the whole digest). A
// worker asked for a built-in model at another 40-character revision
// refuses it.
func Revision() (string, error) {
	d, err := ManifestDigest()
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(d, "sha256:")[:40], nil
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// CheckLoad is what a worker asks before loading the model directory path
// pinned at revision (empty: none). It reports whether path is a built-in
// model it checked: one in a cache directory CacheDir wrote, or any model
// directory pinned at the built-ins' Revision; its files must match the
// manifest. A cached built-in pinned at another revision is refused. For
// any other directory it answers false and leaves the revision to the
// caller.
func CheckLoad(path, revision string) (bool, error) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	rev, err := Revision()
	if err != nil {
		return false, err
	}
	pinned := revision != "" && revision == rev
	if !pinned && !(IsCache(dir) && slices.Contains(ModelNames, name)) {
		return false, nil
	}
	if err := VerifyModel(dir, name); err != nil {
		if pinned {
			return true, fmt.Errorf("revision %s is the built-in models', but %w", revision, err)
		}
		return true, fmt.Errorf("%w; refusing to load it (remove %s: it is rebuilt on the next start)", err, dir)
	}
	if revision != "" && !pinned {
		return true, fmt.Errorf("defaultmodels: %s is the built-in model at revision %s, not at the pinned revision %s", path, rev, revision)
	}
	return true, nil
}
