package inference_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/onnxgraph"
	"github.com/junction-router/junction/internal/inference/synthetic"
)

// TestSentenceTransformersLayout loads an export the way sentence-transformers and Optimum lay it out, with the
// less common graph features: int32 inputs, a position_ids input, a fixed sequence length (16), CLS pooling from
// 1_Pooling/config.json, no Normalize module in modules.json, model_max_length in tokenizer_config.json, and a
// second hidden layer declared in junction.layers.
func TestSentenceTransformersLayout(t *testing.T) {
	rt := openRuntime(t, inference.Options{})
	dir, sm := writeModel(t, synthetic.Spec{Task: synthetic.Embedding, Tokenizer: synthetic.WordPiece})
	const T, H = 16, 4
	vocab := len(sm.Vocab)
	words := make([]float32, vocab*H)
	layer1 := make([]float32, vocab*H)
	for i := range words {
		words[i] = float32(i%7) - 3
		layer1[i] = float32(i%5) * 0.5
	}
	pos := make([]float32, T*H)
	for i := range pos {
		pos[i] = float32(i) / 10
	}
	g := onnxgraph.New("st-layout")
	B := onnxgraph.Sym("batch")
	ids := g.Input("input_ids", onnxgraph.Int32, B, onnxgraph.Fixed(T))
	g.Input("attention_mask", onnxgraph.Int32, B, onnxgraph.Fixed(T))
	posIDs := g.Input("position_ids", onnxgraph.Int64, B, onnxgraph.Fixed(T))
	hidden := g.Op("Add", []string{
		g.Op("Gather", []string{g.Float32("words", []int64{int64(vocab), H}, words), ids}),
		g.Op("Gather", []string{g.Float32("positions", []int64{T, H}, pos), posIDs}),
	})
	g.Node("Identity", []string{hidden}, []string{"last_hidden_state"})
	g.Node("Gather", []string{g.Float32("layer1", []int64{int64(vocab), H}, layer1), ids}, []string{"hidden_states.1"})
	g.Output("last_hidden_state", onnxgraph.Float, B, onnxgraph.Fixed(T), onnxgraph.Fixed(H))
	g.Output("hidden_states.1", onnxgraph.Float, B, onnxgraph.Fixed(T), onnxgraph.Fixed(H))
	os.MkdirAll(filepath.Join(dir, "onnx"), 0o755)
	os.Remove(filepath.Join(dir, "model.onnx"))
	if err := g.WriteFile(filepath.Join(dir, "onnx", "model.onnx"), onnxgraph.ModelOptions{}); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"config.json":           `{"architectures": ["BertModel"], "model_type": "bert", "max_position_embeddings": 512, "junction": {"layers": {"1": "hidden_states.1"}}}`,
		"tokenizer_config.json": `{"model_max_length": 512}`,
		"modules.json":          `[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}, {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]`,
		"1_Pooling/config.json": `{"word_embedding_dimension": 4, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}`,
	}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := load(t, rt, dir, inference.ModelOptions{})
	info := m.Info()
	if info.Task != inference.TaskEmbedding || info.Pooling != inference.PoolingCLS || info.Normalize || info.MaxTokens != T ||
		info.Dimensions != H || len(info.Layers) != 1 || info.Layers[0] != 1 || len(info.Inputs) != 3 {
		t.Fatalf("info %+v", info)
	}
	text := "hello world how are you"
	ctx := context.Background()
	for _, layer := range []int{0, 1} {
		resp, err := m.Embed(ctx, []string{text, "math"}, inference.EmbedOptions{Layer: layer})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range []string{text, "math"} {
			cls := m.Tokenize(s).IDs[0] // [CLS] at position 0
			for k := 0; k < H; k++ {
				want := float64(words[int(cls)*H+k] + pos[k])
				if layer == 1 {
					want = float64(layer1[int(cls)*H+k])
				}
				near(t, "CLS vector", resp.Results[i].Embedding[k], want, 1e-6)
			}
		}
	}
	// The fixed length caps the budget: a long text is truncated to 16 tokens.
	long := "hello world how are you hello world how are you hello world how are you"
	resp, err := m.Embed(ctx, []string{long}, inference.EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Results[0]; !r.Truncated || r.Usage.Tokens != T {
		t.Errorf("fixed length: %+v", r.Usage)
	}
	if _, err := m.Embed(ctx, []string{text}, inference.EmbedOptions{Layer: 2}); !errors.Is(err, inference.ErrInvalidOptions) {
		t.Errorf("undeclared layer: %v", err)
	}
}
