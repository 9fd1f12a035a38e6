package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/metrics"
	"github.com/junction-router/junction/engine/plugin"
)

// Routing headers (the spec's earlier-revision set) and Junction's own.
const (
	headerSelectedModel  = "x-selected-model"
	headerConfidence     = "x-routing-confidence"
	headerRequestID      = "x-request-id"
	headerCacheStatus    = "x-cache-status"
	headerProcessingTime = "x-processing-time"
	headerClassification = "x-classification-time"
	headerSecurity       = "x-security-checks"
	headerToolsSelected  = "x-tools-selected"
	headerDecision       = "x-junction-decision"
	headerReasonCode     = "x-junction-reason-code"
	headerPlugins        = "x-junction-plugins"
)

// Cache statuses of x-cache-status.
const (
	cacheMiss = "miss"
	cacheHit  = "hit"
)

// pluginNotRun is the status x-junction-plugins reports for every plugin when
// the gateway has no plugin runner.
const pluginNotRun = "not_run"

// maxRequestIDLen bounds a client-sent x-request-id; longer or odd ones are
// replaced, since the value is echoed and logged.
const maxRequestIDLen = 128

// requestID keeps the client's x-request-id when it is short printable ASCII,
// else makes a UUID.
func requestID(client string) string {
	if client != "" && len(client) <= maxRequestIDLen {
		ok := true
		for i := 0; i < len(client); i++ {
			if c := client[i]; c <= ' ' || c > '~' {
				ok = false
				break
			}
		}
		if ok {
			return client
		}
	}
	return uuid.NewString()
}

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
	if res.Model != "" {
		h.Set(headerSelectedModel, res.Model)
	}
	h.Set(headerConfidence, strconv.FormatFloat(res.Confidence, 'f', -1, 64))
	cache := rt.cacheStatus
	if cache == "" {
		cache = cacheMiss
	}
	h.Set(headerCacheStatus, cache)
	h.Set(headerProcessingTime, millis(rt.processing))
	h.Set(headerClassification, millis(res.ClassificationTime))
	h.Set(headerSecurity, securityChecks(res))
	h.Set(headerToolsSelected, strconv.Itoa(rt.tools))
	h.Set(headerDecision, metrics.Category(res))
	h.Set(headerReasonCode, res.ReasonCode)
	if v := pluginsHeader(rt.plugins); v != "" {
		h.Set(headerPlugins, v)
	}
}

// upstream writes the routing headers the spec says the service adds to the
// request it forwards.
func (rt *routing) upstream(h http.Header, id string) {
	h.Set(headerRequestID, id)
	h.Set(headerSelectedModel, rt.res.Model)
	h.Set(headerConfidence, strconv.FormatFloat(rt.res.Confidence, 'f', -1, 64))
	h.Set(headerCacheStatus, cacheMiss) // it is forwarded, so no cache answered
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
	return "pii:" + strconv.FormatBool(pii) + ",jailbreak:" + strconv.FormatBool(jb)
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
