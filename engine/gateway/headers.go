package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/metrics"
	"github.com/junction-router/junction/engine/plugin"
)

// Routing headers (the spec's earlier-revision set) and Junction's own, in
// canonical form (the form net/http keeps and writes), so that they can be
// stored without canonicalising them on every request.
const (
	headerSelectedModel  = "X-Selected-Model"
	headerConfidence     = "X-Routing-Confidence"
	headerRequestID      = "X-Request-Id"
	headerCacheStatus    = "X-Cache-Status"
	headerProcessingTime = "X-Processing-Time"
	headerClassification = "X-Classification-Time"
	headerSecurity       = "X-Security-Checks"
	headerToolsSelected  = "X-Tools-Selected"
	headerDecision       = "X-Junction-Decision"
	headerReasonCode     = "X-Junction-Reason-Code"
	headerPlugins        = "X-Junction-Plugins"
)

// headerValues hands out one-element value slices for header fields from a
// single allocation: net/http stores every field as a []string, and setting
// ten headers one by one costs ten allocations.
type headerValues []string

func newHeaderValues(n int) headerValues { return make(headerValues, 0, n) }

// set stores v under the canonical key k, replacing what was there, as
// Header.Set does.
func (hv *headerValues) set(h http.Header, k, v string) {
	if len(*hv) == cap(*hv) {
		*hv = make(headerValues, 0, 4)
	}
	*hv = append(*hv, v)
	n := len(*hv)
	h[k] = (*hv)[n-1 : n : n]
}

// Cache statuses of x-cache-status.
const (
	cacheMiss = "miss"
	cacheHit  = "hit"
)

// routing is what the routing headers report for one answered request.
type routing struct {
	res         *engine.Result
	cacheStatus string
	processing  time.Duration
	tools       int
	plugins     []plugin.Report
}

// set writes the routing headers into h (the client response's headers).
func (rt *routing) set(h http.Header) {
	res := rt.res
	hv := newHeaderValues(11)
	if res.Model != "" {
		hv.set(h, headerSelectedModel, res.Model)
	}
	hv.set(h, headerConfidence, formatConfidence(res.Confidence))
	cache := rt.cacheStatus
	if cache == "" {
		cache = cacheMiss
	}
	hv.set(h, headerCacheStatus, cache)
	hv.set(h, headerProcessingTime, millis(rt.processing))
	hv.set(h, headerClassification, millis(res.ClassificationTime))
	hv.set(h, headerSecurity, securityChecks(res))
	hv.set(h, headerToolsSelected, strconv.Itoa(rt.tools))
	hv.set(h, headerDecision, metrics.Category(res))
	hv.set(h, headerReasonCode, res.ReasonCode)
	if v := pluginsHeader(rt.plugins); v != "" {
		hv.set(h, headerPlugins, v)
	}
}

// formatConfidence writes a confidence the way the header always has
// (shortest decimal form), without allocating for the usual 0 and 1.
func formatConfidence(c float64) string {
	switch c {
	case 0:
		return "0"
	case 1:
		return "1"
	}
	return strconv.FormatFloat(c, 'f', -1, 64)
}

// millis formats d as decimal milliseconds ("12.345").
func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

func securityChecks(res *engine.Result) string {
	pii, jb := res.PIIDetected, res.JailbreakDetected
	if res.Block != nil {
		pii = pii || res.Block.Code == "pii_detected"
		jb = jb || res.Block.Code == "jailbreak_detected"
	}
	switch {
	case pii && jb:
		return "pii:true,jailbreak:true"
	case pii:
		return "pii:true,jailbreak:false"
	case jb:
		return "pii:false,jailbreak:true"
	}
	return "pii:false,jailbreak:false"
}

// pluginsHeader lists type=status for each plugin that ran, in order.
func pluginsHeader(reports []plugin.Report) string {
	if len(reports) == 0 {
		return ""
	}
	var b strings.Builder
	for i, r := range reports {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.Type)
		b.WriteByte('=')
		b.WriteString(r.Status)
	}
	return b.String()
}

// hopHeaders are not relayed from an upstream answer: they describe the
// upstream connection, or the body the gateway may rewrite.
var hopHeaders = map[string]bool{
	"Connection":          true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
	"Content-Length":      true,
	"Content-Encoding":    true,
}

// copyUpstreamHeaders relays the upstream answer's headers (rate-limit and
// processing headers are useful to clients), except hop-by-hop ones.
func copyUpstreamHeaders(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}
