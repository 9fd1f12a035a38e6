package dataplane

import (
	"encoding/json"
	"strings"
	"testing"
)

func chunks(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, c := range s {
		out[i] = []byte(c)
	}
	return out
}

// A stream of content, tool-call deltas (two calls, interleaved, arguments
// in pieces), a finish chunk and include_usage's usage chunk becomes the
// chat.completion a non-streamed request gets.
func TestAssembleMergesChunks(t *testing.T) {
	got, err := assembleChunks(chunks(
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"lo \"x\" <b>"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"b","arguments":""}}]}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"a","arguments":"{\"q\":"}}]}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
		`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
		`[DONE]`)...)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello \"x\" \u003cb\u003e","tool_calls":[{"id":"call_a","type":"function","function":{"name":"a","arguments":"{\"q\":1}"}},{"id":"call_b","type":"function","function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8},"system_fingerprint":"fp"}`
	if string(got) != want {
		t.Fatalf("assembled\n%s\nwant\n%s", got, want)
	}
	var v struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal(got, &v); err != nil || v.Choices[0].Message.Content != `Hello "x" <b>` {
		t.Fatalf("content does not round-trip: %v %+v", err, v)
	}
}

// Choices are merged per index and listed in index order; reasoning_content
// is kept; a choice without content deltas has null content.
func TestAssembleChoicesByIndex(t *testing.T) {
	got, err := assembleChunks(chunks(
		`{"id":"x","created":1,"model":"m","choices":[{"index":1,"delta":{"role":"assistant","content":"B"}},{"index":0,"delta":{"role":"assistant","reasoning_content":"think"}}]}`,
		`{"id":"x","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"A"},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"length"}]}`,
		`{"id":"x","created":1,"model":"m","choices":[{"index":2,"delta":{"role":"assistant"},"finish_reason":"stop"}]}`,
	)...)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[` +
		`{"index":0,"message":{"role":"assistant","content":"A","reasoning_content":"think"},"finish_reason":"stop"},` +
		`{"index":1,"message":{"role":"assistant","content":"B"},"finish_reason":"length"},` +
		`{"index":2,"message":{"role":"assistant","content":null},"finish_reason":"stop"}]}`
	if string(got) != want {
		t.Fatalf("assembled\n%s\nwant\n%s", got, want)
	}
}

func TestAssembleRefusesErrorsAndNonJSON(t *testing.T) {
	for name, c := range map[string]string{
		"error event": `{"error":{"message":"overloaded","type":"server_error"}}`,
		"not JSON":    `{"id":`,
	} {
		_, err := assembleChunks([]byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}`), []byte(c))
		if err == nil || !strings.Contains(err.Error(), "chunk 1") {
			t.Errorf("%s: err = %v, want an error naming chunk 1", name, err)
		}
	}
}

// The collector holds at most its limit; past it the chunks are dropped and
// the answer cannot be assembled. Nothing after [DONE] is kept.
func TestStreamAnswerBound(t *testing.T) {
	s := &StreamAnswer{limit: 100}
	c := []byte(`{"choices":[{"index":0,"delta":{"content":"0123456789"}}]}`) // 58 bytes
	s.Chunk(c)
	if len(s.buf) == 0 || s.over {
		t.Fatalf("first chunk: size %d over %v", len(s.buf), s.over)
	}
	s.Chunk(c)
	if !s.over || len(s.buf) != 0 {
		t.Fatalf("past the limit: size %d over %v", len(s.buf), s.over)
	}
	s.Chunk([]byte("[DONE]"))
	if !s.done {
		t.Fatal("[DONE] not seen")
	}
	if _, err := s.Assemble(); err == nil {
		t.Fatal("an answer past the limit was assembled")
	}

	s = &StreamAnswer{limit: 1000}
	s.Chunk(c)
	s.Chunk([]byte("[DONE]"))
	n := len(s.buf)
	s.Chunk(c)
	if len(s.buf) != n {
		t.Fatal("a chunk after [DONE] was kept")
	}
	var nilAnswer *StreamAnswer
	nilAnswer.Chunk(c)   // a nil collector ignores everything
	nilAnswer.TooLarge() // and nothing panics
}
