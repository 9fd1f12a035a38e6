//go:build !nolingua && !race

package langid

import (
	"bytes"
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestCacheRebuildsBadFiles rebuilds the table file six times: single-goroutine work that the race detector slows
// about tenfold and cannot check, so it runs only in the plain run.
func TestCacheRebuildsBadFiles(t *testing.T) {
	want, err := New(cacheLangs...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Load(Options{CacheDir: dir, Logger: logger(new(bytes.Buffer))}, cacheLangs...); err != nil {
		t.Fatal(err)
	}
	f := cacheFile(t, dir)
	good, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string]func([]byte) []byte{
		"truncated":   func(b []byte) []byte { return b[:len(b)/2] },
		"no checksum": func(b []byte) []byte { return b[:len(b)-4] },
		"empty":       func([]byte) []byte { return nil },
		"corrupt":     func(b []byte) []byte { b[len(b)*2/3] ^= 0x40; return b },
		"old version": func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(cacheMagic):], cacheVersion-1); return b },
		"longer":      func(b []byte) []byte { return append(b, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(f, damage(slices.Clone(good)), 0o600); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			d, err := Load(Options{CacheDir: dir, Logger: logger(&log)}, cacheLangs...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "rebuilding") {
				t.Errorf("no warning; log: %q", log.String())
			}
			sameAnswers(t, d, want)
			if b, _ := os.ReadFile(f); !bytes.Equal(b, good) {
				t.Error("the rebuilt cache file differs from the first one")
			}
		})
	}
}
