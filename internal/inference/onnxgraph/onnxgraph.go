// Package onnxgraph writes ONNX model files from Go: a small builder for graphs of standard ONNX operators
// (initializers, nodes, inputs and outputs with symbolic dimensions) and a protobuf encoder for the subset of
// onnx.proto those graphs need (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto, TypeProto, TensorShapeProto, OperatorSetIdProto, StringStringEntryProto).
//
// It exists so that Junction can export the models it trains itself (GloVe sentence embeddings, linear
// classification heads) and the tiny synthetic test models of the runtime, without Python or protoc. The field
// numbers follow onnx.proto (IR version 8 by default, default opset 17, which ONNX Runtime 1.24 runs).
//
// It must not execute or optimise graphs, and it does not check operator semantics: ONNX Runtime does that when
// it loads the file, and the tests of this package load every graph shape it is used for into a real session.
//
// A typical embedding graph:
//
//	g := onnxgraph.New("glove-mean")
//	ids := g.Input("input_ids", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
//	mask := g.Input("attention_mask", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
//	table := g.Float32("embeddings", []int64{vocab, 100}, vectors)
//	tok := g.Op("Gather", []string{table, ids})                  // [B,T,100]
//	...
//	g.Output(out, onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(100))
//	err := g.WriteFile("model.onnx", onnxgraph.ModelOptions{Producer: "junction"})
package onnxgraph

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// DataType is an ONNX tensor element type (TensorProto.DataType).
type DataType int32

// The element types the builder writes. Values are those of onnx.proto.
const (
	Float  DataType = 1
	Uint8  DataType = 2
	Int8   DataType = 3
	Int32  DataType = 6
	Int64  DataType = 7
	Bool   DataType = 9
	Double DataType = 11
)

func (d DataType) String() string {
	switch d {
	case Float:
		return "float"
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Bool:
		return "bool"
	case Double:
		return "double"
	}
	return "DataType(" + strconv.Itoa(int(d)) + ")"
}

// Dim is one dimension of a graph input or output: a fixed size or a symbolic name such as "batch".
type Dim struct {
	Value int64  // used when Param is empty
	Param string // symbolic name; ONNX Runtime accepts any size there
}

// Fixed is a dimension of known size.
func Fixed(n int64) Dim { return Dim{Value: n} }

// Sym is a symbolic dimension (dynamic size), e.g. Sym("batch").
func Sym(name string) Dim { return Dim{Param: name} }

// Attr is one node attribute. Build it with Int, Float, Ints, Floats, String or TensorAttr.
type Attr struct {
	name   string
	kind   int // AttributeProto.AttributeType
	i      int64
	f      float32
	s      string
	ints   []int64
	floats []float32
	t      *tensor
}

// Attribute constructors.

// Int is an integer attribute (e.g. axis).
func Int(name string, v int64) Attr { return Attr{name: name, kind: 2, i: v} }

// FloatAttr is a float attribute (e.g. epsilon).
func FloatAttr(name string, v float32) Attr { return Attr{name: name, kind: 1, f: v} }

// String is a string attribute (e.g. mode).
func String(name, v string) Attr { return Attr{name: name, kind: 3, s: v} }

// Ints is a list-of-integers attribute (e.g. axes, perm).
func Ints(name string, v ...int64) Attr { return Attr{name: name, kind: 7, ints: v} }

// Floats is a list-of-floats attribute.
func Floats(name string, v ...float32) Attr { return Attr{name: name, kind: 6, floats: v} }

// TensorAttr is a tensor attribute (the `value` of a Constant node). dims may be empty for a scalar.
func TensorAttr(name string, dt DataType, dims []int64, float32s []float32, int64s []int64) Attr {
	return Attr{name: name, kind: 4, t: &tensor{dt: dt, dims: dims, f32: float32s, i64: int64s}}
}

type tensor struct {
	name string
	dt   DataType
	dims []int64
	f32  []float32
	i64  []int64
	i32  []int32
	i8   []int8
}

type node struct {
	op      string
	domain  string
	name    string
	inputs  []string
	outputs []string
	attrs   []Attr
}

type valueInfo struct {
	name string
	dt   DataType
	dims []Dim
}

// Graph is an ONNX graph under construction. It is not safe for concurrent use. Names of values must be unique;
// Op and the initializer helpers generate unique names when asked with an empty name.
type Graph struct {
	name    string
	doc     string
	nodes   []node
	inits   []tensor
	inputs  []valueInfo
	outputs []valueInfo
	used    map[string]bool
	counter int
	err     error
}

// New starts an empty graph with the given name.
func New(name string) *Graph { return &Graph{name: name, used: map[string]bool{}} }

// Doc sets the graph's documentation string.
func (g *Graph) Doc(s string) { g.doc = s }

// Err returns the first error recorded while building (a duplicate or empty name, data that does not match
// its dimensions). Marshal and WriteFile return it too.
func (g *Graph) Err() error { return g.err }

func (g *Graph) fail(format string, args ...any) {
	if g.err == nil {
		g.err = fmt.Errorf("onnxgraph: "+format, args...)
	}
}

func (g *Graph) claim(name, what string) string {
	if name == "" {
		g.fail("%s with an empty name", what)
		return name
	}
	if g.used[name] {
		g.fail("%s %q: the name is already used in graph %q", what, name, g.name)
	}
	g.used[name] = true
	return name
}

// Fresh returns a value name that is not used yet, built from prefix.
func (g *Graph) Fresh(prefix string) string {
	for {
		g.counter++
		n := prefix + "_" + strconv.Itoa(g.counter)
		if !g.used[n] {
			return n
		}
	}
}

// Input declares a graph input and returns its name.
func (g *Graph) Input(name string, dt DataType, dims ...Dim) string {
	g.inputs = append(g.inputs, valueInfo{name: g.claim(name, "input"), dt: dt, dims: dims})
	return name
}

// Output declares an existing value (a node output) as a graph output.
func (g *Graph) Output(name string, dt DataType, dims ...Dim) {
	if !g.used[name] {
		g.fail("output %q is not produced by any node, input or initializer", name)
	}
	g.outputs = append(g.outputs, valueInfo{name: name, dt: dt, dims: dims})
}

func product(dims []int64) (int64, bool) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// initializer names an initializer (generated from prefix when empty), checks that dims hold exactly n values
// and claims the name.
func (g *Graph) initializer(name, prefix string, dims []int64, n int) string {
	if name == "" {
		name = g.Fresh(prefix)
	}
	if want, ok := product(dims); !ok || want != int64(n) {
		g.fail("initializer %q: dims %v need %d values, got %d", name, dims, want, n)
	}
	return g.claim(name, "initializer")
}

// Float32 adds a float32 initializer (a constant weight) and returns its name; an empty name is generated.
// data is row-major and must hold exactly the product of dims elements (one element for a scalar, dims empty).
// The graph keeps data, not a copy (so do the other initializer helpers): it must not change until the graph
// is written.
func (g *Graph) Float32(name string, dims []int64, data []float32) string {
	name = g.initializer(name, "w", dims, len(data))
	g.inits = append(g.inits, tensor{name: name, dt: Float, dims: dims, f32: data})
	return name
}

// Int64 adds an int64 initializer (shapes, axes, indices) and returns its name; an empty name is generated.
func (g *Graph) Int64(name string, dims []int64, data []int64) string {
	name = g.initializer(name, "c", dims, len(data))
	g.inits = append(g.inits, tensor{name: name, dt: Int64, dims: dims, i64: data})
	return name
}

// Int32 adds an int32 initializer (e.g. Gather indices half the size of int64 ones) and returns its name; an
// empty name is generated.
func (g *Graph) Int32(name string, dims []int64, data []int32) string {
	name = g.initializer(name, "c", dims, len(data))
	g.inits = append(g.inits, tensor{name: name, dt: Int32, dims: dims, i32: data})
	return name
}

// Int8 adds an int8 initializer (quantised weights, a quarter of float32's size) and returns its name; an
// empty name is generated.
func (g *Graph) Int8(name string, dims []int64, data []int8) string {
	name = g.initializer(name, "q", dims, len(data))
	g.inits = append(g.inits, tensor{name: name, dt: Int8, dims: dims, i8: data})
	return name
}

// Node adds a node of a standard-domain operator with explicit output names and returns them.
// An empty input name marks an omitted optional input.
func (g *Graph) Node(op string, inputs, outputs []string, attrs ...Attr) []string {
	for _, in := range inputs {
		if in != "" && !g.used[in] {
			g.fail("node %s: input %q is not defined yet (nodes must be added in topological order)", op, in)
		}
	}
	for _, out := range outputs {
		g.claim(out, op+" output")
	}
	g.nodes = append(g.nodes, node{op: op, name: g.Fresh(op), inputs: inputs, outputs: outputs, attrs: attrs})
	return outputs
}

// Op adds a node with one output whose name is generated, and returns that name.
func (g *Graph) Op(op string, inputs []string, attrs ...Attr) string {
	out := g.Fresh(op)
	g.Node(op, inputs, []string{out}, attrs...)
	return out
}

// ModelOptions are the model-level fields written around the graph.
type ModelOptions struct {
	IRVersion       int64             // default 8
	Opset           int64             // default opset of the standard domain; default 17
	Producer        string            // producer_name, e.g. "junction"
	ProducerVersion string            // producer_version
	Doc             string            // doc_string
	Metadata        map[string]string // metadata_props, written in key order
}

// Marshal encodes the graph as an ONNX ModelProto.
func (g *Graph) Marshal(o ModelOptions) ([]byte, error) {
	m, err := g.model(o)
	if err != nil {
		return nil, err
	}
	return m.appendTo(make([]byte, 0, m.n)), nil
}

// model is the encoded ModelProto, its tensors' data left in the graph's slices.
func (g *Graph) model(o ModelOptions) (*pieces, error) {
	if g.err != nil {
		return nil, g.err
	}
	if len(g.outputs) == 0 {
		return nil, errors.New("onnxgraph: graph " + strconv.Quote(g.name) + " has no outputs")
	}
	if o.IRVersion == 0 {
		o.IRVersion = 8
	}
	if o.Opset == 0 {
		o.Opset = 17
	}
	var b []byte
	b = appendVarint(b, 1, uint64(o.IRVersion))
	if o.Producer != "" {
		b = appendString(b, 2, o.Producer)
	}
	if o.ProducerVersion != "" {
		b = appendString(b, 3, o.ProducerVersion)
	}
	if o.Doc != "" {
		b = appendString(b, 6, o.Doc)
	}
	m := &pieces{}
	graph := g.encodeGraph()
	m.bytes(protowire.AppendVarint(protowire.AppendTag(b, 7, protowire.BytesType), uint64(graph.n)))
	m.append(graph)
	var opset []byte
	opset = appendString(opset, 1, "")
	opset = appendVarint(opset, 2, uint64(o.Opset))
	b = appendMessage(nil, 8, opset)
	keys := make([]string, 0, len(o.Metadata))
	for k := range o.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var e []byte
		e = appendString(e, 1, k)
		e = appendString(e, 2, o.Metadata[k])
		b = appendMessage(b, 14, e)
	}
	m.bytes(b)
	return m, nil
}

// WriteFile marshals the model and writes it to path (parent directories are created), replacing the file
// atomically so a reader never sees half a model. The weights are written from the graph's slices through a
// small buffer: the file is never held in memory whole (a default model's is 9 MB, and the cold start writes
// seven of them).
func (g *Graph) WriteFile(path string, o ModelOptions) (err error) {
	m, err := g.model(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	if err := m.writeTo(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// pieces is an encoded message held as parts, n bytes in all: encoded bytes, and tensors whose raw data is
// encoded only as it is written (so a model's weights are not copied into one buffer first).
type pieces struct {
	parts []piece
	n     int
}

type piece struct {
	b []byte  // encoded bytes, or
	t *tensor // a tensor's raw_data contents (little-endian)
}

func (p *pieces) bytes(b []byte) {
	p.parts = append(p.parts, piece{b: b})
	p.n += len(b)
}

func (p *pieces) data(t *tensor) {
	p.parts = append(p.parts, piece{t: t})
	p.n += t.dataLen()
}

func (p *pieces) append(q *pieces) {
	p.parts = append(p.parts, q.parts...)
	p.n += q.n
}

func (p *pieces) appendTo(b []byte) []byte {
	for _, x := range p.parts {
		if x.t != nil {
			b = x.t.appendData(b, 0, x.t.len())
		} else {
			b = append(b, x.b...)
		}
	}
	return b
}

func (p *pieces) writeTo(w *bufio.Writer) error {
	const chunk = 4096 // elements encoded at a time
	var scratch []byte
	for _, x := range p.parts {
		if x.t == nil {
			if _, err := w.Write(x.b); err != nil {
				return err
			}
			continue
		}
		for i, n := 0, x.t.len(); i < n; i += chunk {
			scratch = x.t.appendData(scratch[:0], i, min(i+chunk, n))
			if _, err := w.Write(scratch); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *Graph) encodeGraph() *pieces {
	p := &pieces{}
	var b []byte
	for _, n := range g.nodes {
		b = appendMessage(b, 1, encodeNode(n))
	}
	b = appendString(b, 2, g.name)
	for i := range g.inits {
		t := &g.inits[i]
		head := encodeTensorHead(*t)
		n := t.dataLen()
		head = protowire.AppendVarint(protowire.AppendTag(head, 9, protowire.BytesType), uint64(n))
		b = protowire.AppendVarint(protowire.AppendTag(b, 5, protowire.BytesType), uint64(len(head)+n))
		p.bytes(append(b, head...))
		p.data(t)
		b = nil
	}
	if g.doc != "" {
		b = appendString(b, 10, g.doc)
	}
	for _, v := range g.inputs {
		b = appendMessage(b, 11, encodeValueInfo(v))
	}
	for _, v := range g.outputs {
		b = appendMessage(b, 12, encodeValueInfo(v))
	}
	p.bytes(b)
	return p
}

func encodeNode(n node) []byte {
	var b []byte
	for _, in := range n.inputs {
		b = appendString(b, 1, in)
	}
	for _, out := range n.outputs {
		b = appendString(b, 2, out)
	}
	b = appendString(b, 3, n.name)
	b = appendString(b, 4, n.op)
	for _, a := range n.attrs {
		b = appendMessage(b, 5, encodeAttr(a))
	}
	if n.domain != "" {
		b = appendString(b, 7, n.domain)
	}
	return b
}

func encodeAttr(a Attr) []byte {
	var b []byte
	b = appendString(b, 1, a.name)
	switch a.kind {
	case 1:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.f))
	case 2:
		b = appendVarint(b, 3, uint64(a.i))
	case 3:
		b = appendString(b, 4, a.s)
	case 4:
		b = appendMessage(b, 5, encodeTensor(*a.t))
	case 6:
		for _, f := range a.floats { // repeated float floats = 7 (unpacked in proto2)
			b = protowire.AppendTag(b, 7, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, math.Float32bits(f))
		}
	case 7:
		for _, v := range a.ints { // repeated int64 ints = 8 (unpacked in proto2)
			b = appendVarint(b, 8, uint64(v))
		}
	}
	b = appendVarint(b, 20, uint64(a.kind))
	return b
}

func encodeTensor(t tensor) []byte {
	b := encodeTensorHead(t)
	b = protowire.AppendVarint(protowire.AppendTag(b, 9, protowire.BytesType), uint64(t.dataLen()))
	return t.appendData(b, 0, t.len())
}

// encodeTensorHead is a TensorProto's fields before raw_data: dims, data_type, name.
func encodeTensorHead(t tensor) []byte {
	var b []byte
	if len(t.dims) > 0 {
		var packed []byte
		for _, d := range t.dims {
			packed = protowire.AppendVarint(packed, uint64(d))
		}
		b = appendBytes(b, 1, packed)
	}
	b = appendVarint(b, 2, uint64(t.dt))
	if t.name != "" {
		b = appendString(b, 8, t.name)
	}
	return b
}

// len is the number of elements of t's data.
func (t *tensor) len() int {
	switch {
	case t.f32 != nil:
		return len(t.f32)
	case t.i64 != nil:
		return len(t.i64)
	case t.i32 != nil:
		return len(t.i32)
	default:
		return len(t.i8)
	}
}

// dataLen is the length of t's raw_data (field 9): little-endian fixed width, the compact form every exporter
// uses for weights.
func (t *tensor) dataLen() int {
	switch {
	case t.f32 != nil, t.i32 != nil:
		return 4 * t.len()
	case t.i64 != nil:
		return 8 * t.len()
	default:
		return t.len()
	}
}

// appendData appends the raw_data bytes of t's elements [from, to).
func (t *tensor) appendData(b []byte, from, to int) []byte {
	switch {
	case t.f32 != nil:
		for _, v := range t.f32[from:to] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	case t.i64 != nil:
		for _, v := range t.i64[from:to] {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	case t.i32 != nil:
		for _, v := range t.i32[from:to] {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
	default:
		for _, v := range t.i8[from:to] {
			b = append(b, byte(v))
		}
	}
	return b
}

func encodeValueInfo(v valueInfo) []byte {
	var shape []byte
	for _, d := range v.dims {
		var dim []byte
		if d.Param != "" {
			dim = appendString(dim, 2, d.Param)
		} else {
			dim = appendVarint(dim, 1, uint64(d.Value))
		}
		shape = appendMessage(shape, 1, dim)
	}
	var tt []byte
	tt = appendVarint(tt, 1, uint64(v.dt))
	tt = appendMessage(tt, 2, shape)
	var typ []byte
	typ = appendMessage(typ, 1, tt)
	var b []byte
	b = appendString(b, 1, v.name)
	b = appendMessage(b, 2, typ)
	return b
}

func appendVarint(b []byte, field protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, field protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendMessage(b []byte, field protowire.Number, msg []byte) []byte {
	return appendBytes(b, field, msg)
}
