package abi

import "testing"

func TestHeaderRules(t *testing.T) {
	for _, n := range []string{"X-Route", "x_a!#$%&'*+-.^`|~1"} {
		if !ValidHeaderName(n) {
			t.Errorf("%q refused", n)
		}
	}
	for _, n := range []string{"", "X Route", "X:Route", "Ré"} {
		if ValidHeaderName(n) {
			t.Errorf("%q accepted", n)
		}
	}
	if !ValidHeaderValue("a\tb c") || ValidHeaderValue("a\nb") || ValidHeaderValue("a\x7f") {
		t.Error("header values")
	}
	for _, h := range []string{"Host", "Authorization", "Content-Length", "Transfer-Encoding", "Te"} {
		if ForbiddenHeader(h) == "" {
			t.Errorf("%s allowed", h)
		}
	}
	if ForbiddenHeader("X-Tier") != "" {
		t.Error("X-Tier forbidden")
	}
}
