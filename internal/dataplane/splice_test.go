package dataplane_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/internal/dataplane"
)

// referenceRelay is how the gateway read an answer before the splice-only
// reading: decode every top-level member, then add routing_metadata. The
// tests hold ParseAnswer + WithRoutingMetadata (and its in-place form,
// SpliceRoutingMetadata) to it byte for byte.
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
		a := dataplane.ParseAnswer([]byte(body))
		gotBody := []byte(body)
		if a.Object {
			gotBody = dataplane.WithRoutingMetadata(gotBody, a, md)
			if spliced := dataplane.SpliceRoutingMetadata([]byte(body), a, md); !bytes.Equal(spliced, gotBody) {
				t.Errorf("%q: in place %s, copied %s", body, spliced, gotBody)
			}
		}
		if !bytes.Equal(gotBody, wantBody) {
			t.Errorf("%q:\n got  %s\n want %s", body, gotBody, wantBody)
		}
		if !reflect.DeepEqual(a.Usage, wantUsage) {
			t.Errorf("%q: usage %+v, want %+v", body, a.Usage, wantUsage)
		}
		if a.Object && !json.Valid(gotBody) {
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
			a := dataplane.ParseAnswer([]byte(tt.body))
			got := []byte(tt.body)
			if a.Object {
				got = dataplane.SpliceRoutingMetadata(got, a, md)
			}
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	if got := dataplane.WithRoutingMetadata([]byte(`{"a":1}`), dataplane.ParseAnswer([]byte(`{"a":1}`)), nil); string(got) != `{"a":1}` {
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
		a := dataplane.ParseAnswer(body)
		got := body
		if a.Object {
			got = dataplane.WithRoutingMetadata(body, a, md)
			if spliced := dataplane.SpliceRoutingMetadata(bytes.Clone(body), a, md); !bytes.Equal(spliced, got) {
				t.Fatalf("%q: in place %s, copied %s", body, spliced, got)
			}
		}
		if !bytes.Equal(got, wantBody) || !reflect.DeepEqual(a.Usage, wantUsage) {
			t.Fatalf("%q: got %s %+v, want %s %+v", body, got, a.Usage, wantBody, wantUsage)
		}
	})
}
