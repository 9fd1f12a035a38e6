package worker_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/junction-router/junction/internal/inference/worker"
)

// FuzzRequests sends arbitrary bodies to every task endpoint: the worker must
// answer each with one of its statuses and a JSON body, never panic or hang.
func FuzzRequests(f *testing.F) {
	seeds := []any{
		map[string]any{"model": "guard", "input": []any{"a", map[string]any{"text": "b", "text_pair": "c"}}, "options": map[string]any{"overflow": "window", "window": map[string]any{"tokens": 3, "overlap": 1}}},
		questionsBody(),
		map[string]any{"model": "emb", "query": "q", "documents": []string{"a", "b"}, "top_n": 1},
		map[string]any{"model": "emb", "input": []string{"a"}, "dimensions": 16},
		map[string]any{"tasks": []any{map[string]any{"id": "a", "classify": map[string]any{"model": "guard", "input": "x"}}}},
	}
	for i, s := range seeds {
		b, _ := json.Marshal(s)
		f.Add(uint8(i), b)
	}
	f.Add(uint8(0), []byte(`{"input":[{"context":"c","question":"q"}],"model":"guard","options":{"overflow":"reject","max_tokens":1}}`))
	f.Add(uint8(1), []byte(`{"model":"emb","state":"s","questions":{"q":{"type":"span","labels":[{"key":"a"}],"threshold":0}}}`))

	models := map[string]worker.Model{"guard": newWordModel(worker.TaskSequence), "emb": newWordModel(worker.TaskEmbedding),
		"ner": newWordModel(worker.TaskTokens), "cross": newWordModel(worker.TaskRerank)}
	h := start(f, models, worker.Options{MaxRequestBytes: 1 << 16})
	handler := h.srv.Handler()
	paths := []string{"/v1/classify", "/v1/decisions", "/v1/rerank", "/v1/embeddings", "/v1/bundle", "/v1/systemone"}
	allowed := map[int]bool{200: true, 400: true, 404: true, 413: true, 422: true, 429: true, 503: true, 504: true}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		p := paths[int(which)%len(paths)]
		req := httptest.NewRequest(http.MethodPost, p, bytes.NewReader(body))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("%s answered %d: %s", p, rec.Code, rec.Body.Bytes())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s answered invalid JSON: %s", p, rec.Body.Bytes())
		}
	})
}
