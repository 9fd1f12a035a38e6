package hostapi_test

import (
	"context"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
)

// TestInstanceMemory records what one instance of a Go plugin costs in
// memory (pools multiply it) and that handling requests does not make it
// grow without bound.
func TestInstanceMemory(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, hostapi.Config{})
	m, err := h.Load(ctx, plugintest.Build(t, "testdata/hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Bind(ctx, m, []byte(`{"greeting":"hi"}`), hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	start := hostapi.InstanceMemory(b)
	for i := 0; i < 2000; i++ {
		if _, err := b.Call(ctx, plainRequest); err != nil {
			t.Fatal(err)
		}
	}
	end := hostapi.InstanceMemory(b)
	t.Logf("instance memory: %d KiB after start, %d KiB after 2000 calls", start>>10, end>>10)
	if end > 16<<20 {
		t.Fatalf("an instance grew to %d MiB handling small requests", end>>20)
	}
}
