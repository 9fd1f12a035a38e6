package extproc

import (
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// TestMutationBlocks: options and values are allocated in shared blocks;
// each set header must still read back as it was put, across block
// boundaries and a value longer than a value block, and appending to one
// value must not change the next.
func TestMutationBlocks(t *testing.T) {
	var m mutation
	type hv struct {
		k, v string
		app  bool
	}
	var want []hv
	for i := range 40 {
		v := strings.Repeat(strconv.Itoa(i), i%7)
		if i == 13 {
			v = strings.Repeat("x", 300)
		}
		h := hv{"h-" + strconv.Itoa(i), v, i%3 == 0}
		want = append(want, h)
		m.put(h.k, h.v, h.app)
	}
	p := m.proto()
	if len(p.GetSetHeaders()) != len(want) {
		t.Fatalf("%d headers set, want %d", len(p.GetSetHeaders()), len(want))
	}
	_ = append(p.GetSetHeaders()[0].GetHeader().GetRawValue(), "overwrite?"...)
	for i, o := range p.GetSetHeaders() {
		action := corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
		if want[i].app {
			action = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
		}
		if o.GetHeader().GetKey() != want[i].k || string(o.GetHeader().GetRawValue()) != want[i].v || o.GetAppendAction() != action {
			t.Errorf("header %d: %s=%q (%v), want %s=%q (%v)", i, o.GetHeader().GetKey(), o.GetHeader().GetRawValue(), o.GetAppendAction(),
				want[i].k, want[i].v, action)
		}
	}
}
