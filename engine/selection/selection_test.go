package selection

import (
	"context"
	"testing"

	"github.com/junction-router/junction/recipes"
)

type down map[string]bool

func (d down) Healthy(m string) bool { return !d[m] }

func TestFirstHealthy(t *testing.T) {
	refs := []recipes.ModelRef{{Model: "a"}, {Model: "b"}, {Model: "c"}}
	tests := []struct {
		down down
		want string
	}{
		{down{}, "a"},
		{down{"a": true}, "b"},
		{down{"a": true, "b": true}, "c"},
		{down{"a": true, "b": true, "c": true}, "a"},
	}
	for _, tt := range tests {
		got, ok := FirstHealthy{}.Select(context.Background(), refs, tt.down)
		if !ok || got.Model != tt.want {
			t.Errorf("down=%v: got %q, want %q", tt.down, got.Model, tt.want)
		}
	}
	if _, ok := (FirstHealthy{}).Select(context.Background(), nil, nil); ok {
		t.Error("empty candidates must report ok=false")
	}
	if _, ok := ByName("bandit"); ok {
		t.Error("unknown algorithm accepted")
	}
}
