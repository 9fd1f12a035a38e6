package dataplane_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/recipes"
)

// headerRunner records the headers the plugin stage is given and sets one.
type headerRunner struct{ seen http.Header }

func (r *headerRunner) Request(_ context.Context, refs []recipes.PluginRef, req *plugin.Request) (plugin.Outcome, error) {
	r.seen = req.Header.Clone()
	req.Header.Set("X-Changed", "by-plugin")
	out := plugin.Outcome{}
	for _, ref := range refs {
		out.Reports = append(out.Reports, plugin.Report{Type: ref.Type, Status: plugin.StatusApplied})
	}
	return out, nil
}

// The gateway lends the client's headers to the plugin stage (a cache bypass
// header is the client's), less credentials; only what a plugin changed is
// forwarded.
func TestClientHeadersAreLentToPlugins(t *testing.T) {
	t.Setenv("DATAPLANE_TEST_KEY", "sk-env")
	r := &headerRunner{}
	e := newEnv(t, r)
	client := http.Header{
		"X-Cache-Bypass": {"true"}, "X-Changed": {"by-client"}, "Authorization": {"Bearer gateway-key"},
		"Cookie": {"s=1"}, "Accept": {"text/plain"},
	}
	out := e.plane.Run(context.Background(), &dataplane.Request{
		Gen: e.gen, ID: "req-1", Start: time.Now(), Body: []byte(userBody("prove it")), ClientHeader: client,
	})
	if out.Answer != nil {
		t.Fatalf("answered: %s", out.Answer.Body)
	}
	if r.seen.Get("X-Cache-Bypass") != "true" || r.seen.Get("X-Changed") != "by-client" {
		t.Fatalf("plugins saw %v", r.seen)
	}
	if r.seen.Get("Authorization") == "Bearer gateway-key" || r.seen.Get("Cookie") != "" || r.seen.Get("Accept") != "application/json" {
		t.Fatalf("plugins saw credentials, or a client header over the upstream's: %v", r.seen)
	}
	if out.Header.Get("X-Cache-Bypass") != "" || out.Header.Get("X-Changed") != "by-plugin" || out.Header.Get("Authorization") != "Bearer sk-env" {
		t.Fatalf("forwarded headers %v", out.Header)
	}
	if client.Get("X-Changed") != "by-client" {
		t.Fatal("the client's headers were changed")
	}
}
