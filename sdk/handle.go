//go:build !wasip1

package sdk

import (
	"fmt"
	"sync"

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
	return dispatch(p, &view, h, func() error { return view.load(record) })
}

// HandleRequest is HandleHost on the request's Go values instead of its
// encoded record, for the router's native plugins (internal/plugin/native):
// the plugin reads the same view it would read from req's record (the lists
// copied into the view, the bodies into one buffer of the call's own, as the
// record would hold them), so it behaves byte for byte as through
// HandleHost, without the record's encoding and decoding. The result points
// only into that buffer and into req's strings: it stays valid after req's
// slices are reused. h may be nil (every host function answers
// unavailable).
func HandleRequest(p Plugin, req *abi.Request, h Host) abi.Result {
	view := views.Get().(*Request)
	// The lists' storage: an empty list reads as nil in the view, so fill
	// drops it, and a call with no headers (say) must not cost the next
	// call its storage.
	hs, ms, ss := view.headers, view.messages, view.signals
	res := dispatch(p, view, h, func() error { view.fill(req); return nil })
	*view = Request{headers: clearKeep(larger(view.headers, hs)), messages: clearKeep(larger(view.messages, ms)),
		signals: clearKeep(larger(view.signals, ss))}
	views.Put(view)
	return res
}

// larger is whichever of a and b has more room.
func larger[T any](a, b []T) []T {
	if cap(b) > cap(a) {
		return b
	}
	return a
}

// views are the request views of HandleRequest's calls; a view is only
// used during its handler call (Request's contract), so it is reused.
var views = sync.Pool{New: func() any { return new(Request) }}

// fill sets r to the view load would give of req's record.
func (r *Request) fill(req *abi.Request) {
	var bodies []byte
	if n := len(req.Body) + len(req.ResponseBody); n > 0 {
		bodies = make([]byte, 0, n)
		bodies = append(append(bodies, req.Body...), req.ResponseBody...)
	}
	*r = Request{phase: req.Phase, mode: req.Mode, decision: req.Decision, model: req.Model, status: req.Status,
		headers: listOrNil(r.headers, req.Headers), messages: listOrNil(r.messages, req.Messages),
		signals: listOrNil(r.signals, req.Signals), hdone: true, mdone: true, sdone: true}
	// A record's empty bytes read as nil, as load's views of them do.
	if len(req.Body) > 0 {
		r.body = bodies[:len(req.Body):len(req.Body)]
	}
	if len(req.ResponseBody) > 0 {
		r.respBody = bodies[len(req.Body):]
	}
}

// listOrNil copies src into dst's storage: nil when src is empty, as the
// decoders return for an empty list.
func listOrNil[T any](dst, src []T) []T {
	if len(src) == 0 {
		return nil
	}
	return append(dst[:0], src...)
}

// clearKeep empties s, dropping what it points to, and keeps its storage.
func clearKeep[T any](s []T) []T {
	clear(s[:cap(s)])
	return s[:0]
}

// dispatch runs p's handler for the view that load prepares, with h's host
// functions.
func dispatch(p Plugin, view *Request, h Host, load func() error) abi.Result {
	var res Result
	func() {
		defer func() {
			if r := recover(); r != nil {
				res.fail(fmt.Sprintf("the plugin panicked: %v", r))
			}
		}()
		if err := load(); err != nil {
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
			err = rp.OnResponse(&Response{Request: view}, &res)
		} else {
			err = p.OnRequest(view, &res)
		}
		if err != nil {
			res.fail(err.Error())
		}
	}()
	return res.r
}
