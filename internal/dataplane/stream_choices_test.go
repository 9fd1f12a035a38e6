package dataplane

import (
	"encoding/json"
	"reflect"
	"testing"
)

var choiceSamples = []string{
	`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`,
	`[{"index":0,"delta":{"content":"Hello, \"world\"\n\u00e9\ud83d\ude00"},"logprobs":null,"finish_reason":null}]`,
	`[{"index":1,"delta":{},"finish_reason":"stop"},{"index":0,"delta":{"content":null,"refusal":"no"}}]`,
	`[{"index":0,"delta":{"reasoning_content":"think"},"finish_reason":null}]`,
	`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]`,
	`[{"Index":2,"Delta":{"Content":"case"}}]`,
	`[{"index":0,"delta":{"cont\u0065nt":"escaped key"}}]`,
	`[{"index":0,"delta":{"content":"a"},"delta":{"content":"b"}}]`,
	`[{"index":1.5,"delta":{}}]`,
	`[{"index":0,"delta":{"content":5}}]`,
	`[{"index":0,"delta":null,"finish_reason":null,"extra":{"x":[1,2]}}]`,
	`[]`, `null`, `[1]`, `[{"index":0,"delta":{"content":"caf` + "\xe9" + `"}}]`,
	`[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":-1e-3}]}}]`,
	`[{"index":0,"delta":{"content":"bad"},"n":1.2.3}]`,
}

// TestDecodeChoicesMatchesEncodingJSON: the fast path gives exactly what
// json.Unmarshal gives, error or not, reusing a dirty backing array.
func TestDecodeChoicesMatchesEncodingJSON(t *testing.T) {
	for _, raw := range choiceSamples {
		checkChoices(t, []byte(raw))
	}
}

func FuzzDecodeChoices(f *testing.F) {
	for _, s := range choiceSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkChoices(t, raw) })
}

func checkChoices(t *testing.T, raw []byte) {
	t.Helper()
	var want []streamChoice
	wantErr := json.Unmarshal(raw, &want)
	dirty := make([]streamChoice, 0, 4)
	s := "stale"
	dirty = append(dirty, streamChoice{Index: 9, FinishReason: &s})
	clear(dirty[:cap(dirty)])
	got, err := decodeChoices(raw, dirty[:0])
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, encoding/json %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(normal(got), normal(want)) {
		t.Fatalf("%s:\n got %#v\nwant %#v", raw, got, want)
	}
}

// normal makes nil and empty slices compare equal.
func normal(c []streamChoice) []streamChoice {
	if len(c) == 0 {
		return nil
	}
	for i := range c {
		if len(c[i].Delta.ToolCalls) == 0 {
			c[i].Delta.ToolCalls = nil
		}
	}
	return c
}
