package retrieval

import (
	"context"
	"fmt"
	"strings"

	"github.com/junction-router/junction/internal/storage"
)

// Remember embeds text and keeps it in scope. The same text (after
// trimming and case folding) in the same scope is kept once: created is
// false and the memory kept before is returned. An empty or oversized text
// or scope wraps storage.ErrInvalid.
func (l *Library) Remember(ctx context.Context, scope, text string) (storage.Memory, bool, error) {
	if err := checkScope(scope); err != nil {
		return storage.Memory{}, false, err
	}
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return storage.Memory{}, false, fmt.Errorf("%w: the memory's text is empty; give what to remember", storage.ErrInvalid)
	case len(text) > MaxMemoryBytes:
		return storage.Memory{}, false, fmt.Errorf("%w: the memory's text is %d bytes; keep one memory under %d bytes", storage.ErrInvalid, len(text), MaxMemoryBytes)
	}
	vec, err := l.embed(ctx, text)
	if err != nil {
		return storage.Memory{}, false, err
	}
	return l.store.Remember(ctx, storage.Memory{Scope: scope, Text: text, EmbeddingModel: l.model.Name(), Vector: vec})
}

// Recall returns the k memories of scope most similar to text (k 0:
// DefaultK), best first, scoring at least minScore. Memories embedded with
// another model are not compared.
func (l *Library) Recall(ctx context.Context, scope, text string, k int, minScore float32) ([]storage.MemoryHit, error) {
	if err := checkScope(scope); err != nil {
		return nil, err
	}
	switch {
	case strings.TrimSpace(text) == "":
		return nil, fmt.Errorf("%w: the recall text is empty; give the text to recall memories for", storage.ErrInvalid)
	case k < 0 || k > MaxRecall:
		return nil, fmt.Errorf("%w: k %d: recall 1 to %d memories (0 for %d)", storage.ErrInvalid, k, MaxRecall, DefaultK)
	case !(minScore >= -1 && minScore <= 1): // NaN too
		return nil, fmt.Errorf("%w: min_score %g: give a cosine similarity between -1 and 1", storage.ErrInvalid, minScore)
	case k == 0:
		k = DefaultK
	}
	vec, err := l.embed(ctx, bound(text, MaxQueryBytes))
	if err != nil {
		return nil, err
	}
	hits, err := l.store.Recall(ctx, scope, l.model.Name(), vec, k, minScore)
	if err != nil {
		return nil, err
	}
	if hits == nil {
		hits = []storage.MemoryHit{}
	}
	return hits, nil
}

func checkScope(scope string) error {
	switch {
	case strings.TrimSpace(scope) == "":
		return fmt.Errorf("%w: the memory scope is empty; give the user or tenant the memories belong to", storage.ErrInvalid)
	case len(scope) > MaxScopeBytes:
		return fmt.Errorf("%w: the memory scope is %d bytes; keep it under %d", storage.ErrInvalid, len(scope), MaxScopeBytes)
	}
	return nil
}
