package inference_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/synthetic"
)

// The benchmark models: a BERT-like encoder of realistic small size (hidden 128, 2 layers, FFN 512,
// 512 positions, ~20k WordPiece vocabulary), with a 14-label classification head and a mean-pooled embedder.
var benchModels struct {
	once     sync.Once
	dir      string
	err      error
	cls, emb synthetic.Spec
}

func benchSetup(b *testing.B) (*inference.Runtime, string) {
	b.Helper()
	lib := orttest.Library(b)
	benchModels.once.Do(func() {
		dir, err := tempDir()
		if err != nil {
			benchModels.err = err
			return
		}
		benchModels.dir = dir
		base := synthetic.Spec{Hidden: 128, Layers: 2, FFN: 512, MaxTokens: 512, ExtraWords: 20000, Tokenizer: synthetic.WordPiece, TokenTypes: true, Seed: 1}
		cls, emb := base, base
		cls.Task = synthetic.SequenceClassification
		cls.Labels = strings.Split("business,law,psychology,biology,chemistry,history,other,health,economics,math,physics,computer science,philosophy,engineering", ",")
		emb.Task = synthetic.Embedding
		if _, err := synthetic.Write(filepath.Join(dir, "classify"), cls); err != nil {
			benchModels.err = err
			return
		}
		_, benchModels.err = synthetic.Write(filepath.Join(dir, "embed"), emb)
	})
	if benchModels.err != nil {
		b.Fatal(benchModels.err)
	}
	device := os.Getenv("JUNCTION_BENCH_DEVICE") // e.g. cuda:0 on a GPU machine; default cpu
	if device == "" {
		device = "cpu"
	}
	rt, err := inference.Open(inference.Options{LibraryPath: lib, Device: device})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt, benchModels.dir
}

// textOf returns a text of exactly n tokens with [CLS] and [SEP] (each synthetic word wK is one token).
func textOf(n, salt int) string {
	words := make([]string, n-2)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", (i*7919+salt*104729)%20000)
	}
	return strings.Join(words, " ")
}

var benchShapes = []struct{ tokens, batch int }{{16, 1}, {16, 32}, {128, 1}, {128, 32}, {512, 1}, {512, 32}}

// BenchmarkClassify measures one Classify call (tokenise, forward, softmax) per op: its latency is ns/op.
func BenchmarkClassify(b *testing.B) {
	rt, dir := benchSetup(b)
	m, err := rt.Load(context.Background(), filepath.Join(dir, "classify"), inference.ModelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, s := range benchShapes {
		b.Run(fmt.Sprintf("tokens=%d/batch=%d", s.tokens, s.batch), func(b *testing.B) {
			inputs := make([]inference.Input, s.batch)
			for i := range inputs {
				inputs[i].Text = textOf(s.tokens, i)
			}
			if n := m.Tokenize(inputs[0].Text).Len(); n != s.tokens {
				b.Fatalf("input has %d tokens", n)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Classify(context.Background(), inputs, inference.ClassifyOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/call")
		})
	}
}

// BenchmarkEmbed measures embeddings per second (mean pooling and normalisation included).
func BenchmarkEmbed(b *testing.B) {
	rt, dir := benchSetup(b)
	m, err := rt.Load(context.Background(), filepath.Join(dir, "embed"), inference.ModelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, s := range benchShapes {
		b.Run(fmt.Sprintf("tokens=%d/batch=%d", s.tokens, s.batch), func(b *testing.B) {
			texts := make([]string, s.batch)
			for i := range texts {
				texts[i] = textOf(s.tokens, i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Embed(context.Background(), texts, inference.EmbedOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.batch*b.N)/b.Elapsed().Seconds(), "embeddings/s")
		})
	}
}

// BenchmarkTokenize measures the WordPiece tokenizer alone on a 512-token text.
func BenchmarkTokenize(b *testing.B) {
	rt, dir := benchSetup(b)
	m, err := rt.Load(context.Background(), filepath.Join(dir, "classify"), inference.ModelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	text := textOf(512, 3)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Tokenize(text)
	}
}
