package extproc

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// TestMutationFill: the headers put are kept in the mutation (the first
// sixteen) and beyond it, and filled into one message with their values
// not copied; each set header must read back as it was put, in order, and
// appending to one value must not change the next.
func TestMutationFill(t *testing.T) {
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
	var hm extprocv3.HeaderMutation
	p := m.fill(&hm)
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

// TestMutationEmpty: an empty mutation is no message; one that only
// removes is.
func TestMutationEmpty(t *testing.T) {
	var m mutation
	var hm extprocv3.HeaderMutation
	if p := m.fill(&hm); p != nil {
		t.Fatalf("empty mutation filled %v", p)
	}
	m.remove = append(m.remove, "te")
	if p := m.fill(&hm); p == nil || len(p.GetSetHeaders()) != 0 || len(p.GetRemoveHeaders()) != 1 {
		t.Fatalf("remove-only mutation filled %v", p)
	}
}

// TestCanonicalKey: canonicalKey's spelled-out names are what
// textproto.CanonicalMIMEHeaderKey makes of them.
func TestCanonicalKey(t *testing.T) {
	for _, k := range []string{"content-type", "content-length", "x-request-id", "accept", "accept-encoding", "authorization",
		"user-agent", "x-forwarded-proto", "x-forwarded-for", "x-envoy-expected-rq-timeout-ms", "x-envoy-internal",
		"x-other-header", "Mixed-Case", "bad key"} {
		if got, want := canonicalKey(k), textproto.CanonicalMIMEHeaderKey(k); got != want {
			t.Errorf("canonicalKey(%q) = %q, want %q", k, got, want)
		}
	}
}

// TestParseHeadersValues: repeated headers keep every value in order, and
// adding a value to one header's slice does not change another's.
func TestParseHeadersValues(t *testing.T) {
	hm := &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: ":path", RawValue: []byte("/v1/chat/completions")},
		{Key: "x-a", RawValue: []byte("1")},
		{Key: "x-b", RawValue: []byte("2")},
		{Key: "x-a", RawValue: []byte("3")},
		{Key: "x-c", Value: "4"},
	}}
	ri := parseHeaders(hm)
	if ri.path != "/v1/chat/completions" || len(ri.header) != 3 {
		t.Fatalf("parsed %q %v", ri.path, ri.header)
	}
	if got := ri.header["X-A"]; len(got) != 2 || got[0] != "1" || got[1] != "3" {
		t.Errorf("X-A = %q", got)
	}
	_ = append(ri.header["X-B"], "overwrite?")
	if got := ri.header["X-C"]; len(got) != 1 || got[0] != "4" {
		t.Errorf("X-C = %q after appending to X-B", got)
	}
}

// TestHopIndex: hopIndex knows requestHopHeaders by their canonical names,
// in order, then Accept-Encoding, and nothing else.
func TestHopIndex(t *testing.T) {
	for i, k := range requestHopHeaders {
		if got := hopIndex(http.CanonicalHeaderKey(k)); got != i {
			t.Errorf("hopIndex(%q) = %d, want %d", k, got, i)
		}
	}
	if got := hopIndex("Accept-Encoding"); got != len(requestHopHeaders) {
		t.Errorf("hopIndex(Accept-Encoding) = %d", got)
	}
	for _, k := range []string{"Content-Type", "X-Request-Id", "connection", "Tes"} {
		if got := hopIndex(k); got != -1 {
			t.Errorf("hopIndex(%q) = %d, want -1", k, got)
		}
	}
}
