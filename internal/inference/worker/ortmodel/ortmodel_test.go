package ortmodel_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/synthetic"
	"github.com/junction-router/junction/internal/inference/worker"
	"github.com/junction-router/junction/internal/inference/worker/ortmodel"
)

func TestLoadAndAdapt(t *testing.T) {
	orttest.Library(t)
	rt, err := inference.Open(inference.Options{Device: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	dir := filepath.Join(t.TempDir(), "emb")
	if _, err := synthetic.Write(dir, synthetic.Spec{Task: synthetic.Embedding, Pooled: true, Matryoshka: []int{4}, MaxTokens: 32, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := ortmodel.Load(ctx, rt, dir, worker.Spec{Model: dir}, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.Info()
	// WordPiece adds [CLS] and [SEP]: the worker's budget counts content tokens.
	if info.Task != worker.TaskEmbedding || info.MaxInputTokens != 30 || info.Dimensions != 8 ||
		len(info.Matryoshka) != 2 || info.Matryoshka[1] != 8 || info.MemoryBytes <= 0 || info.Engine == "" {
		t.Fatalf("info %+v", info)
	}
	// model_memory_bytes is the memory the load added to the process, not
	// the size of model.onnx (a stand-in only where /proc cannot be read).
	if st, err := os.Stat(filepath.Join(dir, "model.onnx")); err == nil && runtime.GOOS == "linux" && info.MemoryBytes == st.Size() {
		t.Errorf("memory bytes %d is model.onnx's size, not the loaded model's memory", info.MemoryBytes)
	}
	text := "hello world café"
	ends, complete, err := m.Tokenize(text, 2)
	if err != nil || complete || len(ends) != 2 || text[:ends[1]] != "hello world" {
		t.Fatalf("tokenize: %v %v %v", ends, complete, err)
	}
	res, err := m.Embed(ctx, []string{"hello world", "the cat sat"})
	if err != nil || len(res) != 2 || len(res[0].Vector) != 8 || res[0].Tokens != 2 || res[1].Tokens != 3 {
		t.Fatalf("embed: %+v %v", res, err)
	}

	if _, err := ortmodel.Load(ctx, rt, filepath.Join(t.TempDir(), "none"), worker.Spec{Model: "none"}, inference.ModelOptions{}); !worker.IsPermanent(err) {
		t.Fatalf("missing directory: %v (want a permanent error)", err)
	}
	if _, err := ortmodel.Load(ctx, rt, dir, worker.Spec{Model: dir, Memory: 1e-9}, inference.ModelOptions{}); !worker.IsPermanent(err) {
		t.Fatalf("over the memory budget: %v (want a permanent error)", err)
	}
}
