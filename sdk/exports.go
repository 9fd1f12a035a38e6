package sdk

// Everything here is reached from the //go:wasmexport functions, which only a
// wasip1 build exports; staticcheck checks the host build, where nothing calls
// them.
//lint:file-ignore U1000 the wasm exports are the roots (see above)

import (
	"fmt"
	"unsafe"

	"github.com/junction-router/junction/hostapi/abi"
)

// in is the buffer junction_alloc hands the host for the next request
// record; out holds the last record returned to the host. Both live until the
// next call into the module, which is as long as the ABI promises.
var (
	in  []byte
	out []byte
)

func addr(b []byte) uint32 {
	if cap(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

func packed(b []byte) uint64 { return abi.Pack(addr(b), uint32(len(b))) }

//go:wasmexport junction_abi_version
func exportABIVersion() int32 { return abi.Version }

//go:wasmexport junction_alloc
func exportAlloc(size int32) uint32 {
	if size < 0 {
		return 0
	}
	need := max(int(size), 1)
	if cap(in) < need {
		in = make([]byte, need, need+need/4+64)
	}
	in = in[:size]
	return addr(in)
}

//go:wasmexport junction_descriptor
func exportDescriptor() uint64 {
	if reg == nil {
		out = append(out[:0], `{"abi_version":`...)
		out = append(out, fmt.Sprint(abi.Version)...)
		out = append(out, `,"error":"the module registered no plugin (call sdk.Register from an init function)"}`...)
		return packed(out)
	}
	out = reg.desc.AppendJSON(out[:0])
	return packed(out)
}

//go:wasmexport junction_on_request
func exportOnRequest(ptr, n uint32) uint64 { return handle(ptr, n, abi.PhaseRequest) }

//go:wasmexport junction_on_response
func exportOnResponse(ptr, n uint32) uint64 { return handle(ptr, n, abi.PhaseResponse) }

// The request view and the result are reused from call to call: a handler
// call allocates only what the plugin itself allocates.
var (
	curView   Request
	curResult Result
)

// handle decodes the request record the host wrote into in, runs the plugin
// and returns the result record. A panic in the plugin becomes a failed result
// rather than a trap, so the instance survives it.
func handle(ptr, n uint32, phase abi.Phase) uint64 {
	res := &curResult
	res.reset()
	func() {
		defer func() {
			if r := recover(); r != nil {
				res.fail(fmt.Sprintf("the plugin panicked: %v", r))
			}
		}()
		if ptr != addr(in) || int(n) > len(in) {
			res.fail("the host passed a buffer junction_alloc did not return")
			return
		}
		if err := curView.load(in[:n]); err != nil {
			res.fail("decoding the request: " + err.Error())
			return
		}
		if curView.phase != phase {
			res.fail("the request record is for another phase")
			return
		}
		p, err := configured()
		if err != nil {
			res.fail(err.Error())
			return
		}
		if phase == abi.PhaseResponse {
			rp, ok := p.(ResponsePlugin)
			if !ok {
				res.fail("the plugin has no response phase (it does not implement sdk.ResponsePlugin)")
				return
			}
			err = rp.OnResponse(&Response{Request: &curView}, res)
		} else {
			err = p.OnRequest(&curView, res)
		}
		if err != nil {
			res.fail(err.Error())
		}
	}()
	out = res.r.Append(out[:0])
	return packed(out)
}
