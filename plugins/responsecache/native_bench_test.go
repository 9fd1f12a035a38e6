package responsecache

import (
	"strconv"
	"testing"
)

// BenchmarkMissNative is the guest's own work on a cache miss, run natively:
// the request's keys (twice: once on the request, once on the response) and
// what may be stored from the answer.
func BenchmarkMissNative(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-demo","object":"chat.completion","created":1767225600,"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":27,"completion_tokens":2,"total_tokens":29}}` + "\n")
	for _, mode := range []string{ModeExact, ModeExactThenSemantic} {
		b.Run(mode, func(b *testing.B) {
			c, err := ParseConfig([]byte(`{"mode":"` + mode + `","ttl_seconds":600}`))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				body := []byte(`{"model":"MoM","messages":[{"role":"user","content":"What is the capital of w` + strconv.Itoa(i) + ` please?"}]}`)
				for range 2 {
					if _, err := c.keys(body, "general", "small", c.Similar()); err != nil {
						b.Fatal(err)
					}
				}
				if _, why := c.Storable(200, answer); why != "" {
					b.Fatal(why)
				}
				_ = EncodeEntry("q", "Paris.")
			}
		})
	}
}
