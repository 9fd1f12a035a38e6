package inference_test

import (
	"context"
	"fmt"
	"log"

	"github.com/junction-router/junction/internal/inference"
)

// Example shows the whole API: open the runtime once, load a model directory once, and call it from anywhere.
// (It is compiled, not run: it needs a model directory; `go run ./cmd/junction-onnxgen -out /tmp/models` writes
// synthetic ones.)
func Example() {
	rt, err := inference.Open(inference.Options{Device: "auto", Threads: 4}) // finds third_party/onnxruntime/
	if err != nil {
		log.Fatal(err) // names `make onnxruntime` when the library is missing
	}
	defer rt.Close()

	ctx := context.Background()
	clf, err := rt.Load(ctx, "/tmp/models/classify-bert", inference.ModelOptions{MaxTokens: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer clf.Close()
	fmt.Println(clf.Info().Task, clf.Info().Labels, clf.Info().Device, clf.Info().DeviceNote)

	resp, err := clf.Classify(ctx, inference.Texts("solve the equation", "a very long text ..."), inference.ClassifyOptions{
		InputOptions: inference.InputOptions{MaxTokens: 128, Overflow: inference.OverflowWindow, Window: inference.Window{Tokens: 64, Overlap: 8}},
	})
	if err != nil {
		log.Fatal(err) // whole-call errors: ErrInvalidOptions (400), ErrUnsupportedTask (422), context errors
	}
	for _, r := range resp.Results {
		if r.Err != nil { // max_length_exceeded, scan_budget_exceeded: this item only
			fmt.Println(r.Err.Code)
			continue
		}
		fmt.Println(r.Top().Label, r.Top().Score, r.Usage.Tokens, r.Usage.TokensLowerBound)
	}

	emb, err := rt.Load(ctx, "/tmp/models/embed-roberta", inference.ModelOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer emb.Close()
	vecs, err := emb.Embed(ctx, []string{"hello world"}, inference.EmbedOptions{Dimensions: 8})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vecs.Results[0].Embedding), vecs.Timings.Forward)
}
