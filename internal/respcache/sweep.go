package respcache

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/junction-router/junction/recipes"
)

// LiveEpochs are the configuration epochs doc's requests are scoped under:
// ScopeOf of every recipe, decision and model (any model of the document,
// since a fallback may retarget a request to one its decision does not
// name).
func LiveEpochs(doc *recipes.Document) map[string]bool {
	live := map[string]bool{}
	if doc == nil {
		return live
	}
	var models []string
	for _, m := range doc.Providers.Models {
		models = append(models, m.Name)
	}
	for _, r := range doc.Recipes {
		for _, d := range r.Decisions {
			names := models
			for _, ref := range d.ModelRefs {
				if _, ok := doc.Model(ref.Model); !ok {
					names = append(names[:len(names):len(names)], ref.Model)
				}
			}
			for _, m := range names {
				live[ScopeOf(doc, r.Name, d.Name, m).Epoch] = true
			}
		}
	}
	return live
}

// epochOf is the configuration epoch a namespace was scoped under (what
// Scoped appended), "" when none.
func epochOf(ns string) string {
	i := strings.LastIndex(ns, "/epoch=")
	if i < 0 {
		return ""
	}
	e := ns[i+len("/epoch="):]
	if strings.Contains(e, "/") {
		return "" // not the scope's suffix: a plugin's own namespace segment
	}
	return e
}

// Sweeper removes, in the background, the response cache entries of
// configurations no longer served: an entry is kept under its request's
// configuration epoch, so after a change of what shapes answers no request
// asks for the old epoch's entries again, and without a sweep they would
// hold their share of the cache's bounds until their time to live ran out
// (or, in the embedded store, across restarts). Activated is called with
// each document that starts serving; sweeps run one at a time, each for
// the newest document, and one whose document was replaced while it
// worked out the live epochs gives way to the next, so that a quick second
// activation does not lose the newer document's first entries. An answer
// stored by a request still running on the old document after the sweep
// stays until its time to live.
type Sweeper struct {
	b      Backend
	log    *slog.Logger
	newest atomic.Pointer[recipes.Document]
	mu     sync.Mutex        // one sweep at a time; guards swept
	swept  *recipes.Document // the document of the last sweep
	wg     sync.WaitGroup
}

// NewSweeper returns a Sweeper of b; log (nil: none) is told what each
// sweep removed.
func NewSweeper(b Backend, log *slog.Logger) *Sweeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sweeper{b: b, log: log}
}

// Activated starts a sweep of the entries whose epoch doc does not serve.
func (s *Sweeper) Activated(doc *recipes.Document) {
	s.newest.Store(doc)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		doc := s.newest.Load()
		if doc == s.swept {
			return // an earlier goroutine swept for it
		}
		live := LiveEpochs(doc)
		if s.newest.Load() != doc {
			return // replaced meanwhile: the next goroutine sweeps for it
		}
		s.swept = doc
		n, err := s.b.Retain(func(ns string) bool {
			e := epochOf(ns)
			return e == "" || live[e]
		})
		if err != nil {
			s.log.Warn("response cache: removing the entries of replaced configurations", "removed", n, "error", err)
			return
		}
		if n > 0 {
			s.log.Info("response cache: removed the entries of replaced configurations", "removed", n)
		}
	}()
}

// Wait waits for the sweeps started so far (before the backend is closed).
func (s *Sweeper) Wait() { s.wg.Wait() }
