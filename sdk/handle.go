//go:build !wasip1

package sdk

import (
	"fmt"

	"github.com/junction-router/junction/hostapi/abi"
)

// Handle runs p on one encoded request record (hostapi/abi's format) the way
// a module's exported handler does, and returns the result the module would
// have returned. It runs a plugin's code natively, outside WebAssembly: the
// router runs the built-in plugins that call no host function this way, from
// the same code as their guests (every host function answers unavailable
// here). A panic in the plugin becomes a failed result. The result may point
// into record: keep record until the result has been used.
//
// It is not built into guests (GOOS=wasip1), which have the exports instead
// (exports.go's handle: the same dispatch, over the instance's one view and
// result; kept apart so that the guests' bytes, and the digests recipes pin,
// do not change).
func Handle(p Plugin, record []byte) abi.Result {
	var view Request
	var res Result
	func() {
		defer func() {
			if r := recover(); r != nil {
				res.fail(fmt.Sprintf("the plugin panicked: %v", r))
			}
		}()
		if err := view.load(record); err != nil {
			res.fail("decoding the request: " + err.Error())
			return
		}
		var err error
		if view.phase == abi.PhaseResponse {
			rp, ok := p.(ResponsePlugin)
			if !ok {
				res.fail("the plugin has no response phase (it does not implement sdk.ResponsePlugin)")
				return
			}
			err = rp.OnResponse(&Response{Request: &view}, &res)
		} else {
			err = p.OnRequest(&view, &res)
		}
		if err != nil {
			res.fail(err.Error())
		}
	}()
	return res.r
}
