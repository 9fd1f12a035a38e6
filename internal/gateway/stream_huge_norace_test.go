//go:build !race

// Left out of race builds: a stream past the response phase's 64 MiB bound
// takes seconds to relay under the race detector (make test runs it without).

package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/plugin/recorder"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/plugin"
)

// An answer past the response phase's bound is relayed whole but not given to
// plugins, and counted.
func TestHugeStreamSkipsResponsePhase(t *testing.T) {
	rec := &recorder.Recorder{}
	e := newEnv(t, withRunner(plugin.New(rec)), withRecordedDecision())
	skipped := func(reason string) float64 {
		return e.scalar("junction_response_phase_skipped_total", map[string]string{"reason": reason})
	}
	req := `{"model":"MoM","stream":true,"messages":[{"role":"user","content":"recordme please"}]}`

	// An answer past the bound is relayed whole but not given to plugins.
	piece := strings.Repeat("x", 1<<20)
	events := dataplane.MaxResponsePhaseBody/len(piece) + 2
	e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < events; i++ {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", piece)
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	hresp, err := http.Post(e.gw.URL+"/v1/chat/completions", "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, hresp.Body)
	hresp.Body.Close()
	if n < int64(dataplane.MaxResponsePhaseBody) {
		t.Fatalf("the client got %d bytes of a stream over %d", n, dataplane.MaxResponsePhaseBody)
	}
	waitFor(t, "the huge stream counted", func() bool { return skipped(dataplane.SkipTooLarge) == 1 })

	if got := rec.Answers(); len(got) != 0 {
		t.Fatalf("the response phase ran for a stream past its bound")
	}
}
