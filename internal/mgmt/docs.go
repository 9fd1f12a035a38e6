package mgmt

import (
	_ "embed"
	"net/http"
)

// docsHTML is the API browser: one self-contained page (no external scripts,
// styles or fonts) that renders /openapi.json and can send requests.
//
//go:embed assets/docs.html
var docsHTML []byte

func (s *Server) docs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
	_, _ = w.Write(docsHTML)
}
