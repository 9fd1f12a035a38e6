// Package wasmgen writes small WebAssembly modules byte by byte, for tests
// that need modules no compiler would produce: ones that trap, loop, lie in
// their descriptor, return malformed records or import what the host does
// not give. It covers only the handful of sections and instructions those
// modules use.
package wasmgen

// Value types.
const (
	I32 byte = 0x7f
	I64 byte = 0x7e
)

// Instructions used by the tests' function bodies.
const (
	OpUnreachable byte = 0x00
	OpLoop        byte = 0x03
	OpBr          byte = 0x0c
	OpEnd         byte = 0x0b
	OpDrop        byte = 0x1a
	OpCall        byte = 0x10
	OpI32Const    byte = 0x41
	OpI64Const    byte = 0x42
	BlockEmpty    byte = 0x40
)

// Func is a function: its signature and its body's instructions (without
// the final end).
type Func struct {
	Params, Results []byte
	Body            []byte
	Export          string
}

// Import is a function import.
type Import struct {
	Module, Name    string
	Params, Results []byte
}

// Data is bytes placed in memory at Offset.
type Data struct {
	Offset uint32
	Bytes  []byte
}

// Module is a module with one exported memory ("memory") of MemoryPages.
type Module struct {
	Imports     []Import
	Funcs       []Func
	MemoryPages uint32
	Data        []Data
}

// Bytes encodes m.
func (m *Module) Bytes() []byte {
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	var types [][]byte
	typeIndex := func(params, results []byte) uint32 {
		t := []byte{0x60}
		t = appendU32(t, uint32(len(params)))
		t = append(t, params...)
		t = appendU32(t, uint32(len(results)))
		t = append(t, results...)
		for i, x := range types {
			if string(x) == string(t) {
				return uint32(i)
			}
		}
		types = append(types, t)
		return uint32(len(types) - 1)
	}
	var imports, funcs, exports, code, data []byte
	imports = appendU32(imports, uint32(len(m.Imports)))
	for _, im := range m.Imports {
		imports = appendName(imports, im.Module)
		imports = appendName(imports, im.Name)
		imports = append(imports, 0x00)
		imports = appendU32(imports, typeIndex(im.Params, im.Results))
	}
	funcs = appendU32(funcs, uint32(len(m.Funcs)))
	nExports := 1
	for _, f := range m.Funcs {
		funcs = appendU32(funcs, typeIndex(f.Params, f.Results))
		if f.Export != "" {
			nExports++
		}
	}
	exports = appendU32(exports, uint32(nExports))
	exports = appendName(exports, "memory")
	exports = append(exports, 0x02, 0x00)
	for i, f := range m.Funcs {
		if f.Export != "" {
			exports = appendName(exports, f.Export)
			exports = append(exports, 0x00)
			exports = appendU32(exports, uint32(len(m.Imports)+i))
		}
	}
	code = appendU32(code, uint32(len(m.Funcs)))
	for _, f := range m.Funcs {
		body := append([]byte{0x00}, f.Body...) // no locals
		body = append(body, OpEnd)
		code = appendU32(code, uint32(len(body)))
		code = append(code, body...)
	}
	data = appendU32(data, uint32(len(m.Data)))
	for _, d := range m.Data {
		data = append(data, 0x00, OpI32Const)
		data = AppendI32(data, int32(d.Offset))
		data = append(data, OpEnd)
		data = appendU32(data, uint32(len(d.Bytes)))
		data = append(data, d.Bytes...)
	}
	var typeSec []byte
	typeSec = appendU32(typeSec, uint32(len(types)))
	for _, t := range types {
		typeSec = append(typeSec, t...)
	}
	memory := appendU32([]byte{0x01, 0x00}, max(m.MemoryPages, 1))
	out = section(out, 1, typeSec)
	if len(m.Imports) > 0 {
		out = section(out, 2, imports)
	}
	out = section(out, 3, funcs)
	out = section(out, 5, memory)
	out = section(out, 7, exports)
	out = section(out, 10, code)
	if len(m.Data) > 0 {
		out = section(out, 11, data)
	}
	return out
}

func section(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

// AppendI32 appends v as a signed LEB128 (an i32.const immediate).
func AppendI32(b []byte, v int32) []byte { return AppendI64(b, int64(v)) }

// AppendI64 appends v as a signed LEB128 (an i64.const immediate).
func AppendI64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0)
		if !done {
			c |= 0x80
		}
		b = append(b, c)
		if done {
			return b
		}
	}
}

// ConstI32 is a body returning v.
func ConstI32(v int32) []byte { return AppendI32([]byte{OpI32Const}, v) }

// ConstI64 is a body returning v.
func ConstI64(v int64) []byte { return AppendI64([]byte{OpI64Const}, v) }

// Loop is a body that never ends.
func Loop() []byte { return []byte{OpLoop, BlockEmpty, OpBr, 0x00, OpEnd, OpUnreachable} }
