package toolselection

import (
	"context"
	"testing"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// The same measurement with the router's default embedding model (the
// committed ONNX model over GloVe vectors, what serve embeds with by
// default), run by ONNX Runtime.
func TestRecallAtKDefaultModel(t *testing.T) {
	rt, err := inference.Open(inference.Options{LibraryPath: orttest.Library(t), Device: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ms, err := defaultmodels.Open(context.Background(), rt, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close() })
	emb := func(texts []string) ([][]float32, error) {
		return ms.Signals.Embedder.Embed(context.Background(), texts)
	}
	r := recallAtK(t, emb, []int{1, 3, 5})
	t.Logf("default embedding model: recall@1 %.3f, recall@3 %.3f, recall@5 %.3f (72 prompts, 24 tools)", r[1], r[3], r[5])
	if r[1] < 0.65 || r[3] < 0.85 || r[5] < 0.85 {
		t.Fatalf("recall fell: %v", r)
	}
}
