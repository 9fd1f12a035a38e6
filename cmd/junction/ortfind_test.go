package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/junction-router/junction/internal/inference/ortlib"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// The binary of a checkout where `make onnxruntime` ran finds the library in the checkout's third_party/ from any
// working directory, called directly or through a symbolic link, with $JUNCTION_ONNXRUNTIME_LIB unset: `make
// run` and an installed link need no variable. The checkout is a temporary directory holding a copy of this
// test binary (which runs main under envRunMain) as bin/junction and a link to the real library.
func TestBinaryFindsTheCheckoutsONNXRuntime(t *testing.T) {
	lib := orttest.Library(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	bin := filepath.Join(repo, "bin", "junction")
	want := filepath.Join(repo, ortlib.RepoDir, "libonnxruntime.so.1")
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(want)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(self, bin); err != nil { // another file system: copy
		copyFile(t, self, bin)
	}
	if err := os.Symlink(lib, want); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "junction")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir() // no third_party above it
	for _, exe := range []string{bin, link} {
		cmd := exec.CommandContext(t.Context(), exe, "worker", "devices")
		cmd.Dir = elsewhere
		cmd.Env = append(os.Environ(), envRunMain+"=1", ortlib.EnvLibrary+"=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s worker devices: %v\n%s", exe, err, out)
		}
		var got struct {
			ONNXRuntime struct{ Library string } `json:"onnxruntime"`
		}
		if err := json.Unmarshal(out, &got); err != nil || got.ONNXRuntime.Library != want {
			t.Errorf("%s found the library at %q (%v), want %s\n%s", exe, got.ONNXRuntime.Library, err, want, out)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
