//go:build !race

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// plugin preview --pii gives the module the spans routing would have
// detected, by running the router's detector or as given.
func TestPluginPreviewPII(t *testing.T) {
	wasm := filepath.Join(t.TempDir(), "piiredact.wasm")
	if _, err := buildPluginTo("../../examples/plugins/piiredact", wasm); err != nil {
		t.Fatal(err)
	}
	req := `{"model":"m","messages":[{"role":"user","content":"mail ann@example.org"}]}`
	args := []string{"plugin", "preview", "--module", wasm, "--signal", "pii:contact", "--config", "{}", "--request", req}
	code, out, errOut := runCLI(t, append(args, "--pii", "detect")...)
	if code != 0 || !strings.Contains(out, `"content": "mail [EMAIL]"`) || !strings.Contains(out, `"masked.EMAIL": "1"`) {
		t.Fatalf("--pii detect: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append(args, "--pii", `{"spans":[{"message":0,"start":0,"end":4,"type":"person","score":0.9}]}`)...)
	if code != 0 || !strings.Contains(out, `"content": "[PERSON] ann@example.org"`) {
		t.Fatalf("--pii spans: %d\n%s%s", code, out, errOut)
	}
	for pii, want := range map[string]string{
		`{"spans":[{"message":0,"start":0,"end":4,"type":"DNA"}]}`:   `spans[0].type "DNA"`,
		`{"spans":[{"message":3,"start":0,"end":4,"type":"EMAIL"}]}`: "outside the request's messages",
		`{"span":[]}`: `unknown field "span"`,
	} {
		if code, out, errOut := runCLI(t, append(args, "--pii", pii)...); code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("--pii %s: %d, want an error with %q\n%s%s", pii, code, want, out, errOut)
		}
	}
}
