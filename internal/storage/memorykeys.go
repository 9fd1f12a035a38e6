package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// Bounds on memories; every backend enforces the same ones.
const (
	// MaxMemoryBytes bounds a memory's text.
	MaxMemoryBytes = 16 << 10
	// MaxScopeBytes bounds a memory's scope.
	MaxScopeBytes = 512
)

// NormalizeMemory is the form two texts share when they are the same
// memory: trimmed, case-folded, inner whitespace collapsed.
func NormalizeMemory(text string) string {
	return strings.Join(strings.Fields(strings.ToLower(text)), " ")
}

// MemoryHash is the key a backend deduplicates a scope's memories on: the
// SHA-256 (hex) of the normalised text.
func MemoryHash(text string) string {
	h := sha256.Sum256([]byte(NormalizeMemory(text)))
	return hex.EncodeToString(h[:])
}

// CheckMemory checks a memory to remember: its scope, text, vector and
// embedding model.
func CheckMemory(m Memory) error {
	switch {
	case m.Scope == "" || len(m.Scope) > MaxScopeBytes:
		return fmt.Errorf("%w: a memory needs a scope of 1 to %d bytes", ErrInvalid, MaxScopeBytes)
	case strings.TrimSpace(m.Text) == "" || len(m.Text) > MaxMemoryBytes:
		return fmt.Errorf("%w: a memory needs a text of 1 to %d bytes", ErrInvalid, MaxMemoryBytes)
	case len(m.Vector) == 0 || len(m.Vector) > MaxDimensions:
		return fmt.Errorf("%w: a memory needs a vector of 1 to %d dimensions", ErrInvalid, MaxDimensions)
	case !Finite(m.Vector):
		return fmt.Errorf("%w: the memory's vector has a NaN or infinite component", ErrInvalid)
	case m.EmbeddingModel == "":
		return fmt.Errorf("%w: a memory needs its embedding model", ErrInvalid)
	}
	return nil
}

// CheckRecall checks a recall's k and query vector.
func CheckRecall(vector []float32, k int) error {
	if k < 1 || k > MaxK {
		return fmt.Errorf("%w: k must be between 1 and %d (got %d)", ErrInvalid, MaxK, k)
	}
	if len(vector) == 0 || !Finite(vector) {
		return fmt.Errorf("%w: the query vector is empty or has a NaN or infinite component", ErrInvalid)
	}
	return nil
}

// RankMemoryHits orders recall hits best first (ties by id, so the order is
// stable), keeps at most k and never returns nil.
func RankMemoryHits(hits []MemoryHit, k int) []MemoryHit {
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	if hits == nil {
		hits = []MemoryHit{}
	}
	return hits
}
