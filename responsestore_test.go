package junction

import (
	"testing"

	"github.com/junction-router/junction/internal/storage/memresponses"
	"github.com/junction-router/junction/recipes"
)

func TestResponseStoreChoice(t *testing.T) {
	if s, err := responseStore(recipes.ResponseAPI{Store: "memory"}, nil); s != nil || err != nil {
		t.Fatalf("not enabled: %v %v", s, err)
	}
	if s, err := responseStore(recipes.ResponseAPI{Enabled: true}, nil); err != nil {
		t.Fatal(err)
	} else if _, ok := s.(*memresponses.Store); !ok {
		t.Fatalf("default store %T, want memory", s)
	}
	embedded := memresponses.New(memresponses.Options{}) // stands in for the embedded store's identity only
	if s, err := responseStore(recipes.ResponseAPI{Enabled: true, Store: "embedded"}, embedded); err != nil || s != embedded {
		t.Fatalf("embedded: %v %v", s, err)
	}
	if _, err := responseStore(recipes.ResponseAPI{Enabled: true, Store: "redis"}, nil); err == nil {
		t.Fatal("an unknown store is accepted")
	}
}
