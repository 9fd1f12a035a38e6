package extproc

import (
	"math/rand/v2"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"
)

// TestMutationFill: the headers put are kept in the mutation (the first
// sixteen) and beyond it, and filled into one message; each set header
// must read back as it was put, in order, as Envoy reads the message (fill)
// and in the messages built for names encode refuses (fillMessages, whose
// values are not copied: appending to one value must not change the next).
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
	var hm, built extprocv3.HeaderMutation
	direct := m.fillMessages(&built)
	_ = append(direct.GetSetHeaders()[0].GetHeader().GetRawValue(), "overwrite?"...)
	for name, p := range map[string]*extprocv3.HeaderMutation{"fill": asSent(t, m.fill(&hm)), "fillMessages": direct} {
		if len(p.GetSetHeaders()) != len(want) {
			t.Fatalf("%s: %d headers set, want %d", name, len(p.GetSetHeaders()), len(want))
		}
		for i, o := range p.GetSetHeaders() {
			action := corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
			if want[i].app {
				action = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
			}
			if o.GetHeader().GetKey() != want[i].k || string(o.GetHeader().GetRawValue()) != want[i].v || o.GetAppendAction() != action {
				t.Errorf("%s: header %d: %s=%q (%v), want %s=%q (%v)", name, i, o.GetHeader().GetKey(), o.GetHeader().GetRawValue(), o.GetAppendAction(),
					want[i].k, want[i].v, action)
			}
		}
	}
}

// asSent is m as Envoy reads it: marshalled and unmarshalled again (a
// mutation's headers are in the message as its wire bytes).
func asSent[M proto.Message](t testing.TB, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestMutationEncode: the bytes fill puts in a HeaderMutation are exactly
// what protobuf-go marshals for the messages fillMessages builds from the
// same changes, for random mutations (empty names and values, values past
// one and two bytes of length, appended values, removed names); a name
// that is not valid UTF-8 takes the messages, so marshalling refuses it as
// it always did.
func TestMutationEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 3))
	word := func() string {
		switch rng.IntN(8) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("v", 100+rng.IntN(200))
		case 2:
			return strings.Repeat("w", 16000+rng.IntN(1000))
		case 3:
			return "é-ü"
		case 4:
			return "x-routing-\u00e9-confidence-" + strconv.Itoa(rng.IntN(1000)) // non-ASCII past the first eight bytes
		}
		return "h-" + strconv.Itoa(rng.IntN(1000))
	}
	for round := range 2000 {
		var m mutation
		for range rng.IntN(24) {
			m.put(word(), word(), rng.IntN(3) == 0)
		}
		for range rng.IntN(4) {
			m.remove = append(m.remove, word())
		}
		var a, b extprocv3.HeaderMutation
		got, want := m.fill(&a), m.fillMessages(&b)
		if m.empty() {
			if got != nil {
				t.Fatalf("round %d: an empty mutation filled %v", round, got)
			}
			continue
		}
		gb, err := proto.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		wb, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if string(gb) != string(wb) {
			t.Fatalf("round %d: encoded\n%x\nprotobuf-go\n%x", round, gb, wb)
		}
	}
	for _, bad := range []func(*mutation){
		func(m *mutation) { m.put("x-\xff", "1", false) },
		func(m *mutation) { m.remove = append(m.remove, "te\xfe") },
		func(m *mutation) { m.put("x-selected-model\xff", "1", false) },
		func(m *mutation) { m.put("x-selected\xc3-model", "1", true) },
		func(m *mutation) { m.remove = append(m.remove, "\xe2\x82x-junction-plugins") },
	} {
		var m mutation
		m.put("x-a", "1", false)
		bad(&m)
		var hm extprocv3.HeaderMutation
		if _, err := proto.Marshal(m.fill(&hm)); err == nil {
			t.Error("a header name that is not UTF-8 was marshalled")
		}
	}
}

// TestValidUTF8: validUTF8 is utf8.ValidString for every length around its
// eight-byte words, with a byte that is not ASCII (valid runes, stray
// continuation bytes, truncated sequences) at every position, and for
// random bytes.
func TestValidUTF8(t *testing.T) {
	for n := 0; n <= 40; n++ {
		base := strings.Repeat("a", n)
		if !validUTF8(base) {
			t.Fatalf("%q: not valid", base)
		}
		for i := 0; i < n; i++ {
			for _, ins := range []string{"\xff", "\x80", "\xc3", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xe2\x82", "\xed\xa0\x80"} {
				s := base[:i] + ins + base[i:]
				if got, want := validUTF8(s), utf8.ValidString(s); got != want {
					t.Fatalf("%q: %v, utf8.ValidString %v", s, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(17, 1))
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(128))
			if rng.IntN(12) == 0 {
				b[i] = byte(rng.IntN(256))
			}
		}
		if got, want := validUTF8(string(b)), utf8.ValidString(string(b)); got != want {
			t.Fatalf("%q: %v, utf8.ValidString %v", b, got, want)
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
	if p := m.fill(&hm); p == nil || len(asSent(t, p).GetSetHeaders()) != 0 || len(asSent(t, p).GetRemoveHeaders()) != 1 {
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
// adding a value to one header's slice does not change another's, whether
// the values are kept in the exchange's array or (too many for it) in a new
// one.
func TestParseHeadersValues(t *testing.T) {
	hm := &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: ":path", RawValue: []byte("/v1/chat/completions")},
		{Key: "x-a", RawValue: []byte("1")},
		{Key: "x-b", RawValue: []byte("2")},
		{Key: "x-a", RawValue: []byte("3")},
		{Key: "x-c", Value: "4"},
	}}
	var x exchange
	for _, vals := range [][]string{nil, x.headerVals[:0], x.headerVals[:0:2]} {
		ri := parseHeaders(hm, vals)
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
		if got := ri.header["X-B"]; len(got) != 1 || got[0] != "2" {
			t.Errorf("X-B = %q", got)
		}
	}
	if x.headerVals[0] != "1" || x.headerVals[1] != "2" {
		t.Errorf("the values that fit are not kept in the exchange's array: %q", x.headerVals[:3])
	}
	withRoom := testing.AllocsPerRun(10, func() { parseHeaders(hm, x.headerVals[:0]) })
	without := testing.AllocsPerRun(10, func() { parseHeaders(hm, nil) })
	if withRoom != without-1 {
		t.Errorf("parseHeaders: %v allocations with room for the values, %v without; want one less", withRoom, without)
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
	if len(hopCanonical) != len(requestHopHeaders)+1 {
		t.Errorf("%d canonical names for %d hop headers and Accept-Encoding", len(hopCanonical), len(requestHopHeaders))
	}
	for i, k := range hopCanonical {
		if got := hopIndex(k); got != i || k != http.CanonicalHeaderKey(k) {
			t.Errorf("hopIndex(%q) = %d, want %d (canonical %q)", k, got, i, http.CanonicalHeaderKey(k))
		}
	}
	for _, k := range []string{"Content-Type", "X-Request-Id", "connection", "Tes"} {
		if got := hopIndex(k); got != -1 {
			t.Errorf("hopIndex(%q) = %d, want -1", k, got)
		}
	}
}

// diffMaps is diff as it was, against a copy of the map taken before it
// changed: the reference TestDiffSnapshot holds diff to.
func diffMaps(m *mutation, before, after http.Header) {
	keys := []string{}
	for k, vs := range after {
		if !slices.Equal(before[k], vs) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		m.setValues(lowerKey(k), after[k])
	}
	var gone []string
	for k := range before {
		if _, ok := after[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		m.remove = append(m.remove, strings.ToLower(k))
	}
}

// TestDiffSnapshot: the mutation computed against a snapshot of the
// request's own map is the one computed against a copy of it, whatever the
// request phase does to the map the way it changes headers (replacing a
// name's values, deleting it, adding a value, emptying it), for random
// maps, from none to more headers than the snapshot keeps on the stack.
func TestDiffSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"Content-Type", "Accept", "Authorization", "X-Request-Id", "X-Selected-Model", "X-A", "X-B", "X-C", "Traceparent"}
	for i := range 20 {
		names = append(names, "X-Extra-"+strconv.Itoa(i))
	}
	// Every fourth round draws from 90 more names, for requests with more
	// than the 64 headers diff keeps a bit for.
	many := slices.Clone(names)
	for i := range 90 {
		many = append(many, "X-Many-"+strconv.Itoa(i))
	}
	for round := range 3000 {
		names := names
		if round%4 == 3 {
			names = many
		}
		h := http.Header{}
		// parseHeaders' shape: values sharing one backing array, each with
		// no room to grow, a repeated name with room.
		vals := []string{}
		for range rng.IntN(len(names)*2 + 1) {
			k := names[rng.IntN(len(names))]
			v := strconv.Itoa(rng.IntN(3))
			if vs, ok := h[k]; ok {
				h[k] = append(vs, v)
				continue
			}
			vals = append(vals, v)
			h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
		copyBefore := h.Clone()
		var buf [16]headerPair
		before := snapshot(buf[:0], h)
		for range rng.IntN(8 + len(h)/4) {
			k := names[rng.IntN(len(names))]
			switch rng.IntN(5) {
			case 0:
				h.Set(k, strconv.Itoa(rng.IntN(3)))
			case 1:
				delete(h, k)
			case 2:
				h.Add(k, strconv.Itoa(rng.IntN(3)))
			case 3:
				h[k] = []string{}
			case 4:
				h[k] = append(h[k], "x") // a plugin's add (plugin.Stage)
			}
		}
		var got, want mutation
		got.diff(before, h)
		diffMaps(&want, copyBefore, h)
		if got.n != want.n || !slices.Equal(got.remove, want.remove) {
			t.Fatalf("round %d: %d set, removed %q; want %d, %q", round, got.n, got.remove, want.n, want.remove)
		}
		for i := range got.n {
			if *got.entry(i) != *want.entry(i) {
				t.Fatalf("round %d: entry %d %+v, want %+v", round, i, *got.entry(i), *want.entry(i))
			}
		}
	}
}

// TestReplySlots: the first reply of each kind comes from the exchange,
// later ones are new messages, and building one never changes a reply
// already handed out.
func TestReplySlots(t *testing.T) {
	x := &exchange{}
	var m mutation
	m.put("x-a", "1", false)
	first := x.headersResponse(false, &m, false).msg()
	firstResp := x.headersResponse(true, nil, false).msg()
	b1 := x.bodyResponse(false).replace([]byte("one")).msg()
	b1r := x.bodyResponse(true).clearBody().msg()
	var m2 mutation
	m2.put("x-b", "2", false)
	second := x.headersResponse(false, &m2, true).msg()
	b2 := x.bodyResponse(false).replace([]byte("two")).msg()
	if first != &x.replies.r[0].pr || firstResp != &x.replies.r[1].pr || b1 != &x.replies.r[2].pr || b1r != &x.replies.r[3].pr {
		t.Fatal("the first replies are not the exchange's")
	}
	if second == first || b2 == b1 {
		t.Fatal("a second reply of a kind reuses the first")
	}
	if h := asSent(t, first).GetRequestHeaders().GetResponse(); h.GetClearRouteCache() || len(h.GetHeaderMutation().GetSetHeaders()) != 1 ||
		h.GetHeaderMutation().GetSetHeaders()[0].GetHeader().GetKey() != "x-a" {
		t.Errorf("first headers reply changed: %v", asSent(t, first))
	}
	if r := asSent(t, firstResp); r.GetResponseHeaders() == nil || r.GetResponseHeaders().GetResponse() != nil {
		t.Errorf("response headers reply: %v", r)
	}
	if got := string(asSent(t, b1).GetRequestBody().GetResponse().GetBodyMutation().GetBody()); got != "one" {
		t.Errorf("first body reply now %q", got)
	}
	if !asSent(t, b1r).GetResponseBody().GetResponse().GetBodyMutation().GetClearBody() {
		t.Errorf("response body reply: %v", asSent(t, b1r))
	}
	if got := string(asSent(t, b2).GetRequestBody().GetResponse().GetBodyMutation().GetBody()); got != "two" {
		t.Errorf("second body reply %q", got)
	}
}

// TestReplyEncode: a reply's bytes (msg) are exactly what protobuf-go
// marshals for the same reply built as messages (messages), for random
// replies of every kind: header changes or none (and changes put after the
// reply took them, which it must not send), each body operation with empty,
// short and long bodies, a route cache clear, mode overrides; a header name
// that is not valid UTF-8 is refused by marshalling as before.
func TestReplyEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 4))
	bodyOf := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		case 2:
			return []byte(strings.Repeat("b", 100+rng.IntN(20000)))
		}
		return []byte(`{"model":"small"}`)
	}
	modes := []*filterv3.ProcessingMode{nil, {ResponseBodyMode: modeBuffered}, {ResponseBodyMode: modeNone},
		{RequestBodyMode: modeNone, ResponseHeaderMode: filterv3.ProcessingMode_SKIP, ResponseBodyMode: modeNone,
			RequestTrailerMode: filterv3.ProcessingMode_SKIP, ResponseTrailerMode: filterv3.ProcessingMode_SKIP}}
	for round := range 3000 {
		x := &exchange{}
		var m mutation
		for i := range rng.IntN(20) {
			m.put("x-h-"+strconv.Itoa(i), strings.Repeat("v", rng.IntN(3)*70), rng.IntN(4) == 0)
		}
		for range rng.IntN(3) {
			m.remove = append(m.remove, "content-length")
		}
		var r *reply
		if rng.IntN(2) == 0 {
			r = x.headersResponse(rng.IntN(2) == 0, &m, rng.IntN(3) == 0)
		} else {
			r = x.bodyResponse(rng.IntN(2) == 0)
			switch rng.IntN(4) {
			case 0:
				r.clearBody()
			case 1:
				r.replace(bodyOf())
			case 2:
				r.stream(bodyOf(), rng.IntN(2) == 0)
			}
			if rng.IntN(2) == 0 {
				r.headers(&m)
			}
			r.clearRoute = rng.IntN(3) == 0
		}
		r.mode = modes[rng.IntN(len(modes))]
		m.put("x-later", "not sent", false)
		m.remove = append(m.remove, "x-later-removed")
		got, err := proto.Marshal(r.msg())
		if err != nil {
			t.Fatal(err)
		}
		want, err := proto.Marshal(r.messages())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("round %d: encoded\n%x\nprotobuf-go\n%x", round, got, want)
		}
		// As sent: NewGRPCServer's codec sends the bytes as they are; any
		// other protobuf codec marshals the wireReply to the same bytes.
		if got := codecBytes(t, serverCodec, &r.w); string(got) != string(want) {
			t.Fatalf("round %d: through the server's codec\n%x\nprotobuf-go\n%x", round, got, want)
		}
		if got := codecBytes(t, encoding.GetCodecV2(protocodec.Name), &r.w); string(got) != string(want) {
			t.Fatalf("round %d: the wire reply through gRPC's codec\n%x\nprotobuf-go\n%x", round, got, want)
		}
		if strings.Contains(string(got), "x-later") {
			t.Fatalf("round %d: a change put after the reply took its headers was sent", round)
		}
	}
	var m mutation
	m.put("x-\xff", "1", false)
	x := &exchange{}
	r := x.bodyResponse(false).headers(&m).replace([]byte("b"))
	if _, err := proto.Marshal(r.msg()); err == nil {
		t.Error("a header name that is not UTF-8 was marshalled")
	}
	if r.w.ProcessingResponse != nil {
		t.Error("a reply built as messages is to be sent as bytes")
	}
}

// TestAnswerMutation: the first mutation of each kind of answer reply is
// the exchange's, empty; a later one is new, so a reply already given one
// is never changed by the next.
func TestAnswerMutation(t *testing.T) {
	x := &exchange{}
	h := x.answerMutation(answerHeadersMut)
	b := x.answerMutation(answerBodyMut)
	if h != &x.answerMuts[answerHeadersMut] || b != &x.answerMuts[answerBodyMut] || !h.empty() || !b.empty() {
		t.Fatalf("first: %p %p, want the exchange's %p %p", h, b, &x.answerMuts[0], &x.answerMuts[1])
	}
	h.put("x-selected-model", "small", false)
	r := x.headersResponse(true, h, false)
	before := string(r.msg().ProtoReflect().GetUnknown())
	h2 := x.answerMutation(answerHeadersMut)
	if h2 == h || !h2.empty() {
		t.Fatalf("second: %p (first %p), empty %v", h2, h, h2.empty())
	}
	h2.put("x-other", "1", false)
	if after := string(r.msg().ProtoReflect().GetUnknown()); after != before {
		t.Errorf("the first reply changed: %q, was %q", after, before)
	}
}

// TestParseHeadersHop: the hop-by-hop headers parseHeaders notes are those a
// pass over the parsed map finds (hopIndex of each name), whatever the case
// the names arrive in and however often.
func TestParseHeadersHop(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	names := append(append([]string{}, requestHopHeaders...), "accept-encoding", "content-type", "x-request-id", "tes", "connections", "authorization")
	spell := func(k string) string {
		switch rng.IntN(3) {
		case 0:
			return strings.ToUpper(k)
		case 1:
			return http.CanonicalHeaderKey(k)
		}
		return k
	}
	for range 2000 {
		hm := &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":path", RawValue: []byte("/v1/chat/completions")}}}
		for range rng.IntN(12) {
			hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: spell(names[rng.IntN(len(names))]), RawValue: []byte("v")})
		}
		ri := parseHeaders(hm, nil)
		var want uint8
		for k := range ri.header {
			if i := hopIndex(k); i >= 0 {
				want |= 1 << i
			}
		}
		if ri.hop != want {
			t.Fatalf("%v: hop %08b, the map's %08b", hm.Headers, ri.hop, want)
		}
	}
}
