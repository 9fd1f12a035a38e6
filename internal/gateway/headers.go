package gateway

import (
	"net/http"
)

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
