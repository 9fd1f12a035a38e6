package onnxgraph_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/junction-router/junction/internal/inference/onnxgraph"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// run loads the file into a real ONNX Runtime session and runs it.
func run(t *testing.T, path string, inNames, outNames []string, inputs []ort.Value) []ort.Value {
	t.Helper()
	sess, err := ort.NewDynamicAdvancedSession(path, inNames, outNames, nil)
	if err != nil {
		t.Fatalf("ONNX Runtime rejected the graph: %v", err)
	}
	defer sess.Destroy()
	outputs := make([]ort.Value, len(outNames))
	if err := sess.Run(inputs, outputs); err != nil {
		t.Fatal(err)
	}
	return outputs
}

// TestEmbeddingGraphRunsInONNXRuntime builds the GloVe-style sentence encoder (Gather → weighted mean with a
// mask → L2 normalisation) and checks ONNX Runtime's output against the same arithmetic in Go.
func TestEmbeddingGraphRunsInONNXRuntime(t *testing.T) {
	orttest.Environment(t)
	const vocab, dim = 5, 3
	table := []float32{
		0, 0, 0, // 0: padding
		1, 0, 0,
		0, 2, 0,
		1, 1, 1,
		-1, 3, 0.5,
	}
	tokenWeight := []float32{0, 1, 0.5, 2, 1}

	g := onnxgraph.New("glove-mean")
	ids := g.Input("input_ids", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
	mask := g.Input("attention_mask", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
	vectors := g.Op("Gather", []string{g.Float32("embeddings", []int64{vocab, dim}, table), ids})
	weights := g.Op("Gather", []string{g.Float32("token_weights", []int64{vocab}, tokenWeight), ids})
	w := g.Op("Mul", []string{weights, g.MaskToFloat(mask)})
	pooled := g.L2Normalize(g.WeightedMeanPool(vectors, w))
	g.Node("Identity", []string{pooled}, []string{"sentence_embedding"})
	g.Output("sentence_embedding", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(dim))
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := g.WriteFile(path, onnxgraph.ModelOptions{Producer: "junction-test", Metadata: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}

	idData := []int64{1, 2, 3, 0, 4, 4, 0, 0} // second row: two tokens then padding
	maskData := []int64{1, 1, 1, 0, 1, 1, 0, 0}
	idT, _ := ort.NewTensor(ort.NewShape(2, 4), idData)
	maskT, _ := ort.NewTensor(ort.NewShape(2, 4), maskData)
	defer idT.Destroy()
	defer maskT.Destroy()
	out := run(t, path, []string{"input_ids", "attention_mask"}, []string{"sentence_embedding"}, []ort.Value{idT, maskT})
	got := out[0].(*ort.Tensor[float32])
	defer got.Destroy()
	if s := got.GetShape(); !s.Equals(ort.NewShape(2, dim)) {
		t.Fatalf("shape %v", s)
	}
	for row := 0; row < 2; row++ {
		var sum [dim]float64
		var wsum float64
		for j := 0; j < 4; j++ {
			id := idData[row*4+j]
			wt := float64(tokenWeight[id]) * float64(maskData[row*4+j])
			wsum += wt
			for k := 0; k < dim; k++ {
				sum[k] += wt * float64(table[int(id)*dim+k])
			}
		}
		var norm float64
		for k := range sum {
			sum[k] /= wsum
			norm += sum[k] * sum[k]
		}
		norm = math.Sqrt(norm)
		for k := 0; k < dim; k++ {
			want := sum[k] / norm
			if d := math.Abs(float64(got.GetData()[row*dim+k]) - want); d > 1e-5 {
				t.Errorf("row %d dim %d: ONNX Runtime %v, Go %v", row, k, got.GetData()[row*dim+k], want)
			}
		}
	}
}

// TestClassifierHeadsRunInONNXRuntime builds MatMul+Add → Softmax and → Sigmoid heads.
func TestClassifierHeadsRunInONNXRuntime(t *testing.T) {
	orttest.Environment(t)
	W := []float32{1, -1, 0.5, 2, 0, -0.5} // [3 features, 2 labels]
	b := []float32{0.1, -0.2}
	g := onnxgraph.New("head")
	x := g.Input("features", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(3))
	logits := g.Linear(x, g.Float32("W", []int64{3, 2}, W), g.Float32("b", []int64{2}, b))
	g.Node("Identity", []string{g.Softmax(logits)}, []string{"probabilities"})
	g.Node("Identity", []string{g.Sigmoid(logits)}, []string{"scores"})
	g.Output("probabilities", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(2))
	g.Output("scores", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(2))
	path := filepath.Join(t.TempDir(), "head.onnx")
	if err := g.WriteFile(path, onnxgraph.ModelOptions{}); err != nil {
		t.Fatal(err)
	}
	feat := []float32{1, 2, 3}
	in, _ := ort.NewTensor(ort.NewShape(1, 3), feat)
	defer in.Destroy()
	out := run(t, path, []string{"features"}, []string{"probabilities", "scores"}, []ort.Value{in})
	l0 := float64(1*1 + 2*0.5 + 3*0 + 0.1)
	l1 := float64(1*-1 + 2*2 + 3*-0.5 - 0.2)
	e0, e1 := math.Exp(l0), math.Exp(l1)
	wantP := []float64{e0 / (e0 + e1), e1 / (e0 + e1)}
	wantS := []float64{1 / (1 + math.Exp(-l0)), 1 / (1 + math.Exp(-l1))}
	for i, want := range [][]float64{wantP, wantS} {
		got := out[i].(*ort.Tensor[float32]).GetData()
		for k := range want {
			if math.Abs(float64(got[k])-want[k]) > 1e-6 {
				t.Errorf("output %d[%d] = %v, want %v", i, k, got[k], want[k])
			}
		}
		out[i].Destroy()
	}
}

func TestBuilderErrors(t *testing.T) {
	g := onnxgraph.New("bad")
	g.Float32("w", []int64{2, 2}, []float32{1, 2, 3})
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "need 4 values") {
		t.Fatalf("mismatched data: %v", err)
	}
	g = onnxgraph.New("bad")
	g.Op("Relu", []string{"nowhere"})
	if _, err := g.Marshal(onnxgraph.ModelOptions{}); err == nil || !strings.Contains(err.Error(), "not defined yet") {
		t.Fatalf("undefined input: %v", err)
	}
	g = onnxgraph.New("bad")
	g.Input("x", onnxgraph.Float)
	g.Input("x", onnxgraph.Float)
	if g.Err() == nil {
		t.Fatal("duplicate name accepted")
	}
	g = onnxgraph.New("empty")
	if _, err := g.Marshal(onnxgraph.ModelOptions{}); err == nil {
		t.Fatal("graph without outputs accepted")
	}
}
