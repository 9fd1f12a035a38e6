package worker

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CheckRevision refuses a model directory whose files are not those of the
// 40-character commit revision: a pin the files cannot show is refused too,
// since serving other files under a pinned revision is what a pin prevents.
// A directory shows its commit by the Hugging Face layouts: a snapshot
// directory (…/snapshots/<commit>), or the download metadata of
// `huggingface-cli download --local-dir` (.cache/huggingface/download/
// *.metadata, whose first line is the commit every file came from).
func CheckRevision(dir, revision string) error {
	if revision == "" {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if filepath.Base(filepath.Dir(abs)) == "snapshots" && isCommit(filepath.Base(abs)) {
		if got := filepath.Base(abs); got != revision {
			return Permanent(fmt.Errorf("model %s is the snapshot of commit %s, not of the pinned revision %s", dir, got, revision))
		}
		return nil
	}
	meta := filepath.Join(abs, ".cache", "huggingface", "download")
	seen := 0
	err = filepath.WalkDir(meta, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".metadata") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		first := ""
		if sc.Scan() {
			first = strings.TrimSpace(sc.Text())
		}
		if first != revision {
			rel, _ := filepath.Rel(meta, p)
			return Permanent(fmt.Errorf("model %s: %s was downloaded at commit %q, not at the pinned revision %s", dir, strings.TrimSuffix(rel, ".metadata"), first, revision))
		}
		seen++
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if seen == 0 {
		return Permanent(fmt.Errorf("model %s cannot show that its files are those of revision %s (neither a Hugging Face snapshot directory nor download metadata); remove the revision or give the files it pins", dir, revision))
	}
	return nil
}

// DetectRevision reports the commit an unpinned model directory shows by
// the layouts CheckRevision reads: a snapshot directory, or download
// metadata naming one commit for every file. It answers "" when the
// directory shows none, or shows several.
func DetectRevision(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if filepath.Base(filepath.Dir(abs)) == "snapshots" && isCommit(filepath.Base(abs)) {
		return filepath.Base(abs)
	}
	found := ""
	err = filepath.WalkDir(filepath.Join(abs, ".cache", "huggingface", "download"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".metadata") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		first, _, _ := strings.Cut(string(b), "\n")
		first = strings.TrimSpace(first)
		if !isCommit(first) || (found != "" && found != first) {
			return fs.SkipAll
		}
		found = first
		return nil
	})
	if err != nil {
		return ""
	}
	return found
}

func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
