//go:build !race

package builtin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/plugins/builtin"
	"github.com/junction-router/junction/recipes"
)

// TestRAGAndMemoryOnStoredData runs the built-in rag and memory modules in a
// host whose retrieve and memory functions are served by the retrieval
// library over a real SQLite store, as serve wires them.
func TestRAGAndMemoryOnStoredData(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	model, err := embedding.FromConfig(ctx, nil, signal.HashedEmbedder(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := st.CreateVectorStore(ctx, storage.NewVectorStore{Name: "policies", EmbeddingModel: model.Name(), Dimensions: model.Dimensions()})
	if err != nil {
		t.Fatal(err)
	}
	addFile := func(name string, attrs map[string]any, passages ...string) {
		t.Helper()
		f, err := st.CreateFile(ctx, storage.NewFile{Filename: name, Purpose: "assistants", MediaType: "text/markdown"}, strings.NewReader(strings.Join(passages, "\n\n")), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AttachFile(ctx, vs.ID, f.ID, attrs, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
			t.Fatal(err)
		}
		vecs, err := model.Embed(ctx, passages)
		if err != nil {
			t.Fatal(err)
		}
		chunks := make([]storage.Chunk, len(passages))
		for i, p := range passages {
			chunks[i] = storage.Chunk{Index: i, Text: p, Tokens: len(strings.Fields(p)), Vector: vecs[i]}
		}
		if err := st.CompleteFile(ctx, vs.ID, f.ID, chunks); err != nil {
			t.Fatal(err)
		}
	}
	addFile("refunds.md", map[string]any{"lang": "en"}, "Refunds are issued within 30 days of the return.", "Refunds go back to the original card.")
	addFile("remboursements.md", map[string]any{"lang": "fr"}, "Les remboursements sont émis sous 30 jours.")
	kbs := map[string]recipes.KnowledgeBase{"handbook": {Name: "handbook", VectorStores: []string{vs.ID}, TopK: 1}}
	lib := retrieval.New(retrieval.Options{Store: st, Model: model, KnowledgeBase: func(name string) (recipes.KnowledgeBase, bool) {
		kb, ok := kbs[name]
		return kb, ok
	}})
	h, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir(), Backends: hostapi.Backends{Retriever: lib.Retriever(), Memory: lib.Memory()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	load := func(typ, config string) *hostapi.Binding {
		t.Helper()
		wasm, err := builtin.Module(typ)
		if err != nil {
			t.Fatal(err)
		}
		m, err := h.LoadTrusted(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		b, err := h.Bind(ctx, m, []byte(config), hostapi.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	body := `{"model":"m","messages":[{"role":"user","content":"how long until refunds are issued?"}]}`

	// The vector store by name and by id; the knowledge base's top_k applies.
	for _, store := range []string{"policies", vs.ID} {
		res := call(t, load("rag", `{"store":"`+store+`","top_k":3}`), request(t, abi.ModeLive, body))
		if value(res.Result, "passages") != "3" || !strings.Contains(value(res.Result, "sources"), "refunds.md") {
			t.Fatalf("%s: %+v", store, res.Result)
		}
	}
	res := call(t, load("rag", `{"store":"handbook"}`), request(t, abi.ModeProbe, body))
	got, _ := apply(t, body, nil, res.Result)
	if value(res.Result, "passages") != "1" || res.BackendCalls != 1 || !strings.Contains(got.Body, "(refunds.md) Refunds are issued within 30 days") {
		t.Fatalf("knowledge base: %+v %s", res.Result, got.Body)
	}
	// Filters on the files' attributes.
	res = call(t, load("rag", `{"store":"policies","filters":{"type":"eq","key":"lang","value":"fr"}}`), request(t, abi.ModeLive, body))
	if value(res.Result, "sources") != `["remboursements.md"]` {
		t.Fatalf("filtered: %+v", res.Result)
	}
	// An unknown store warns and names it.
	res = call(t, load("rag", `{"store":"nowhere"}`), request(t, abi.ModeLive, body))
	if w := value(res.Result, "warning"); !strings.Contains(w, `"nowhere"`) || !strings.Contains(w, "no vector store or knowledge base of that name") || len(res.Mutations) != 0 {
		t.Fatalf("unknown store: %+v", res.Result)
	}

	// memory: live remembers into the store, a later request recalls it.
	mem := load("memory", `{"scope_header":"x-user-id","min_score":0.05}`)
	who := abi.Header{Name: "x-user-id", Value: "u-ada"}
	res = call(t, mem, request(t, abi.ModeLive, `{"model":"m","messages":[{"role":"user","content":"My name is Ada. I live in Lisbon."}]}`, who))
	if !res.Persisted || value(res.Result, "remembered") != "2" {
		t.Fatalf("remember: %+v", res)
	}
	page, err := st.ListMemories(ctx, "u-ada", storage.ListOptions{})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("stored memories: %+v %v", page, err)
	}
	later := `{"model":"m","messages":[{"role":"user","content":"Which city do I live in?"}]}`
	res = call(t, mem, request(t, abi.ModeLive, later, who))
	got, _ = apply(t, later, nil, res.Result)
	if res.Persisted || !strings.Contains(got.Body, "- I live in Lisbon.") {
		t.Fatalf("recall: %+v %s", res, got.Body)
	}
}
