package dataplane

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/ratelimit"
)

// Routing headers (the spec's earlier-revision set) and Junction's own, in
// canonical form (the form net/http keeps and writes).
const (
	HeaderSelectedModel   = "X-Selected-Model"
	HeaderConfidence      = "X-Routing-Confidence"
	HeaderRequestID       = "X-Request-Id"
	HeaderCacheStatus     = "X-Cache-Status"
	HeaderCacheSimilarity = "X-Cache-Similarity"
	// HeaderCacheHit says which kind of hit answered: exact or semantic.
	HeaderCacheHit       = "X-Cache-Hit"
	HeaderProcessingTime = "X-Processing-Time"
	HeaderClassification = "X-Classification-Time"
	HeaderSecurity       = "X-Security-Checks"
	HeaderToolsSelected  = "X-Tools-Selected"
	HeaderDecision       = "X-Junction-Decision"
	HeaderReasonCode     = "X-Junction-Reason-Code"
	HeaderPlugins        = "X-Junction-Plugins"
	// HeaderAttempts is the number of upstream attempts a request under an
	// active reliability policy made; HeaderFallbackFrom the model routing
	// selected when another one answered.
	HeaderAttempts     = "X-Junction-Attempts"
	HeaderFallbackFrom = "X-Junction-Fallback-From"
)

// Cache statuses of x-cache-status.
const (
	CacheMiss = "miss"
	CacheHit  = "hit"
)

// PluginNotRun is the status x-junction-plugins reports for every plugin when
// the front end has no plugin runner.
const PluginNotRun = "not_run"

// Endpoint labels of router_requests_total: fixed strings, never the raw
// path, so that scanners cannot blow up the label set.
const (
	EndpointChat      = "/v1/chat/completions"
	EndpointModels    = "/v1/models"
	EndpointResponses = "/v1/responses"
	EndpointOther     = "other"
)

// StatusClientClosed is the status metrics record for a client that went
// away before its answer was complete (nginx's convention).
const StatusClientClosed = 499

// maxRequestIDLen bounds a client-sent x-request-id; longer or odd ones are
// replaced, since the value is echoed and logged.
const maxRequestIDLen = 128

// RequestID keeps the client's x-request-id when it is short printable
// ASCII, else makes a UUID.
func RequestID(client string) string {
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

// Routing is what the routing headers and routing_metadata report for one
// routed request.
type Routing struct {
	Result *engine.Result
	// CacheStatus is hit when a plugin answered from the response cache;
	// empty means miss.
	CacheStatus string
	// CacheSimilarity is the similarity of a cache hit's entry to the
	// request, as the cache plugin reported it (1 for an exact hit); empty
	// when no cache answered.
	CacheSimilarity string
	// CacheHit is the kind of hit (exact, semantic) the cache plugin
	// reported; empty when no cache answered or it did not say.
	CacheHit string
	// Processing is the time from receiving the request to the end of the
	// request phase (forwarding it, or answering it).
	Processing time.Duration
	// Tools is the number of tools forwarded (after plugins).
	Tools   int
	Plugins []plugin.Report
	// Attempts is the number of upstream attempts, set by a front end that
	// ran the decision's reliability policy (0: not reported).
	Attempts int
	// FallbackFrom is the model routing selected when a fallback candidate
	// answered instead (Result.Model is then the one that answered).
	FallbackFrom string
	// ResponseChecks are the reports of the response-checking plugins that
	// ran before the answer was released (the response gate), for
	// routing_metadata.response_checks.
	ResponseChecks []plugin.Report
	// RateLimit is the tightest rate limit the request was admitted under
	// (unset without global.rate_limits): its X-RateLimit headers.
	RateLimit ratelimit.Status
}

// SetClientHeaders writes the routing headers into h, the headers of the
// answer the client receives.
func (rt *Routing) SetClientHeaders(h http.Header) {
	hv := make(headerValues, 0, 11)
	rt.EachClientHeader(func(k, v string) { hv.set(h, k, v) })
}

// headerValues hands out one-element value slices for header fields from a
// single allocation: net/http stores every field as a []string, and setting
// ten headers one by one costs ten allocations.
type headerValues []string

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

// EachClientHeader calls fn with each routing header of the client's
// answer (canonical name, value), always in the same order.
func (rt *Routing) EachClientHeader(fn func(key, value string)) {
	res := rt.Result
	if res.Model != "" {
		fn(HeaderSelectedModel, res.Model)
	}
	fn(HeaderConfidence, formatConfidence(res.Confidence))
	cache := rt.CacheStatus
	if cache == "" {
		cache = CacheMiss
	}
	fn(HeaderCacheStatus, cache)
	if rt.CacheSimilarity != "" {
		fn(HeaderCacheSimilarity, rt.CacheSimilarity)
	}
	if rt.CacheHit != "" {
		fn(HeaderCacheHit, rt.CacheHit)
	}
	fn(HeaderProcessingTime, strconv.FormatInt(processingMillis(rt.Processing), 10))
	fn(HeaderClassification, millis(res.ClassificationTime))
	fn(HeaderSecurity, securityChecks(res))
	fn(HeaderToolsSelected, strconv.Itoa(rt.Tools))
	fn(HeaderDecision, metrics.Category(res))
	fn(HeaderReasonCode, res.ReasonCode)
	if v := pluginsHeader(rt.Plugins); v != "" {
		fn(HeaderPlugins, v)
	}
	if rt.Attempts > 0 {
		fn(HeaderAttempts, strconv.Itoa(rt.Attempts))
	}
	if rt.FallbackFrom != "" {
		fn(HeaderFallbackFrom, rt.FallbackFrom)
	}
	rt.RateLimit.Headers(fn)
}

// cacheReport is what the plugin that answered from the cache reported:
// the similarity of its entry and the kind of hit (exact or semantic).
func cacheReport(reports []plugin.Report) (similarity, kind string) {
	for i := len(reports) - 1; i >= 0; i-- {
		if m := reports[i].Module; m != nil {
			if v, ok := m.Values["similarity"]; ok {
				return v, m.Values["hit"]
			}
		}
	}
	return "", ""
}

// SetUpstreamHeaders writes the routing headers the spec says the service
// adds to the request it forwards.
func (rt *Routing) SetUpstreamHeaders(h http.Header, id string) {
	hv := make(headerValues, 0, 4)
	hv.set(h, HeaderRequestID, id)
	hv.set(h, HeaderSelectedModel, rt.Result.Model)
	hv.set(h, HeaderConfidence, formatConfidence(rt.Result.Confidence))
	hv.set(h, HeaderCacheStatus, CacheMiss) // it is forwarded, so no cache answered
}

// formatConfidence writes a confidence the way the header always has
// (shortest decimal form).
func formatConfidence(c float64) string {
	switch c {
	case 0:
		return "0"
	case 1:
		return "1"
	}
	return strconv.FormatFloat(c, 'f', -1, 64)
}

// processingMillis is the one number x-processing-time and routing_metadata.processing_time_ms both give:
// whole milliseconds (the spec types the field as an integer), rounded to the nearest, so that a request that
// took 0.8 ms says 1 in both rather than 0.814 in one and 0 in the other.
func processingMillis(d time.Duration) int64 {
	return d.Round(time.Millisecond).Milliseconds()
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

// Metadata encodes the routing_metadata object (the earlier revision's),
// byte for byte as json.Marshal writes it (answer_test.go holds the struct it
// is compared with); nil when it cannot be encoded (a confidence that is
// not a finite number).
func (rt *Routing) Metadata() json.RawMessage {
	return rt.AppendMetadata(make([]byte, 0, 192))
}

// AppendMetadata appends the routing_metadata object to dst without
// reflection; nil when it cannot be encoded.
func (rt *Routing) AppendMetadata(dst []byte) []byte {
	res := rt.Result
	if math.IsInf(res.Confidence, 0) || math.IsNaN(res.Confidence) {
		return nil
	}
	b := append(dst, `{"selected_model":`...)
	b = appendJSONString(b, res.Model)
	b = append(b, `,"confidence":`...)
	b = appendJSONFloat(b, res.Confidence)
	b = append(b, `,"processing_time_ms":`...)
	b = strconv.AppendInt(b, processingMillis(rt.Processing), 10)
	b = append(b, `,"cache_hit":`...)
	b = strconv.AppendBool(b, rt.CacheStatus == CacheHit)
	b = append(b, `,"security_checks":{"pii_detected":`...)
	b = strconv.AppendBool(b, res.PIIDetected)
	b = append(b, `,"jailbreak_detected":`...)
	b = strconv.AppendBool(b, res.JailbreakDetected)
	b = append(b, '}')
	if rt.Attempts > 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(rt.Attempts), 10)
	}
	if rt.FallbackFrom != "" {
		b = append(b, `,"fallback_from":`...)
		b = appendJSONString(b, rt.FallbackFrom)
	}
	if len(rt.ResponseChecks) > 0 {
		b = appendResponseChecks(b, rt.ResponseChecks)
	}
	return append(b, '}')
}

// appendJSONString appends s as json.Marshal writes a string: plain ASCII
// directly, anything that needs escaping through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends a finite f as json.Marshal writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-7, not e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
