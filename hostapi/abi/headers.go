package abi

import "strings"

// The rules for the upstream headers a plugin may change: the host enforces
// them on every mutation, and plugins that take header names in their
// configuration (header_mutation) check them up front with the same code.

// ForbiddenHeader says why a plugin may not change the upstream header canon
// (in canonical form, X-Route-Family), or "" when it may.
func ForbiddenHeader(canon string) string {
	switch canon {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return "it is a hop-by-hop header, which belongs to one connection and is never forwarded"
	case "Host":
		return "the upstream host comes from the model's backend_refs"
	case "Content-Length":
		return "the gateway sets it from the body it sends"
	case "Authorization":
		return "upstream credentials come from the backend's api_key_env"
	}
	return ""
}

// ValidHeaderName reports whether name is a non-empty HTTP token (letters,
// digits and !#$%&'*+-.^_`|~).
func ValidHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ValidHeaderValue reports whether v has no control characters other than
// horizontal tab.
func ValidHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
