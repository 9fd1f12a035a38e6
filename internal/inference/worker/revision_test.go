package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckRevision(t *testing.T) {
	rev, other := strings.Repeat("a1", 20), strings.Repeat("b2", 20)
	root := t.TempDir()
	snap := filepath.Join(root, "models--org--m", "snapshots", rev)
	local := filepath.Join(root, "local")
	meta := filepath.Join(local, ".cache", "huggingface", "download")
	plain := filepath.Join(root, "plain")
	for _, d := range []string{snap, meta, plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"model.onnx", "config.json"} {
		os.WriteFile(filepath.Join(meta, f+".metadata"), []byte(rev+"\n\"etag\"\n1700000000.0\n"), 0o644)
	}
	for _, c := range []struct {
		dir, rev, want string
	}{
		{plain, "", ""},
		{snap, rev, ""},
		{snap, other, "snapshot of commit " + rev},
		{local, rev, ""},
		{local, other, "config.json was downloaded at commit"},
		{plain, rev, "cannot show"},
	} {
		err := CheckRevision(c.dir, c.rev)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s@%s: %v", c.dir, c.rev, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !IsPermanent(err)):
			t.Errorf("%s@%s: %v, want a permanent error with %q", c.dir, c.rev, err, c.want)
		}
	}
}

func TestDetectRevision(t *testing.T) {
	rev := strings.Repeat("c3", 20)
	root := t.TempDir()
	snap := filepath.Join(root, "models--org--m", "snapshots", rev)
	local := filepath.Join(root, "local")
	meta := filepath.Join(local, ".cache", "huggingface", "download")
	for _, d := range []string{snap, meta} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(meta, "model.onnx.metadata"), []byte(rev+"\n\"etag\"\n"), 0o644)
	if got := DetectRevision(snap); got != rev {
		t.Errorf("snapshot: %q", got)
	}
	if got := DetectRevision(local); got != rev {
		t.Errorf("metadata: %q", got)
	}
	if got := DetectRevision(root); got != "" {
		t.Errorf("plain directory: %q", got)
	}
	// The detected revision is one CheckRevision accepts for the same files.
	if err := CheckRevision(local, DetectRevision(local)); err != nil {
		t.Error(err)
	}
}
