package gateway

import (
	"strings"
	"testing"
)

// TestUnsetBackendKeyFailsClosed: a backend whose api_key_env is not set is
// never called, neither without a key nor with the client's: the answer is
// a 502 naming the variable.
func TestUnsetBackendKeyFailsClosed(t *testing.T) {
	t.Setenv("JUNCTION_TEST_CODER_KEY", "")
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, "provider: vllm,", "provider: vllm, api_key_env: JUNCTION_TEST_CODER_KEY,", 1)
	}))
	resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"python please"}]}`,
		"Authorization", "Bearer client-secret")
	if resp.StatusCode != 502 || !strings.Contains(string(b), "JUNCTION_TEST_CODER_KEY") {
		t.Fatalf("status %d %s, want 502 naming JUNCTION_TEST_CODER_KEY", resp.StatusCode, b)
	}
	if decodeError(t, b).Error.Type == "" {
		t.Fatal("no error type")
	}
	if n := e.ups["coder"].count(); n != 0 {
		t.Fatalf("the backend without its key was called %d time(s)", n)
	}
}

// TestClientCredentialsNeedForwardClientAuth: on a listener without
// api_keys the client's credentials reach a backend only when its ref says
// forward_client_auth: true.
func TestClientCredentialsNeedForwardClientAuth(t *testing.T) {
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, "provider: vllm,", "provider: vllm, forward_client_auth: true,", 1)
	}))
	send := func(text string) {
		t.Helper()
		resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"`+text+`"}]}`,
			"Authorization", "Bearer client-secret", "X-Api-Key", "client-x", "Api-Key", "client-azure")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d %s", text, resp.StatusCode, b)
		}
	}
	send("hello")
	got := e.ups["small"].last(t).Header
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		if v := got.Get(k); v != "" {
			t.Errorf("%s %q reached a backend without forward_client_auth", k, v)
		}
	}
	send("python please")
	if a := e.ups["coder"].last(t).Header.Get("Authorization"); a != "Bearer client-secret" {
		t.Errorf("forward_client_auth backend got Authorization %q, want the client's", a)
	}
}
