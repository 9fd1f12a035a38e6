package extproc

import (
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/junction-router/junction/internal/dataplane"
)

// requestHopHeaders are removed from a request Junction routes: they belong
// to the client's connection to Envoy, or (Proxy-Authorization) to a proxy,
// never to the backend. Envoy drops most of them itself; removing one that is
// not there is not sent.
var requestHopHeaders = []string{
	"connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade",
}

// headerValue is a header's value as Envoy sends it: raw_value, or value
// from data planes that still fill that.
func headerValue(h *corev3.HeaderValue) string {
	if len(h.GetRawValue()) > 0 {
		return string(h.GetRawValue())
	}
	return h.GetValue()
}

// requestInfo is what the request headers say.
type requestInfo struct {
	method, path, authority string
	// header holds the regular headers by canonical key; pseudo-headers
	// (":path" …) are kept out.
	header http.Header
}

func parseHeaders(m *corev3.HeaderMap) requestInfo {
	var ri requestInfo
	hs := m.GetHeaders()
	ri.header = make(http.Header, len(hs))
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
		ck := textproto.CanonicalMIMEHeaderKey(k)
		ri.header[ck] = append(ri.header[ck], headerValue(h))
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
// options are allocated in small, growing blocks.
type mutation struct {
	set    []*corev3.HeaderValueOption
	remove []string
	block  []headerOption
	// vals holds the values' bytes, one after the other: one allocation
	// for a mutation's values instead of one per value.
	vals []byte
}

// headerOption is a HeaderValueOption with its HeaderValue, allocated
// together.
type headerOption struct {
	opt corev3.HeaderValueOption
	val corev3.HeaderValue
}

func (m *mutation) put(key, value string, appendValue bool) {
	action := corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
	if appendValue {
		action = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	}
	if len(m.block) == cap(m.block) {
		// Blocks of 4, 8, then 16: most mutations set one to a dozen headers,
		// and an option is about 200 bytes.
		m.block = make([]headerOption, 0, min(max(2*cap(m.block), 4), 16))
	}
	n := len(m.block)
	m.block = m.block[:n+1]
	o := &m.block[n]
	if len(m.vals)+len(value) > cap(m.vals) {
		m.vals = make([]byte, 0, max(256, len(value)))
	}
	start := len(m.vals)
	m.vals = append(m.vals, value...)
	o.val.Key, o.val.RawValue = key, m.vals[start:len(m.vals):len(m.vals)]
	o.opt.Header, o.opt.AppendAction = &o.val, action
	if m.set == nil {
		m.set = make([]*corev3.HeaderValueOption, 0, 12)
	}
	m.set = append(m.set, &o.opt)
}

// setValues replaces key's values.
func (m *mutation) setValues(key string, values []string) {
	for i, v := range values {
		m.put(key, v, i > 0)
	}
}

func (m *mutation) empty() bool { return len(m.set) == 0 && len(m.remove) == 0 }

func (m *mutation) proto() *extprocv3.HeaderMutation {
	if m.empty() {
		return nil
	}
	return &extprocv3.HeaderMutation{SetHeaders: m.set, RemoveHeaders: m.remove}
}

// diff adds the changes that turn before into after, in a stable order:
// changed or new headers (sorted by name), then removed ones (sorted).
// before is updated to after as Envoy will hold it.
func (m *mutation) diff(before, after http.Header) {
	keys := make([]string, 0, len(after))
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
	clear(before)
	for k, vs := range after {
		before[k] = vs
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

// immediateResponse turns an answer into Envoy's local reply.
func immediateResponse(a *dataplane.Answer, details string) *extprocv3.ProcessingResponse {
	var m mutation
	m.fromHeader(a.Header)
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: httpStatus(a.Status)},
			Headers: m.proto(),
			Body:    a.Body,
			Details: details,
		},
	}}
}

// httpStatus maps a status to Envoy's enum, which lists the registered
// codes only; anything else is answered as a 500.
func httpStatus(code int) typev3.StatusCode {
	if _, ok := typev3.StatusCode_name[int32(code)]; ok && code >= 200 {
		return typev3.StatusCode(code)
	}
	return typev3.StatusCode_InternalServerError
}
