package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOperatorMissing: without junction-operator beside the binary or on PATH, the command says how to build it.
func TestOperatorMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"operator", "convert", "x.yaml"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(errb.String(), "make operator") {
		t.Fatalf("stderr %q does not say how to build it", errb.String())
	}
}

// TestOperatorExecs: junction operator runs junction-operator from PATH with its arguments and streams, and
// exits with its status.
func TestOperatorExecs(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"args: $*\"\necho oops >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "junction-operator"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"operator", "convert", "r.yaml"}, &out, &errb); code != 3 {
		t.Fatalf("exit %d, want 3 (stderr %q)", code, errb.String())
	}
	if out.String() != "args: convert r.yaml\n" || errb.String() != "oops\n" {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
}
