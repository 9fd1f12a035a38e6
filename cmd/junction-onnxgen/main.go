// Command junction-onnxgen writes synthetic model directories (model.onnx, config.json, tokenizer.json) of the
// shapes real Hugging Face exports have, one per task head and tokenizer, for tests, benchmarks and trying the
// runtime without downloads. The models are deterministic and carry no knowledge.
//
//	go run ./cmd/junction-onnxgen -out /tmp/models            # the small test set
//	go run ./cmd/junction-onnxgen -out /tmp/models -bench     # the 2-layer, 128-wide benchmark set
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/junction-router/junction/internal/inference/synthetic"
)

func main() {
	out := flag.String("out", "", "directory to write the model directories into (required)")
	bench := flag.Bool("bench", false, "write the benchmark-size models (hidden 128, 2 layers, FFN 512, 512 tokens, ~20k vocabulary)")
	seed := flag.Int64("seed", 1, "weight seed")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "junction-onnxgen: -out is required")
		flag.Usage()
		os.Exit(2)
	}
	specs := Set(*bench, *seed)
	for _, name := range sortedNames(specs) {
		dir := filepath.Join(*out, name)
		if _, err := synthetic.Write(dir, specs[name]); err != nil {
			fmt.Fprintf(os.Stderr, "junction-onnxgen: %s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Println(dir)
	}
}

// Set is the model set: one directory per task head, covering the three tokenizer kinds.
func Set(bench bool, seed int64) map[string]synthetic.Spec {
	if bench {
		base := synthetic.Spec{Hidden: 128, Layers: 2, FFN: 512, MaxTokens: 512, ExtraWords: 20000, Tokenizer: synthetic.WordPiece, TokenTypes: true, Seed: seed}
		cls, emb := base, base
		cls.Task, cls.Labels = synthetic.SequenceClassification, []string{"business", "law", "psychology", "biology", "chemistry", "history", "other", "health", "economics", "math", "physics", "computer science", "philosophy", "engineering"}
		emb.Task = synthetic.Embedding
		return map[string]synthetic.Spec{"bench-classify": cls, "bench-embed": emb}
	}
	return map[string]synthetic.Spec{
		"classify-bert":        {Task: synthetic.SequenceClassification, Tokenizer: synthetic.WordPiece, TokenTypes: true, Labels: []string{"math", "law", "other"}, Seed: seed},
		"classify-roberta":     {Task: synthetic.SequenceClassification, Tokenizer: synthetic.BPE, Labels: []string{"jailbreak", "prompt_injection"}, MultiLabel: true, Seed: seed},
		"tokens-bert":          {Task: synthetic.TokenClassification, Tokenizer: synthetic.WordPiece, TokenTypes: true, Labels: []string{"O", "B-PERSON", "I-PERSON", "B-LOCATION", "I-LOCATION"}, Seed: seed},
		"embed-roberta":        {Task: synthetic.Embedding, Tokenizer: synthetic.BPE, Hidden: 16, Matryoshka: []int{4, 8}, Seed: seed},
		"embed-wordlevel":      {Task: synthetic.Embedding, Tokenizer: synthetic.WordLevel, Pooled: true, Seed: seed},
		"rerank-cross-encoder": {Task: synthetic.Rerank, Tokenizer: synthetic.WordPiece, TokenTypes: true, Seed: seed},
	}
}

func sortedNames(m map[string]synthetic.Spec) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
