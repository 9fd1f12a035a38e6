package client_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/inference/worker/client"
)

// answerTransport answers every request with a fixed classify answer, in
// memory: what is left is the client's own work.
type answerTransport struct{ answer string }

func (a answerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	_ = req.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Server-Timing": {"parse;dur=0.010, tokenize;dur=0.001, queue;dur=0.000, forward;dur=0.080, post;dur=0.002, serialize;dur=0.003, total;dur=0.100"}},
		Body: io.NopCloser(strings.NewReader(a.answer)), ContentLength: int64(len(a.answer)), Request: req}, nil
}

// BenchmarkClassifierOwnWork is the client's own cost per classify call of
// one input (building the request, reading the answer and Server-Timing),
// without a worker or a socket.
func BenchmarkClassifierOwnWork(b *testing.B) {
	answer := `{"object":"list","model":"m","results":[{"index":0,"label":"benign","score":0.71,"probabilities":{"benign":0.71,"jailbreak":0.29},"usage":{"input_tokens":40}}],"usage":{"input_tokens":40}}`
	p, err := client.New(client.Options{Deployment: "d", Observe: func(client.Call) {},
		Replicas: []client.Replica{{HTTP: &http.Client{Transport: answerTransport{answer}}, BaseURL: "http://worker", Model: "m"}}})
	if err != nil {
		b.Fatal(err)
	}
	p.SetReady(0, true)
	c := client.NewClassifier(p, "m", client.ClassifyOptions{})
	for _, words := range []int{16, 512} {
		text := []string{strings.Repeat("hello world ", words/2)}
		b.Run(strings.Repeat("x", 0)+map[int]string{16: "words=16", 512: "words=512"}[words], func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := c.Classify(context.Background(), text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
