package onnxgraph

// Building blocks shared by the exported models and the synthetic test models. Each adds standard ONNX nodes
// (opset 13 or later semantics: axes of ReduceSum, Unsqueeze and Squeeze are inputs) and returns the name of
// its result.

// Linear returns x·W + b for x [..., in], W [in, out] and b [out] (b may be "" for no bias).
func (g *Graph) Linear(x, w, b string) string {
	y := g.Op("MatMul", []string{x, w})
	if b == "" {
		return y
	}
	return g.Op("Add", []string{y, b})
}

// MaskToFloat turns an integer attention mask [B,T] (1 = token, 0 = padding) into float32 weights.
func (g *Graph) MaskToFloat(mask string) string {
	return g.Op("Cast", []string{mask}, Int("to", int64(Float)))
}

// WeightedMeanPool averages hidden states h [B,T,H] over T with float weights w [B,T] (an attention mask
// cast to float, or per-token weights times the mask): Σ w·h / max(Σ w, 1e-9). Padding must carry weight 0.
// The result is [B,H]. An all-zero row yields a zero vector, not NaN.
func (g *Graph) WeightedMeanPool(h, w string) string {
	axis2 := g.Int64("", []int64{1}, []int64{2})
	axis1 := g.Int64("", []int64{1}, []int64{1})
	w3 := g.Op("Unsqueeze", []string{w, axis2})                                                 // [B,T,1]
	num := g.Op("ReduceSum", []string{g.Op("Mul", []string{h, w3}), axis1}, Int("keepdims", 0)) // [B,H]
	den := g.Op("ReduceSum", []string{w3, axis1}, Int("keepdims", 0))                           // [B,1]
	den = g.Op("Max", []string{den, g.Float32("", nil, []float32{1e-9})})
	return g.Op("Div", []string{num, den})
}

// L2Normalize divides x [..., H] by its Euclidean norm along the last axis (norms below 1e-12 count as 1e-12).
func (g *Graph) L2Normalize(x string) string {
	last := g.Int64("", []int64{1}, []int64{-1})
	sum := g.Op("ReduceSum", []string{g.Op("Mul", []string{x, x}), last}, Int("keepdims", 1))
	norm := g.Op("Sqrt", []string{g.Op("Max", []string{sum, g.Float32("", nil, []float32{1e-24})})})
	return g.Op("Div", []string{x, norm})
}

// Softmax applies softmax along the last axis.
func (g *Graph) Softmax(x string) string { return g.Op("Softmax", []string{x}, Int("axis", -1)) }

// Sigmoid applies the logistic function element-wise.
func (g *Graph) Sigmoid(x string) string { return g.Op("Sigmoid", []string{x}) }
