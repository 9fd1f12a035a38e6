package onnxgraph_test

import (
	"bytes"
	"math"
	"os"
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

// TestWriteFileIsMarshal checks that the file WriteFile streams (the weights
// encoded a chunk at a time from the graph's slices) is the bytes Marshal
// returns, for every initializer type and for data longer than a chunk, and
// that ONNX Runtime accepts it.
func TestWriteFileIsMarshal(t *testing.T) {
	orttest.Environment(t)
	const n = 10_001 // not a multiple of the writer's chunk
	f := make([]float32, n)
	q := make([]int8, n)
	i32 := make([]int32, n)
	i64 := make([]int64, n)
	for i := range n {
		f[i], q[i], i32[i], i64[i] = float32(i)*0.5-7, int8(i*7), int32(i*3-n), int64(i)<<40-int64(i)
	}
	g := onnxgraph.New("all-types")
	g.Doc("every initializer type")
	x := g.Input("x", onnxgraph.Int64, onnxgraph.Sym("batch"))
	fw := g.Float32("f", []int64{n}, f)
	qw := g.Int8("q", []int64{n}, q)
	iw := g.Int32("i32", []int64{n}, i32)
	lw := g.Int64("i64", []int64{n}, i64)
	sum := g.Op("Add", []string{g.Op("Gather", []string{fw, x}), g.Op("Cast", []string{g.Op("Gather", []string{qw, x})}, onnxgraph.Int("to", int64(onnxgraph.Float)))})
	sum = g.Op("Add", []string{sum, g.Op("Cast", []string{g.Op("Gather", []string{iw, x})}, onnxgraph.Int("to", int64(onnxgraph.Float)))})
	sum = g.Op("Add", []string{sum, g.Op("Cast", []string{g.Op("Gather", []string{lw, x})}, onnxgraph.Int("to", int64(onnxgraph.Float)))})
	g.Node("Identity", []string{sum}, []string{"y"})
	g.Output("y", onnxgraph.Float, onnxgraph.Sym("batch"))
	o := onnxgraph.ModelOptions{Producer: "test", Metadata: map[string]string{"b": "2", "a": "1"}}
	want, err := g.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sub", "model.onnx")
	if err := g.WriteFile(path, o); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("WriteFile wrote %d bytes that differ from Marshal's %d", len(got), len(want))
	}
	in, err := ort.NewTensor(ort.NewShape(2), []int64{0, n - 1})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Destroy()
	out := run(t, path, []string{"x"}, []string{"y"}, []ort.Value{in})
	defer out[0].Destroy()
	y := out[0].(*ort.Tensor[float32]).GetData()
	for k, i := range []int{0, n - 1} {
		if w := f[i] + float32(q[i]) + float32(i32[i]) + float32(i64[i]); y[k] != w {
			t.Errorf("y[%d] = %v, want %v", i, y[k], w)
		}
	}
}
