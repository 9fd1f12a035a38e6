package inference_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/onnxgraph"
	"github.com/junction-router/junction/internal/inference/synthetic"
	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// TestWordVectorExports loads graphs of the shape Junction's own exported models have (a WordLevel tokenizer,
// word vectors averaged over the mask, a linear head that already applies softmax, or the normalised sentence
// vector itself), with config.json's junction block saying what the graph computes.
func TestWordVectorExports(t *testing.T) {
	rt := openRuntime(t, inference.Options{})
	dir, sm := writeModel(t, synthetic.Spec{Task: synthetic.Embedding, Tokenizer: synthetic.WordLevel})
	const dim, labels = 3, 2
	vocab := len(sm.Vocab)
	table := make([]float32, vocab*dim)
	for i := range table {
		table[i] = float32(math.Sin(float64(i)))
	}
	W := []float32{1, -1, 0.5, 0.25, -2, 1}
	bias := []float32{0.1, -0.1}

	build := func(head bool) *onnxgraph.Graph {
		g := onnxgraph.New("word-vectors")
		ids := g.Input("input_ids", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
		mask := g.Input("attention_mask", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
		vecs := g.Op("Gather", []string{g.Float32("vectors", []int64{int64(vocab), dim}, table), ids})
		sent := g.L2Normalize(g.WeightedMeanPool(vecs, g.MaskToFloat(mask)))
		if !head {
			g.Node("Identity", []string{sent}, []string{"sentence_embedding"})
			g.Output("sentence_embedding", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(dim))
			return g
		}
		probs := g.Softmax(g.Linear(sent, g.Float32("W", []int64{dim, labels}, W), g.Float32("b", []int64{labels}, bias)))
		g.Node("Identity", []string{probs}, []string{"probabilities"})
		g.Output("probabilities", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(labels))
		return g
	}
	expected := func(text string, m *inference.Model) ([]float64, []float64) {
		enc := m.Tokenize(text)
		sent := make([]float64, dim)
		for _, id := range enc.IDs {
			for k := 0; k < dim; k++ {
				sent[k] += float64(table[int(id)*dim+k]) / float64(len(enc.IDs))
			}
		}
		var n float64
		for _, v := range sent {
			n += v * v
		}
		for k := range sent {
			sent[k] /= math.Sqrt(n)
		}
		logits := []float64{float64(bias[0]), float64(bias[1])}
		for k := 0; k < dim; k++ {
			for j := 0; j < labels; j++ {
				logits[j] += sent[k] * float64(W[k*labels+j])
			}
		}
		return sent, softmax(logits)
	}

	// The embedder: no architectures in config.json; the output name says what it is.
	if err := build(false).WriteFile(filepath.Join(dir, "model.onnx"), onnxgraph.ModelOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"junction": {"max_tokens": 256}}`), 0o644)
	emb := load(t, rt, dir, inference.ModelOptions{})
	if i := emb.Info(); i.Task != inference.TaskEmbedding || i.Dimensions != dim || i.Pooling != inference.PoolingNone || i.MaxTokens != 256 {
		t.Fatalf("embedder info %+v", i)
	}
	text := "the cat sat on the mat"
	er, err := emb.Embed(context.Background(), []string{text, "cat"}, inference.EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantVec, wantProbs := expected(text, emb)
	for k, v := range wantVec {
		near(t, "sentence vector", er.Results[0].Embedding[k], v, 1e-5)
	}

	// The classifier: the graph applies softmax itself (junction.activation none).
	cdir := filepath.Join(t.TempDir(), "classifier")
	os.MkdirAll(cdir, 0o755)
	tokJSON, _ := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	os.WriteFile(filepath.Join(cdir, "tokenizer.json"), tokJSON, 0o644)
	if err := build(true).WriteFile(filepath.Join(cdir, "model.onnx"), onnxgraph.ModelOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cdir, "config.json"), []byte(`{"id2label": {"0": "benign", "1": "jailbreak"},
		"junction": {"task": "sequence-classification", "activation": "none"}}`), 0o644)
	clf := load(t, rt, cdir, inference.ModelOptions{})
	if i := clf.Info(); i.Activation != "none" || i.Output != "probabilities" {
		t.Fatalf("classifier info %+v", i)
	}
	cr, err := clf.Classify(context.Background(), inference.Texts(text), inference.ClassifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, s := range cr.Results[0].Scores {
		near(t, s.Label, s.Score, wantProbs[k], 1e-5)
	}
}

// TestSentencePieceSpans tags with the SentencePiece tokenizer of the tokenizer tests (a real precompiled
// charsmap): its tokens carry the space before a word (▁world), and spans must hold the word alone.
func TestSentencePieceSpans(t *testing.T) {
	rt := openRuntime(t, inference.Options{})
	dir := t.TempDir()
	tokJSON, err := os.ReadFile("tokenizer/testdata/xlmr-unigram.json")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Parse(tokJSON)
	if err != nil {
		t.Fatal(err)
	}
	world, ok := tk.TokenID("▁world")
	if !ok {
		t.Fatal("fixture lacks ▁world")
	}
	vocab := tk.VocabSize()
	table := make([]float32, vocab*2)
	for id := 0; id < vocab; id++ {
		table[id*2] = 3 // O
	}
	table[int(world)*2], table[int(world)*2+1] = 0, 3 // B-LOC
	g := onnxgraph.New("sp-tagger")
	ids := g.Input("input_ids", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
	g.Input("attention_mask", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
	g.Node("Gather", []string{g.Float32("table", []int64{int64(vocab), 2}, table), ids}, []string{"logits"})
	g.Output("logits", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"), onnxgraph.Fixed(2))
	if err := g.WriteFile(filepath.Join(dir, "model.onnx"), onnxgraph.ModelOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures": ["XLMRobertaForTokenClassification"], "model_type": "xlm-roberta", "id2label": {"0": "O", "1": "B-LOC"}}`), 0o644)
	m := load(t, rt, dir, inference.ModelOptions{})
	if m.Info().Tokenizer != "Unigram" {
		t.Fatalf("tokenizer %s", m.Info().Tokenizer)
	}
	text := "Ｈｅｌｌｏ  world, this"
	resp, err := m.Classify(context.Background(), inference.Texts(text), inference.ClassifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spans := resp.Results[0].Spans
	if len(spans) != 1 || spans[0].Label != "LOC" || spans[0].Text != "world" || spans[0].Start != 7 || spans[0].End != 12 {
		t.Fatalf("spans %+v", spans)
	}
}
