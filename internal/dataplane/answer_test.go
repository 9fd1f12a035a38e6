package dataplane_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane"
)

type event struct{ raw, data string }

func scanAll(t *testing.T, pieces [][]byte) (events []event, tail []byte) {
	t.Helper()
	var sc dataplane.EventScanner
	for _, p := range pieces {
		err := sc.Feed(p, func(ev, data []byte) bool {
			e := event{raw: string(ev)}
			if data != nil {
				e.data = "=" + string(data)
			}
			events = append(events, e)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if ev, data, ok := sc.Flush(); ok {
		e := event{raw: string(ev)}
		if data != nil {
			e.data = "=" + string(data)
		}
		events = append(events, e)
	}
	return events, sc.Pending()
}

func TestEventScannerSplitsAnywhere(t *testing.T) {
	stream := []byte("\n\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: line1\r\ndata: line2\r\n\r\nevent: x\ndata:nospace\n\ndata: [DONE]")
	whole, _ := scanAll(t, [][]byte{stream})
	want := []event{
		{`data: {"a":1}` + "\n\n", `={"a":1}`},
		{": keep-alive\n\n", ""},
		{"data: line1\ndata: line2\n\n", "=line1\nline2"},
		{"event: x\ndata:nospace\n\n", "=nospace"},
		{"data: [DONE]\n\n", "=[DONE]"},
	}
	if len(whole) != len(want) {
		t.Fatalf("events %q", whole)
	}
	for i := range want {
		if whole[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, whole[i], want[i])
		}
	}
	for i := 0; i <= len(stream); i++ {
		got, _ := scanAll(t, [][]byte{stream[:i], stream[i:]})
		if len(got) != len(want) {
			t.Fatalf("split at %d: %q", i, got)
		}
		for j := range want {
			if got[j] != want[j] {
				t.Errorf("split at %d, event %d: %q", i, j, got[j])
			}
		}
	}
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 200; n++ {
		var pieces [][]byte
		for rest := stream; len(rest) > 0; {
			k := 1 + rng.Intn(len(rest))
			pieces = append(pieces, append([]byte(nil), rest[:k]...))
			rest = rest[k:]
		}
		got, _ := scanAll(t, pieces)
		if len(got) != len(want) {
			t.Fatalf("pieces %q: %q", pieces, got)
		}
	}
}

func TestEventScannerBoundsTheTail(t *testing.T) {
	var sc dataplane.EventScanner
	big := bytes.Repeat([]byte("x"), dataplane.MaxEventBytes/4)
	var err error
	for i := 0; i < 5 && err == nil; i++ {
		err = sc.Feed(big, func(_, _ []byte) bool { return true })
	}
	if err != dataplane.ErrEventTooLarge || len(sc.Pending()) != 0 {
		t.Fatalf("err %v, pending %d", err, len(sc.Pending()))
	}
}

func TestParseAnswerAndMetadata(t *testing.T) {
	rt := &dataplane.Routing{Result: &engine.Result{Model: "big", Confidence: 0.5, PIIDetected: true}}
	md := rt.Metadata()
	if string(md) != `{"selected_model":"big","confidence":0.5,"processing_time_ms":0,"cache_hit":false,"security_checks":{"pii_detected":true,"jailbreak_detected":false}}` {
		t.Fatalf("metadata %s", md)
	}
	body := []byte(`{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}` + "\n")
	a := dataplane.ParseAnswer(body)
	if !a.Object || a.Empty || a.HasMetadata || a.Usage == nil || a.Usage.CompletionTokens != 4 {
		t.Fatalf("%+v", a)
	}
	got := dataplane.WithRoutingMetadata(body, a, md)
	if string(got) != `{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7},"routing_metadata":`+string(md)+"}\n" {
		t.Errorf("spliced %s", got)
	}
	if !strings.HasSuffix(string(body), "}\n") || bytes.Contains(body, []byte("routing_metadata")) {
		t.Errorf("the input was modified: %s", body)
	}
	// An answer from another Junction has its routing_metadata replaced.
	prev := []byte(`{"routing_metadata":{"selected_model":"other"},"id":"y"}`)
	got = dataplane.WithRoutingMetadata(prev, dataplane.ParseAnswer(prev), md)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(got, &m); err != nil || string(m["routing_metadata"]) != string(md) {
		t.Errorf("replaced %s", got)
	}
	for _, s := range []string{`{}`, `[1]`, `not json`, ``} {
		a := dataplane.ParseAnswer([]byte(s))
		out := dataplane.WithRoutingMetadata([]byte(s), a, md)
		if s == `{}` {
			if string(out) != `{"routing_metadata":`+string(md)+"}\n" {
				t.Errorf("empty object: %s", out)
			}
		} else if string(out) != s {
			t.Errorf("%q changed to %s", s, out)
		}
	}
}

func TestChunkUsage(t *testing.T) {
	if u, only := dataplane.ChunkUsage([]byte(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`)); u == nil || !only || u.TotalTokens != 3 {
		t.Errorf("usage chunk: %+v %v", u, only)
	}
	if u, only := dataplane.ChunkUsage([]byte(`{"choices":[{"delta":{}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`)); u == nil || only {
		t.Errorf("choices with usage: %+v %v", u, only)
	}
	if u, _ := dataplane.ChunkUsage([]byte(`{"choices":[{"delta":{"content":"hi"}}]}`)); u != nil {
		t.Error("no usage")
	}
	if !dataplane.IsEventStream("text/event-stream; charset=utf-8") || !dataplane.IsEventStream("Text/Event-Stream") || dataplane.IsEventStream("application/json") {
		t.Error("IsEventStream")
	}
}

func TestMetadataMatchesEncodingJSON(t *testing.T) {
	type securityMeta struct {
		PIIDetected       bool `json:"pii_detected"`
		JailbreakDetected bool `json:"jailbreak_detected"`
	}
	type metadata struct {
		SelectedModel    string       `json:"selected_model"`
		Confidence       float64      `json:"confidence"`
		ProcessingTimeMS int64        `json:"processing_time_ms"`
		CacheHit         bool         `json:"cache_hit"`
		SecurityChecks   securityMeta `json:"security_checks"`
		Attempts         int          `json:"attempts,omitempty"`
		FallbackFrom     string       `json:"fallback_from,omitempty"`
	}
	for _, model := range []string{"small", "", "a\"b", "<big>&co", "модель", "tab\there", "\xff", "a\u2028b"} {
		for _, conf := range []float64{0, 1, 0.5, 0.123456789, 1e-7, 3e-9, 2.5e21, 1e21, 999999999999999999999, -0.25, math.Copysign(0, -1), 1e-6} {
			for _, d := range []time.Duration{0, 1500 * time.Microsecond, 90 * time.Second} {
				attempts, from := int(d/time.Second), ""
				if attempts > 1 {
					from = model
				}
				rt := &dataplane.Routing{Result: &engine.Result{Model: model, Confidence: conf, PIIDetected: conf > 0.4, JailbreakDetected: d > time.Second},
					Processing: d, CacheStatus: map[bool]string{true: dataplane.CacheHit, false: ""}[conf == 1], Attempts: attempts, FallbackFrom: from}
				want, _ := json.Marshal(metadata{model, conf, d.Round(time.Millisecond).Milliseconds(), conf == 1, securityMeta{conf > 0.4, d > time.Second}, attempts, from})
				if got := rt.Metadata(); !bytes.Equal(got, want) {
					t.Errorf("got  %s\nwant %s", got, want)
				}
			}
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := (&dataplane.Routing{Result: &engine.Result{Confidence: bad}}).Metadata(); got != nil {
			t.Errorf("confidence %v encoded as %s", bad, got)
		}
	}
}

// FuzzEventScanner: however a stream is cut into pieces, the scanner sees
// the events it sees when the stream comes whole.
func FuzzEventScanner(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"), uint8(3), uint8(7))
	f.Add([]byte(": ping\r\n\r\ndata: x\r\ndata: y\r\n\r\n\n\ndata: z"), uint8(1), uint8(2))
	f.Add([]byte("\n\n\n"), uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, a, b uint8) {
		whole, _ := scanAll(t, [][]byte{stream})
		i, j := int(a)%(len(stream)+1), int(b)%(len(stream)+1)
		if i > j {
			i, j = j, i
		}
		cut, _ := scanAll(t, [][]byte{stream[:i], stream[i:j], stream[j:]})
		if len(cut) != len(whole) {
			t.Fatalf("%d events whole, %d cut at %d,%d", len(whole), len(cut), i, j)
		}
		for k := range whole {
			if whole[k] != cut[k] {
				t.Fatalf("event %d: %q whole, %q cut", k, whole[k], cut[k])
			}
		}
	})
}
