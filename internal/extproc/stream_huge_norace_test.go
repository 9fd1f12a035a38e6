//go:build !race

// Left out of race builds: a stream past the response phase's 64 MiB bound
// takes seconds to relay under the race detector (make test runs it without).

package extproc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/plugin/recorder"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/extproc/envoytest"
)

// Behind Envoy, an answer past the response phase's bound is relayed whole but
// not given to plugins, and counted.
func TestHugeStreamSkipsResponsePhaseBehindEnvoy(t *testing.T) {
	rec := &recorder.Recorder{}
	e := newEnv(t, withRecorded(rec))
	skipped := func(reason string) float64 {
		return e.scalar("junction_response_phase_skipped_total", map[string]string{"reason": reason})
	}

	// Past the bound: relayed whole, not given to plugins. (Full duplex is
	// left out here: envoytest sends every piece before reading the answers,
	// which gRPC's flow control stalls on at this size; Envoy does not.)
	for _, name := range []string{"streamed", "buffered"} {
		s := e.open(answerModes[name])
		if _, err := s.SendRequest(chat(userBody("recordme huge", `"stream":true`))); err != nil {
			t.Fatal(err)
		}
		piece := strings.Repeat("x", 1<<20)
		event := []byte(fmt.Sprintf("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", piece))
		resp := envoytest.Response{Status: 200, Headers: envoytest.H("content-type", "text/event-stream")}
		for i := 0; i < dataplane.MaxResponsePhaseBody/len(piece)+2; i++ {
			resp.Pieces = append(resp.Pieces, event)
		}
		resp.Pieces = append(resp.Pieces, []byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
		ro, err := s.SendResponse(resp)
		if err != nil || ro.Downstream == nil || len(ro.Downstream.Body) < dataplane.MaxResponsePhaseBody {
			t.Fatalf("%s: %v", name, err)
		}
		s.Close()
	}
	eventually(t, "the huge streams counted", func() bool { return skipped(dataplane.SkipTooLarge) == 2 })

	if got := rec.Answers(); len(got) != 0 {
		t.Fatalf("the response phase ran for a stream past its bound")
	}
}
