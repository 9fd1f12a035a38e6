package extproc

import (
	"encoding/binary"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/junction-router/junction/internal/dataplane"
)

// requestHopHeaders are removed from a request Junction routes: they belong
// to the client's connection to Envoy, or (Proxy-Authorization) to a proxy,
// never to the backend. Envoy drops most of them itself; removing one that is
// not there is not sent.
var requestHopHeaders = []string{
	"connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade",
}

// hopCanonical is the canonical name of each hopIndex (TestHopIndex).
var hopCanonical = [...]string{
	"Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Upgrade", "Accept-Encoding",
}

// hopIndex is the index in requestHopHeaders of the canonical header name
// k, len(requestHopHeaders) for Accept-Encoding, -1 for any other
// (TestHopIndex).
func hopIndex(k string) int {
	switch k {
	case "Connection":
		return 0
	case "Keep-Alive":
		return 1
	case "Proxy-Authorization":
		return 2
	case "Proxy-Connection":
		return 3
	case "Te":
		return 4
	case "Trailer":
		return 5
	case "Upgrade":
		return 6
	case "Accept-Encoding":
		return 7
	}
	return -1
}

// headerValue is a header's value as Envoy sends it: raw_value, or value
// from data planes that still fill that. The string shares raw_value's
// bytes (unsafeString): a received message is never written to.
func headerValue(h *corev3.HeaderValue) string {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return unsafeString(raw)
	}
	return h.GetValue()
}

// canonicalKey is textproto.CanonicalMIMEHeaderKey(k) without its
// allocation for the headers nearly every request carries, which Envoy
// sends in lower case (TestCanonicalKey).
func canonicalKey(k string) string {
	switch k {
	case "content-type":
		return "Content-Type"
	case "content-length":
		return "Content-Length"
	case "x-request-id":
		return dataplane.HeaderRequestID
	case "accept":
		return "Accept"
	case "accept-encoding":
		return "Accept-Encoding"
	case "authorization":
		return "Authorization"
	case "user-agent":
		return "User-Agent"
	case "x-forwarded-proto":
		return "X-Forwarded-Proto"
	case "x-forwarded-for":
		return "X-Forwarded-For"
	case "x-envoy-expected-rq-timeout-ms":
		return "X-Envoy-Expected-Rq-Timeout-Ms"
	case "x-envoy-internal":
		return "X-Envoy-Internal"
	}
	return textproto.CanonicalMIMEHeaderKey(k)
}

// requestInfo is what the request headers say.
type requestInfo struct {
	method, path, authority string
	// header holds the regular headers by canonical key; pseudo-headers
	// (":path" …) are kept out.
	header http.Header
	// hop: bit i, a header of hopIndex i is in header.
	hop uint8
}

// parseHeaders reads the request headers; the values are kept in vals'
// spare room when they fit (an exchange's own array), else in one new
// array.
func parseHeaders(m *corev3.HeaderMap, vals []string) requestInfo {
	var ri requestInfo
	hs := m.GetHeaders()
	ri.header = make(http.Header, len(hs))
	// One backing array for the values: a header's first value is a slice
	// of it with no room to grow, so a second value (rare) copies.
	if cap(vals)-len(vals) < len(hs) {
		vals = make([]string, 0, len(hs))
	}
	for _, h := range hs {
		k := h.GetKey()
		if strings.HasPrefix(k, ":") {
			switch k {
			case ":method":
				ri.method = headerValue(h)
			case ":path":
				ri.path = headerValue(h)
			case ":authority":
				ri.authority = headerValue(h)
			}
			continue
		}
		ck := canonicalKey(k)
		if i := hopIndex(ck); i >= 0 {
			ri.hop |= 1 << i
		}
		if vs, ok := ri.header[ck]; ok {
			ri.header[ck] = append(vs, headerValue(h))
			continue
		}
		vals = append(vals, headerValue(h))
		ri.header[ck] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	return ri
}

// responseStatus reads :status; 0 when it is missing or not a number.
func responseStatus(m *corev3.HeaderMap) (status int, contentType string) {
	for _, h := range m.GetHeaders() {
		switch h.GetKey() {
		case ":status":
			status, _ = strconv.Atoi(headerValue(h))
		case "content-type":
			contentType = headerValue(h)
		}
	}
	return status, contentType
}

// mutation collects header changes in the form Envoy takes them: lower-case
// names, one set per value (the first overwrites, the rest append). The
// changes are kept as plain entries (in the mutation itself for the first
// sixteen) and written as Envoy's message's bytes once, when the mutation
// is sent (fill): one allocation of the exact size, whatever the number of
// headers.
type mutation struct {
	n      int
	fixed  [16]headerEntry
	more   []headerEntry // beyond fixed
	remove []string
}

// headerEntry is one header to set.
type headerEntry struct {
	key, value  string
	appendValue bool
}

// headerOption is a HeaderValueOption with its HeaderValue, allocated
// together.
type headerOption struct {
	opt corev3.HeaderValueOption
	val corev3.HeaderValue
}

func (m *mutation) put(key, value string, appendValue bool) {
	e := headerEntry{key, value, appendValue}
	if m.n < len(m.fixed) {
		m.fixed[m.n] = e
	} else {
		m.more = append(m.more, e)
	}
	m.n++
}

// entry is the i-th header put.
func (m *mutation) entry(i int) *headerEntry {
	if i < len(m.fixed) {
		return &m.fixed[i]
	}
	return &m.more[i-len(m.fixed)]
}

// setValues replaces key's values.
func (m *mutation) setValues(key string, values []string) {
	for i, v := range values {
		m.put(key, v, i > 0)
	}
}

// reset empties m.
func (m *mutation) reset() { m.n, m.more, m.remove = 0, nil, nil }

func (m *mutation) empty() bool { return m.n == 0 && len(m.remove) == 0 }

// fill writes the mutation into hm and returns it, or nil when there is
// nothing to change. The changes go in as the bytes proto.Marshal would
// write for them (encode): the mutation is only ever sent, and building
// two messages per header for protobuf-go's marshalling to walk cost about
// 1,300 instructions per header more than writing its few bytes here (a
// routed request sends sixteen). A name that is not valid UTF-8 (which
// marshalling refuses) takes the messages (fillMessages), so that the
// send fails as it always did.
func (m *mutation) fill(hm *extprocv3.HeaderMutation) *extprocv3.HeaderMutation {
	if m.empty() {
		return nil
	}
	if b, ok := m.encode(); ok {
		hm.ProtoReflect().SetUnknown(b)
		return hm
	}
	return m.fillMessages(hm)
}

// fillMessages is fill with Envoy's messages built, for what encode cannot
// write. The values are not copied: RawValue is the value string's own
// bytes (unsafeBytes), which nothing writes to.
func (m *mutation) fillMessages(hm *extprocv3.HeaderMutation) *extprocv3.HeaderMutation {
	hm.RemoveHeaders = m.remove
	if m.n == 0 {
		return hm
	}
	opts := make([]headerOption, m.n)
	set := make([]*corev3.HeaderValueOption, m.n)
	for i := range opts {
		e, o := m.entry(i), &opts[i]
		o.val.Key, o.val.RawValue = e.key, unsafeBytes(e.value)
		o.opt.Header = &o.val
		if e.appendValue {
			o.opt.AppendAction = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
		} else {
			o.opt.AppendAction = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
		}
		set[i] = &o.opt
	}
	hm.SetHeaders = set
	return hm
}

// The fields encode writes: HeaderMutation's set_headers (1) and
// remove_headers (2), a HeaderValueOption's header (1) and append_action
// (3), a HeaderValue's key (1) and raw_value (3). TestMutationEncode holds
// the bytes to protobuf-go's for the messages fillMessages builds.
const (
	fieldSetHeaders    = 1
	fieldRemoveHeaders = 2
	fieldOptionHeader  = 1
	fieldAppendAction  = 3
	fieldHeaderKey     = 1
	fieldHeaderRaw     = 3
)

// encode is the HeaderMutation fillMessages builds, as proto.Marshal
// writes it (appendWire), in one allocation of the exact size. ok is false
// when a name is not valid UTF-8.
func (m *mutation) encode() (b []byte, ok bool) {
	size, ok := m.wireSize(m.n, len(m.remove))
	if !ok {
		return nil, false
	}
	return m.appendWire(make([]byte, 0, size), m.n, len(m.remove)), true
}

// wireSize is the size of appendWire's bytes for the first n headers put
// and nremove removals; ok is false when a name is not valid UTF-8.
func (m *mutation) wireSize(n, nremove int) (size int, ok bool) {
	for i := 0; i < n; i++ {
		e := m.entry(i)
		if !validUTF8(e.key) {
			return 0, false
		}
		_, os := entrySizes(e)
		size += protowire.SizeTag(fieldSetHeaders) + protowire.SizeBytes(os)
	}
	for _, k := range m.remove[:nremove] {
		if !validUTF8(k) {
			return 0, false
		}
		size += protowire.SizeTag(fieldRemoveHeaders) + protowire.SizeBytes(len(k))
	}
	return size, true
}

// appendWire appends the HeaderMutation of the first n headers put and
// nremove removals as proto.Marshal writes it: the set headers in order,
// then the removed names; each field in field-number order, empty ones left
// out as proto3 does (an empty key or value, the default append action
// APPEND_IF_EXISTS_OR_ADD).
func (m *mutation) appendWire(b []byte, n, nremove int) []byte {
	for i := 0; i < n; i++ {
		e := m.entry(i)
		hs, os := entrySizes(e)
		b = appendTag(b, fieldSetHeaders, protowire.BytesType)
		b = appendVarint(b, uint64(os))
		b = appendTag(b, fieldOptionHeader, protowire.BytesType)
		b = appendVarint(b, uint64(hs))
		if e.key != "" {
			b = appendTag(b, fieldHeaderKey, protowire.BytesType)
			b = appendString(b, e.key)
		}
		if e.value != "" {
			b = appendTag(b, fieldHeaderRaw, protowire.BytesType)
			b = appendString(b, e.value)
		}
		if !e.appendValue {
			b = appendTag(b, fieldAppendAction, protowire.VarintType)
			b = appendVarint(b, uint64(corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD))
		}
	}
	for _, k := range m.remove[:nremove] {
		b = appendTag(b, fieldRemoveHeaders, protowire.BytesType)
		b = appendString(b, k)
	}
	return b
}

// appendVarint is protowire.AppendVarint with the one-byte case (every tag
// and most lengths written here) inlined where it is called.
func appendVarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return protowire.AppendVarint(b, v)
}

// appendTag is protowire.AppendTag for a field numbered below 16 (every
// field written here), whose tag is one byte.
func appendTag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return append(b, byte(num)<<3|byte(typ))
}

// appendString is protowire.AppendString through appendVarint.
func appendString(b []byte, s string) []byte {
	return append(appendVarint(b, uint64(len(s))), s...)
}

// entrySizes are the sizes on the wire of e's HeaderValue (header) and of
// its HeaderValueOption (option), computed together: the option's holds
// the header's.
func entrySizes(e *headerEntry) (header, option int) {
	if e.key != "" {
		header += protowire.SizeTag(fieldHeaderKey) + protowire.SizeBytes(len(e.key))
	}
	if e.value != "" {
		header += protowire.SizeTag(fieldHeaderRaw) + protowire.SizeBytes(len(e.value))
	}
	option = protowire.SizeTag(fieldOptionHeader) + protowire.SizeBytes(header)
	if !e.appendValue {
		option += protowire.SizeTag(fieldAppendAction) + protowire.SizeVarint(uint64(corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD))
	}
	return header, option
}

// validUTF8 is utf8.ValidString(s), with the answer for ASCII (every header
// name Junction sends) read eight bytes at a time: utf8.ValidString spent
// about 150 instructions on each of a routed request's sixteen names
// (TestValidUTF8).
func validUTF8(s string) bool {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	n := len(b)
	if n < 8 {
		var or byte
		for _, c := range b {
			or |= c
		}
		return or < utf8.RuneSelf || utf8.ValidString(s)
	}
	or := binary.LittleEndian.Uint64(b[n-8:]) // the last eight, overlapping the words before
	for i := 0; i+8 < n; i += 8 {
		or |= binary.LittleEndian.Uint64(b[i:])
	}
	return or&0x8080808080808080 == 0 || utf8.ValidString(s)
}

// unsafeBytes is s's bytes without a copy, for a message field that is only
// marshalled. Its capacity is its length, so an append copies.
func unsafeBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// unsafeString is b as a string without a copy: b must never change
// afterwards. Used for the header values of a received message, which
// nothing writes to (gRPC decodes every message into bytes of its own).
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// headerPair is one header of a map as it was: its values are the map's
// own slice, not a copy.
type headerPair struct {
	key  string
	vals []string
}

// snapshot appends h's headers to dst (in map order), for diff to compare h
// with once it changed. The values are not copied: a header map is changed
// by replacing or deleting a name's slice (Set, the data plane's headers)
// or by appending to it, which never writes below the slice's length, so
// the snapshot keeps seeing the values as they were; a copy of the map
// (http.Header.Clone, three allocations) gave the same answers
// (TestDiffSnapshot).
func snapshot(dst []headerPair, h http.Header) []headerPair {
	for k, vs := range h {
		dst = append(dst, headerPair{k, vs})
	}
	return dst
}

// indexOf is key's index in a snapshot; -1 when it is not there.
func indexOf(before []headerPair, key string) int {
	for i := range before {
		if before[i].key == key {
			return i
		}
	}
	return -1
}

// diff adds the changes that turn before (a snapshot) into after, in a
// stable order: changed or new headers (sorted by name), then removed ones
// (sorted). One pass over after finds both: the changed headers with their
// values, and which of before's names are still there (a bit each, for the
// first 64; a lookup in after for any further), so that neither needs a
// lookup in the map afterwards.
func (m *mutation) diff(before []headerPair, after http.Header) {
	var buf [16]headerPair // most requests change fewer headers: no allocation
	changed := buf[:0]
	var kept uint64 // bit i: before[i]'s name is in after
	for k, vs := range after {
		i := indexOf(before, k)
		if i >= 0 && i < 64 {
			kept |= 1 << i
		}
		if i < 0 || !slices.Equal(before[i].vals, vs) {
			changed = append(changed, headerPair{k, vs})
		}
	}
	slices.SortFunc(changed, func(a, b headerPair) int { return strings.Compare(a.key, b.key) })
	for _, p := range changed {
		m.setValues(lowerKey(p.key), p.vals)
	}
	var gone []string
	for i := range before {
		in := kept&(1<<i) != 0
		if i >= 64 {
			_, in = after[before[i].key]
		}
		if !in {
			gone = append(gone, before[i].key)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		m.remove = append(m.remove, strings.ToLower(k))
	}
}

// fromHeader sets every header of h (sorted by name).
func (m *mutation) fromHeader(h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		m.setValues(lowerKey(k), h[k])
	}
}

// lowerKey is a canonical header name as Envoy writes it; the routing
// headers are spelled out so that no request lower-cases them.
func lowerKey(k string) string {
	switch k {
	case dataplane.HeaderSelectedModel:
		return "x-selected-model"
	case dataplane.HeaderConfidence:
		return "x-routing-confidence"
	case dataplane.HeaderRequestID:
		return "x-request-id"
	case dataplane.HeaderCacheStatus:
		return "x-cache-status"
	case dataplane.HeaderProcessingTime:
		return "x-processing-time"
	case dataplane.HeaderClassification:
		return "x-classification-time"
	case dataplane.HeaderSecurity:
		return "x-security-checks"
	case dataplane.HeaderToolsSelected:
		return "x-tools-selected"
	case dataplane.HeaderDecision:
		return "x-junction-decision"
	case dataplane.HeaderReasonCode:
		return "x-junction-reason-code"
	case dataplane.HeaderPlugins:
		return "x-junction-plugins"
	case "Content-Type":
		return "content-type"
	case "Accept":
		return "accept"
	case "Authorization":
		return "authorization"
	}
	return strings.ToLower(k)
}

// immediateReply is a local reply and its parts, allocated together.
type immediateReply struct {
	pr     extprocv3.ProcessingResponse
	imm    extprocv3.ProcessingResponse_ImmediateResponse
	ir     extprocv3.ImmediateResponse
	status typev3.HttpStatus
	hm     extprocv3.HeaderMutation
}

// immediateResponse turns an answer into Envoy's local reply.
func immediateResponse(a *dataplane.Answer, details string) *extprocv3.ProcessingResponse {
	var m mutation
	m.fromHeader(a.Header)
	r := &immediateReply{}
	r.status.Code = httpStatus(a.Status)
	r.ir.Status, r.ir.Headers, r.ir.Body, r.ir.Details = &r.status, m.fill(&r.hm), a.Body, details
	r.imm.ImmediateResponse = &r.ir
	r.pr.Response = &r.imm
	return &r.pr
}

// httpStatus maps a status to Envoy's enum, which lists the registered
// codes only; anything else is answered as a 500.
func httpStatus(code int) typev3.StatusCode {
	if _, ok := typev3.StatusCode_name[int32(code)]; ok && code >= 200 {
		return typev3.StatusCode(code)
	}
	return typev3.StatusCode_InternalServerError
}
