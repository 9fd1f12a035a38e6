package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/synthetic"
)

// TestSetLoadsAndIsDeterministic writes the test set twice (byte-identical) and loads every model.
func TestSetLoadsAndIsDeterministic(t *testing.T) {
	lib := orttest.Library(t)
	a, b := t.TempDir(), t.TempDir()
	for name, spec := range Set(false, 1) {
		for _, dir := range []string{a, b} {
			if _, err := synthetic.Write(filepath.Join(dir, name), spec); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{"model.onnx", "config.json", "tokenizer.json"} {
			x, _ := os.ReadFile(filepath.Join(a, name, f))
			y, _ := os.ReadFile(filepath.Join(b, name, f))
			if len(x) == 0 || !bytes.Equal(x, y) {
				t.Errorf("%s/%s is not deterministic", name, f)
			}
		}
	}
	rt, err := inference.Open(inference.Options{LibraryPath: lib, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tasks := map[inference.Task]int{}
	tokenizers := map[string]int{}
	for name := range Set(false, 1) {
		m, err := rt.Load(context.Background(), filepath.Join(a, name), inference.ModelOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tasks[m.Info().Task]++
		tokenizers[m.Info().Tokenizer]++
		m.Close()
	}
	if len(tasks) != 4 || len(tokenizers) != 3 {
		t.Errorf("the set covers tasks %v and tokenizers %v", tasks, tokenizers)
	}
}
