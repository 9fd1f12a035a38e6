package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/synthetic"
)

// TestWorkerEmbeddingsLayer: an embedding model whose config.json declares
// hidden layers (junction.layers) serves POST /v1/embeddings with `layer`
// (spec 001: "dimensions and layer apply when the model declares them"):
// the vector is read from that layer, meta.representation tells the
// spaces apart, /v1/models lists the layers, and an undeclared layer is 400.
func TestWorkerEmbeddingsLayer(t *testing.T) {
	orttest.Library(t)
	dir := filepath.Join(t.TempDir(), "emb")
	if _, err := synthetic.Write(dir, synthetic.Spec{Task: synthetic.Embedding, Layers: 2, HiddenLayers: true, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	base, stop, _ := startWorkerCLI(t, 30*time.Second, "--port", fmt.Sprint(freePort(t)), "--threads", "1", dir)
	defer stop()
	post := func(body map[string]any) (int, map[string]any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		resp, err := http.Post(base+"/v1/embeddings", "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	vec := func(out map[string]any) string {
		return fmt.Sprint(out["data"].([]any)[0].(map[string]any)["embedding"])
	}
	text := "the cat sat on the mat"
	st, plain := post(map[string]any{"input": []string{text}, "options": map[string]any{"return_meta": true}})
	if st != 200 {
		t.Fatalf("embeddings: %d %v", st, plain)
	}
	st, last := post(map[string]any{"input": []string{text}, "layer": 2, "options": map[string]any{"return_meta": true}})
	if st != 200 || vec(last) != vec(plain) {
		t.Fatalf("layer 2 (the last) is not the default vector: %d %v", st, last)
	}
	st, first := post(map[string]any{"input": []string{text}, "layer": 1, "options": map[string]any{"return_meta": true}})
	if st != 200 || vec(first) == vec(plain) {
		t.Fatalf("layer 1 is the default vector: %d %v", st, first)
	}
	rep := func(out map[string]any) string { return out["meta"].(map[string]any)["representation"].(string) }
	if rep(first) == rep(plain) || !strings.HasSuffix(rep(first), "/layer1") {
		t.Errorf("representations: default %q, layer 1 %q", rep(plain), rep(first))
	}
	if st, out := post(map[string]any{"input": []string{text}, "layer": 3}); st != 400 || !strings.Contains(fmt.Sprint(out), "declares layers [1 2]") {
		t.Errorf("undeclared layer: %d %v", st, out)
	}
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var models struct {
		Data []struct {
			Limits struct {
				Layers []int `json:"layers"`
			} `json:"limits"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&models)
	if len(models.Data) != 1 || !slices.Equal(models.Data[0].Limits.Layers, []int{1, 2}) {
		t.Errorf("/v1/models layers: %+v", models.Data)
	}
}
