package memstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/memstore"
)

func TestRetrieverSearchesByTextWithFilterAndMinScore(t *testing.T) {
	ctx := context.Background()
	r := &memstore.Retriever{Vectors: memstore.NewVectors(), Embedder: lexical.NewHashedEmbedder(0)}
	for i, c := range []memstore.Chunk{
		{Text: "Refunds are issued within 14 days of a return.", Source: "policy.md", FileID: "file_1", Attributes: map[string]any{"lang": "en", "year": 2024}},
		{Text: "Shipping to Canada takes five business days.", Source: "shipping.md", FileID: "file_2", Attributes: map[string]any{"lang": "en", "year": 2023}},
		{Text: "Les remboursements sont émis sous 14 jours.", Source: "policy.fr.md", FileID: "file_3", Attributes: map[string]any{"lang": "fr", "year": 2024}},
	} {
		c.ChunkIndex = i
		if err := r.Add(ctx, "kb", c); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := r.Retrieve(ctx, hostapi.RetrieveQuery{Source: "kb", Text: "how many days until refunds are issued", K: 1})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits = %+v, %v", hits, err)
	}
	var p struct {
		Text, Source, FileID, Store string
		Index                       int            `json:"chunk_index"`
		Attributes                  map[string]any `json:"attributes"`
	}
	if err := json.Unmarshal(hits[0].Payload, &p); err != nil || p.Source != "policy.md" || p.Attributes["lang"] != "en" {
		t.Fatalf("payload = %s (%v)", hits[0].Payload, err)
	}
	hits, err = r.Retrieve(ctx, hostapi.RetrieveQuery{Source: "kb", Text: "refunds", K: 5, Filter: []byte(`{"type":"and","filters":[{"type":"eq","key":"lang","value":"en"},{"type":"lt","key":"year","value":2024}]}`)})
	if err != nil || len(hits) != 1 || hits[0].ID != "file_2:1" {
		t.Fatalf("filtered hits = %+v, %v", hits, err)
	}
	hits, err = r.Retrieve(ctx, hostapi.RetrieveQuery{Source: "kb", Text: "refunds issued days", MinScore: 0.99, HasMinScore: true})
	if err != nil || len(hits) != 0 {
		t.Fatalf("min_score 0.99 kept %+v, %v", hits, err)
	}
	if hits, _ := r.Retrieve(ctx, hostapi.RetrieveQuery{Source: "kb", Text: "refunds"}); len(hits) != 3 {
		t.Fatalf("default k over 3 items gave %d hits", len(hits))
	}
	if _, err := r.Retrieve(ctx, hostapi.RetrieveQuery{Source: "nope", Text: "x"}); !errors.Is(err, hostapi.ErrNoSuchStore) {
		t.Fatalf("unknown store: %v", err)
	}
	if _, err := r.Retrieve(ctx, hostapi.RetrieveQuery{Source: "kb", Text: "x", Filter: []byte(`{"type":"like"}`)}); !errors.Is(err, hostapi.ErrInvalidQuery) {
		t.Fatal("a malformed filter was accepted")
	}
}

func TestMemoryRemembersOncePerScopeAndRecallsBySimilarity(t *testing.T) {
	ctx := context.Background()
	m := memstore.NewMemory(lexical.NewHashedEmbedder(0))
	m.MaxPerScope = 3
	m.Now = func() time.Time { return time.Unix(1700000000, 0) }
	for _, s := range []string{"My name is Ada.", "I live in Lisbon.", "  my name is ada.  ", "I prefer tea over coffee."} {
		if err := m.Remember(ctx, "u1", s); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Texts("u1"); len(got) != 3 {
		t.Fatalf("memories = %q (the repeated one must be kept once)", got)
	}
	hits, err := m.Recall(ctx, "u1", "where do I live?", 1, 0)
	if err != nil || len(hits) != 1 {
		t.Fatalf("%+v %v", hits, err)
	}
	var p struct {
		ID, Text  string
		CreatedAt int64 `json:"created_at"`
	}
	if err := json.Unmarshal(hits[0].Payload, &p); err != nil || p.Text != "I live in Lisbon." || p.CreatedAt != 1700000000 || p.ID != hits[0].ID {
		t.Fatalf("payload = %s (%v)", hits[0].Payload, err)
	}
	if hits, _ := m.Recall(ctx, "u2", "where do I live?", 3, 0); len(hits) != 0 {
		t.Fatalf("another scope recalled %+v", hits)
	}
	if hits, _ := m.Recall(ctx, "u1", "where do I live?", 3, 0.999); len(hits) != 0 {
		t.Fatalf("min_score 0.999 recalled %+v", hits)
	}
	_ = m.Remember(ctx, "u1", "I work at a bakery.")
	if got := m.Texts("u1"); len(got) != 3 || got[0] != "I live in Lisbon." {
		t.Fatalf("over the bound: %q (the oldest must go)", got)
	}
	if err := m.Remember(ctx, "", "x"); err == nil {
		t.Fatal("a memory without a scope was kept")
	}
}
