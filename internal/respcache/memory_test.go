package respcache_test

import (
	"testing"

	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/cachetest"
)

func TestMemoryConformance(t *testing.T) {
	cachetest.Run(t, func(t *testing.T, o respcache.Options) respcache.Backend { return respcache.NewMemory(o) })
}
