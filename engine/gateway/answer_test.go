package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
)

// referenceRelay is how relayJSON read an answer before the splice-only
// reading: decode every top-level member, then add routing_metadata. The
// tests hold parseAnswer + withRoutingMetadata to it byte for byte.
func referenceRelay(body []byte, md json.RawMessage) ([]byte, *cost.Usage) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil || fields == nil {
		return body, nil
	}
	var u *cost.Usage
	if raw, ok := fields["usage"]; ok {
		_ = json.Unmarshal(raw, &u)
	}
	if _, ok := fields["routing_metadata"]; ok {
		fields["routing_metadata"] = md
		if b, err := json.Marshal(fields); err == nil {
			return b, u
		}
		return body, u
	}
	trimmed := bytes.TrimRight(body, " \t\r\n")
	end := len(trimmed) - 1
	if end < 0 || trimmed[end] != '}' {
		return body, u
	}
	out := append([]byte(nil), trimmed[:end]...)
	if len(fields) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"routing_metadata":`...)
	out = append(out, md...)
	return append(out, '}', '\n'), u
}

var answerCorpus = []string{
	`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`,
	"{\"id\":\"c\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n",
	"{\"id\":\"c\"} \r\n\t ",
	"  \n{\"id\":\"c\"}",
	`{}`,
	" { } \n",
	`{"choices":[{"message":{"content":"} \" { usage","usage":{"prompt_tokens":99}}}],"nested":{"routing_metadata":{"x":1},"usage":7}}`,
	`{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2,"completion_tokens":3}}`,
	`{"us\u0061ge":{"completion_tokens":4}}`,
	`{"usage":null}`,
	`{"usage":"lots"}`,
	`{"usage":{"prompt_tokens":"x"}}`,
	`{"id":"c","routing_metadata":{"selected_model":"elsewhere"},"usage":{"prompt_tokens":1}}`,
	`{"id":"c","routing_m\u0065tadata":1}`,
	`[{"id":"c"}]`,
	`"just a string"`,
	`42`,
	`null`,
	`true`,
	`{"id":"c"`,
	`{"id":"c"}}`,
	`{"id":"c"} {"id":"d"}`,
	`{"id":"c",}`,
	``,
	"{\"text\":\"caf\xe9\"}",
	`{"a":[1,2,{"b":[[],{}]}],"c":-1.5e3,"d":true,"e":null}`,
}

func TestAnswerSpliceMatchesDecoding(t *testing.T) {
	md := json.RawMessage(`{"selected_model":"small","confidence":1,"processing_time_ms":0,"cache_hit":false,"security_checks":{"pii_detected":false,"jailbreak_detected":false}}`)
	for _, body := range answerCorpus {
		wantBody, wantUsage := referenceRelay([]byte(body), md)
		a := parseAnswer([]byte(body))
		gotBody := []byte(body)
		if a.object {
			gotBody = withRoutingMetadata(gotBody, a, md)
		}
		if !bytes.Equal(gotBody, wantBody) {
			t.Errorf("%q:\n got  %s\n want %s", body, gotBody, wantBody)
		}
		if !reflect.DeepEqual(a.usage, wantUsage) {
			t.Errorf("%q: usage %+v, want %+v", body, a.usage, wantUsage)
		}
		if a.object && !json.Valid(gotBody) {
			t.Errorf("%q: spliced answer is not valid JSON: %s", body, gotBody)
		}
	}
}

func TestAnswerSplice(t *testing.T) {
	md := json.RawMessage(`{"m":1}`)
	tests := []struct {
		name, body, want string
	}{
		{"appended last, upstream bytes kept", `{"b":1, "a" : [ 2 ]}`, `{"b":1, "a" : [ 2 ],"routing_metadata":{"m":1}}` + "\n"},
		{"trailing whitespace", "{\"a\":1}\n\n  ", `{"a":1,"routing_metadata":{"m":1}}` + "\n"},
		{"empty object", `{ }`, `{ "routing_metadata":{"m":1}}` + "\n"},
		{"nested routing_metadata is not ours to replace", `{"x":{"routing_metadata":0}}`, `{"x":{"routing_metadata":0},"routing_metadata":{"m":1}}` + "\n"},
		{"existing one replaced", `{"routing_metadata":{"old":true},"a":1}`, `{"a":1,"routing_metadata":{"m":1}}`},
		{"array relayed untouched", `[1]`, `[1]`},
		{"invalid relayed untouched", `{"a":`, `{"a":`},
		{"null relayed untouched", `null`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := parseAnswer([]byte(tt.body))
			got := []byte(tt.body)
			if a.object {
				got = withRoutingMetadata(got, a, md)
			}
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	if got := withRoutingMetadata([]byte(`{"a":1}`), parseAnswer([]byte(`{"a":1}`)), nil); string(got) != `{"a":1}` {
		t.Fatalf("without metadata the answer must stay as it is, got %s", got)
	}
}

func FuzzAnswerSplice(f *testing.F) {
	for _, s := range answerCorpus {
		f.Add([]byte(s))
	}
	md := json.RawMessage(`{"selected_model":"m"}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		wantBody, wantUsage := referenceRelay(bytes.Clone(body), md)
		a := parseAnswer(body)
		got := body
		if a.object {
			got = withRoutingMetadata(bytes.Clone(body), a, md)
		}
		if !bytes.Equal(got, wantBody) || !reflect.DeepEqual(a.usage, wantUsage) {
			t.Fatalf("%q: got %s %+v, want %s %+v", body, got, a.usage, wantBody, wantUsage)
		}
	})
}

func TestRoutingMetadataMatchesEncodingJSON(t *testing.T) {
	for _, model := range []string{"small", "", "a\"b", "<big>&co", "модель", "tab\there"} {
		for _, conf := range []float64{0, 1, 0.5, 0.123456789, 1e-7, 3e-9, 2.5e21, -0.25, math.Copysign(0, -1)} {
			for _, d := range []time.Duration{0, 1500 * time.Microsecond, 90 * time.Second} {
				rt := &routing{
					res:         &engine.Result{Model: model, Confidence: conf, PIIDetected: conf > 0.4, JailbreakDetected: d > time.Second},
					processing:  d,
					cacheStatus: map[bool]string{true: cacheHit, false: cacheMiss}[conf == 1],
				}
				want, err := json.Marshal(metadataOf(rt))
				if err != nil {
					t.Fatal(err)
				}
				if got := routingMetadata(rt); !bytes.Equal(got, want) {
					t.Errorf("got  %s\nwant %s", got, want)
				}
			}
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		rt := &routing{res: &engine.Result{Model: "m", Confidence: bad}}
		if got := routingMetadata(rt); got != nil {
			t.Errorf("confidence %v encoded as %s", bad, got)
		}
	}
}
