package junction

import (
	"context"
	"log/slog"
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/redismemories"
	"github.com/junction-router/junction/recipes"
)

// With global.state redis and stored data in the data directory, memories
// are Redis's: two replicas (two data directories) recall what either was
// told; files stay in each one's directory.
func TestStoredDataMemoriesOnRedis(t *testing.T) {
	c := redistest.New(t)
	doc, err := recipes.Parse([]byte(`{version: v1, providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}, recipes: [{name: default}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	a, err := openStoredData(ctx, t.TempDir(), doc, nil, nil, c, log)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close(log)
	b, err := openStoredData(ctx, t.TempDir(), doc, nil, nil, c, log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close(log)
	if err := a.library.Memory().Remember(ctx, "alice", "My name is Alice"); err != nil {
		t.Fatal(err)
	}
	page, err := b.store.ListMemories(ctx, "alice", storage.ListOptions{})
	if err != nil || len(page.Data) != 1 || page.Data[0].Text != "My name is Alice" {
		t.Fatalf("the other replica's memories: %+v %v", page, err)
	}
	if got, err := redismemories.New(c).GetMemory(ctx, page.Data[0].ID); err != nil || got.Scope != "alice" {
		t.Fatalf("not in Redis: %+v %v", got, err)
	}
	hits, err := b.library.Memory().Recall(ctx, "alice", "what is my name?", 3, -1)
	if err != nil || len(hits) != 1 {
		t.Fatalf("recall on the other replica: %+v %v", hits, err)
	}
	// Without shared state the memories are the data directory's.
	own, err := openStoredData(ctx, t.TempDir(), doc, nil, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer own.close(log)
	if page, _ := own.store.ListMemories(ctx, "alice", storage.ListOptions{}); len(page.Data) != 0 {
		t.Fatalf("a replica without global.state redis sees Redis's memories: %+v", page)
	}
}
