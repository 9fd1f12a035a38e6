//go:build !wasip1

package sdk

import (
	"fmt"

	"github.com/junction-router/junction/hostapi/abi"
)

// Handle runs p on one encoded request record (hostapi/abi's format) the way
// a module's exported handler does, and returns the result the module would
// have returned. It runs a plugin's code natively, outside WebAssembly, from
// the same code as its guest; every host function answers unavailable (see
// HandleHost). A panic in the plugin becomes a failed result. The result may
// point into record: keep record until the result has been used.
//
// It is not built into guests (GOOS=wasip1), which have the exports instead
// (exports.go's handle: the same dispatch, over the instance's one view and
// result; kept apart so that the guests' bytes, and the digests recipes pin,
// do not change).
func Handle(p Plugin, record []byte) abi.Result { return HandleHost(p, record, nil) }

// HandleHost is Handle with host functions: the plugin's calls through the
// request (Request.Embed, Request.CacheLookup, …, Request.PIISpans) go to h
// (the router gives hostapi's, under the module's mode gate and limits). The
// package-level functions (sdk.Embed, …) have no host natively: a plugin that
// runs both ways calls the request's.
func HandleHost(p Plugin, record []byte, h Host) abi.Result {
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
		view.host = h
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
