package extproc_test

import (
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/extproc/envoytest"
)

// TestUnsetBackendKeyAnswersBehindEnvoy: a backend whose api_key_env is not
// set is answered 502 naming the variable; the client's Authorization
// (which Envoy would forward as it came) never goes on to it.
func TestUnsetBackendKeyAnswersBehindEnvoy(t *testing.T) {
	e := newEnv(t)
	t.Setenv("EXTPROC_TEST_BIG_KEY", "") // removed after serve started
	out, err := e.open(envoytest.Standard).SendRequest(chat(userBody("please prove that 1+1=2"), "authorization", "Bearer client"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate == nil {
		t.Fatalf("forwarded to the backend without its key, with authorization %q", out.Upstream.Headers.Values("authorization"))
	}
	if code := out.Immediate.GetStatus().GetCode(); code != 502 || !strings.Contains(string(out.Immediate.GetBody()), "EXTPROC_TEST_BIG_KEY") {
		t.Fatalf("answer %d %s, want 502 naming EXTPROC_TEST_BIG_KEY", code, out.Immediate.GetBody())
	}
}

// TestClientCredentialsRemovedBehindEnvoy: Envoy forwards the client's
// headers unless ext_proc removes them; credentials are removed unless the
// backend says forward_client_auth: true.
func TestClientCredentialsRemovedBehindEnvoy(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.edit = func(y string) string {
			return strings.Replace(y, "provider: vllm,", "provider: vllm, forward_client_auth: true,", 1)
		}
	})
	send := func(text string) *envoytest.Message {
		t.Helper()
		out, err := e.open(envoytest.Standard).SendRequest(chat(userBody(text),
			"authorization", "Bearer client", "x-api-key", "client-x", "api-key", "client-azure", "x-custom", "kept"))
		if err != nil {
			t.Fatal(err)
		}
		if out.Immediate != nil {
			t.Fatalf("%s: answered directly: %s", text, out.Immediate.GetBody())
		}
		return out.Upstream
	}
	up := send("hello")
	for _, k := range []string{"authorization", "x-api-key", "api-key"} {
		if v := up.Headers.Values(k); len(v) > 0 {
			t.Errorf("%s %q reached a backend without forward_client_auth", k, v)
		}
	}
	if v := up.Headers.Values("x-custom"); len(v) != 1 || v[0] != "kept" {
		t.Errorf("x-custom %q, want the client's other headers kept", v)
	}
	up = send("python please")
	if v := up.Headers.Values("authorization"); len(v) != 1 || v[0] != "Bearer client" {
		t.Errorf("forward_client_auth backend got authorization %q, want the client's", v)
	}
}
