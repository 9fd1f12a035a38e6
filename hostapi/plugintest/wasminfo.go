package plugintest

import (
	"errors"
	"fmt"
)

// WasmInfo is what `junction plugin inspect` reads from a module's binary without
// running it: its imports ("module.name") and exports.
type WasmInfo struct {
	Imports, Exports []string
}

var errWasm = errors.New("not a WebAssembly module")

// ReadWasmInfo reads the import and export sections of a wasm binary.
func ReadWasmInfo(b []byte) (WasmInfo, error) {
	var info WasmInfo
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return info, errWasm
	}
	if b[4] != 1 || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return info, fmt.Errorf("unsupported WebAssembly binary version %v", b[4:8])
	}
	r := &wasmReader{b: b[8:]}
	for len(r.b) > 0 && r.err == nil {
		id := r.byte()
		size := r.u32()
		body := r.take(int(size))
		if r.err != nil {
			break
		}
		s := &wasmReader{b: body}
		switch id {
		case 2: // imports
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				mod, name := s.name(), s.name()
				kind := s.byte()
				switch kind {
				case 0:
					s.u32()
				case 1:
					s.byte()
					s.limits()
				case 2:
					s.limits()
				case 3:
					s.byte()
					s.byte()
				default:
					s.err = fmt.Errorf("import %s.%s has unknown kind %d", mod, name, kind)
				}
				info.Imports = append(info.Imports, mod+"."+name+kindSuffix(kind))
			}
		case 7: // exports
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				name := s.name()
				kind := s.byte()
				s.u32()
				info.Exports = append(info.Exports, name+kindSuffix(kind))
			}
		}
		if s.err != nil {
			return info, fmt.Errorf("section %d: %w", id, s.err)
		}
	}
	return info, r.err
}

func kindSuffix(kind byte) string {
	switch kind {
	case 1:
		return " (table)"
	case 2:
		return " (memory)"
	case 3:
		return " (global)"
	}
	return ""
}

type wasmReader struct {
	b   []byte
	err error
}

func (r *wasmReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errors.New("truncated")
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *wasmReader) byte() byte {
	v := r.take(1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (r *wasmReader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = errors.New("bad LEB128 integer")
	return 0
}

func (r *wasmReader) name() string { return string(r.take(int(r.u32()))) }

func (r *wasmReader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}
