package worker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/inference/worker"
)

// keywordModel is the smallest worker.Model: a two-label classifier that
// says "question" when the text ends with a question mark.
type keywordModel struct{}

func (keywordModel) Info() worker.Info {
	return worker.Info{Task: worker.TaskSequence, Labels: []string{"statement", "question"}, MaxInputTokens: 128, MaxTokenChars: 32}
}

func (keywordModel) Tokenize(text string, limit int) ([]int, bool, error) {
	var ends []int
	for i, f := 0, strings.Fields(text); i < len(f) && (limit <= 0 || i < limit); i++ {
		ends = append(ends, strings.Index(text, f[i])+len(f[i]))
	}
	return ends, limit <= 0 || len(strings.Fields(text)) <= limit, nil
}

func (keywordModel) Classify(_ context.Context, in []worker.Pair) ([]worker.Result, error) {
	out := make([]worker.Result, len(in))
	for i, p := range in {
		out[i].Scores = []float32{0.9, 0.1}
		if strings.HasSuffix(strings.TrimSpace(p.Text), "?") {
			out[i].Scores = []float32{0.1, 0.9}
		}
	}
	return out, nil
}

func (keywordModel) Tokens(context.Context, []string) ([]worker.Result, error) { return nil, nil }
func (keywordModel) Embed(context.Context, []string) ([]worker.Result, error)  { return nil, nil }
func (keywordModel) Rerank(context.Context, []worker.Pair) ([]worker.Result, error) {
	return nil, nil
}
func (keywordModel) Close() error { return nil }

// A worker serving one model: load it, wait until ready, classify over HTTP.
func Example() {
	load := func(context.Context, worker.Spec) (worker.Model, error) { return keywordModel{}, nil }
	srv, err := worker.New([]worker.Spec{{Model: "intent"}}, load, worker.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("status:", srv.WaitSettled(ctx))

	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/classify", "application/json", strings.NewReader(`{"input":"is it raining?"}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// status: ready
	// 200 {"object":"list","model":"intent","results":[{"index":0,"label":"question","score":0.9,"probabilities":{"question":0.9,"statement":0.1},"usage":{"input_tokens":3}}],"usage":{"input_tokens":3}}
}
