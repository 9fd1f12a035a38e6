package sqlite

import (
	"context"
	"testing"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return open(t) })
}
