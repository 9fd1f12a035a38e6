package extproc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/replay"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

// Behind Envoy, a decision with router_replay leaves its decision record
// once the answer went back, as through the gateway.
func TestReplayRecordBehindEnvoy(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := replay.New(replay.Options{Store: st})
	defer rec.Close()
	e := newEnv(t, func(o *envOptions) {
		o.opts = extproc.Options{Replays: rec}
		o.edit = func(y string) string {
			return strings.Replace(y, "          - {model: small, use_reasoning: false}\n", "          - {model: small, use_reasoning: false}\n        plugins: [{type: router_replay, configuration: {record_prompt: true}}]\n", 1)
		}
	})
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("hello there"), "x-request-id", "envoy-1"))
	if err != nil || out.Upstream == nil {
		t.Fatalf("%v %+v", err, out)
	}
	if _, err := s.SendResponse(e.answer(out.Upstream, 0)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var got []storage.Replay
	eventually(t, "the decision record", func() bool {
		_ = rec.Flush(context.Background())
		got = got[:0]
		_ = st.ScanReplays(context.Background(), storage.ReplayQuery{RequestID: "envoy-1"}, 10, func(r storage.Replay) error { got = append(got, r); return nil })
		return len(got) == 1
	})
	r, err := replay.Decode(got[0].Record)
	if err != nil {
		t.Fatal(err)
	}
	if r.Decision != "general" || r.Model != "small" || r.Status != 200 || r.Usage == nil || r.Input == nil || r.Input.Text != "hello there" {
		t.Fatalf("record %s", got[0].Record)
	}
}
