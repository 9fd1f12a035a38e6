package dataplane

import (
	"fmt"
	"testing"
)

// benchStream is a 500-token streamed answer as vLLM sends it: a role chunk,
// one chunk per token, a finish chunk, the usage chunk, [DONE].
func benchStream() (data [][]byte, events []byte) {
	const head = `{"id":"chatcmpl-8f3a2c1d9e7b4a60","object":"chat.completion.chunk","created":1700000000,"model":"qwen3-8b","choices":[{"index":0,"delta":`
	data = append(data, []byte(head+`{"role":"assistant","content":""},"finish_reason":null}]}`))
	for i := 0; i < 500; i++ {
		data = append(data, []byte(fmt.Sprintf(head+`{"content":" word%d"},"finish_reason":null}]}`, i)))
	}
	data = append(data, []byte(head+`{},"finish_reason":"stop"}]}`),
		[]byte(`{"id":"chatcmpl-8f3a2c1d9e7b4a60","object":"chat.completion.chunk","created":1700000000,"model":"qwen3-8b","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":500,"total_tokens":542}}`),
		[]byte("[DONE]"))
	for _, d := range data {
		events = append(append(append(events, "data: "...), d...), "\n\n"...)
	}
	return data, events
}

// BenchmarkStreamAnswer measures what collecting a streamed answer for the
// response phase adds: collect is the copy made per chunk while the stream
// is relayed (on the relay's path), assemble the merge into a chat.completion
// after the stream ended (off it). relay is the baseline every stream already
// pays per chunk: the event scan and the usage check of the relay.
func BenchmarkStreamAnswer(b *testing.B) {
	data, events := benchStream()
	chunks := float64(len(data))
	perChunk := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/chunks, "ns/chunk")
	}
	b.Run("relay", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(events)))
		for b.Loop() {
			var sc EventScanner
			_ = sc.Feed(events, func(_, d []byte) bool {
				if string(d) != "[DONE]" {
					ChunkUsage(d)
				}
				return true
			})
		}
		perChunk(b)
	})
	b.Run("collect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := &StreamAnswer{limit: MaxResponsePhaseBody, buf: getStreamBuffer()} // as newStreamAnswer
			for _, d := range data {
				s.Chunk(d)
			}
			s.release() // as StreamEnded
		}
		perChunk(b)
	})
	b.Run("assemble", func(b *testing.B) {
		s := &StreamAnswer{limit: MaxResponsePhaseBody}
		for _, d := range data {
			s.Chunk(d)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Assemble(); err != nil {
				b.Fatal(err)
			}
		}
		perChunk(b)
	})
}
