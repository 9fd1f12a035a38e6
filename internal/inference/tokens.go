package inference

import (
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"os"
	"sync"

	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// sharedTokenizer is one tokenizer.json parsed once for every model of a Runtime that loads the same file
// (the three default models do: one vocabulary, a few MB of maps each), with a memo of the last texts'
// tokens. A request's signals ask several such models about one text at once; the memo has the first
// tokenise it and the others wait for and reuse its tokens, so a text is tokenised once per request rather
// than once per model (tokenising is most of a small model's cost on a long prompt).
//
// The memo is keyed by a seeded hash of the text and holds tokens, never the text itself; it keeps the last
// memoEntries texts.
type sharedTokenizer struct {
	tok    *tokenizer.Tokenizer
	digest [sha256.Size]byte
	refs   int // models using it; guarded by Runtime.mu

	seed   maphash.Seed
	mu     sync.Mutex
	recent [memoEntries]*memoEntry // a ring, newest at next-1
	next   int
}

// memoEntries is how many texts the memo remembers: enough for the concurrent requests of a busy router to
// find each other's work, few enough that it costs nothing to scan.
const memoEntries = 16

// memoEntry is one text's tokens, or a tokenising still under way (done open).
type memoEntry struct {
	key   uint64
	size  int // the text's length in bytes, a second check on the key
	limit int // the limit it was tokenised under (< 0: all of it)

	done     chan struct{}
	toks     []tokenizer.Token
	complete bool
}

// covers reports whether a tokenising under limit e.limit answers a call under limit: it read the whole text,
// or at least as far as limit. An entry still under way covers only by its limit (whether it will be complete
// is not known yet).
func (e *memoEntry) covers(limit int, finished bool) bool {
	if e.limit < 0 || finished && e.complete {
		return true
	}
	return limit >= 0 && limit <= e.limit
}

// Tokens is tokenizer.Tokenizer.Tokens(s, limit), computed once for concurrent and recent callers with the
// same text. The slice returned is shared: callers must not modify it (its capacity is its length, so an
// append copies).
func (st *sharedTokenizer) Tokens(s string, limit int) ([]tokenizer.Token, bool) {
	if limit == 0 || s == "" {
		return st.tok.Tokens(s, limit)
	}
	key := maphash.String(st.seed, s)
	st.mu.Lock()
	for _, e := range st.recent {
		if e == nil || e.key != key || e.size != len(s) {
			continue
		}
		finished := false
		select {
		case <-e.done:
			finished = true
		default:
		}
		if e.covers(limit, finished) {
			st.mu.Unlock()
			<-e.done
			return e.slice(limit)
		}
	}
	e := &memoEntry{key: key, size: len(s), limit: limit, done: make(chan struct{})}
	st.recent[st.next] = e
	st.next = (st.next + 1) % memoEntries
	st.mu.Unlock()
	e.toks, e.complete = st.tok.Tokens(s, limit)
	close(e.done)
	return e.slice(limit)
}

// slice answers a call under limit from a finished entry that covers it.
func (e *memoEntry) slice(limit int) ([]tokenizer.Token, bool) {
	toks := e.toks[:len(e.toks):len(e.toks)]
	if limit >= 0 && len(toks) > limit {
		return toks[:limit:limit], false
	}
	if !e.complete {
		// Read up to its own limit, which is at least this call's: the text has more tokens than limit.
		return toks, false
	}
	return toks, true
}

// tokenizer returns the shared tokenizer of the tokenizer.json at path, parsing it on first use. Release it
// with releaseTokenizer.
func (r *Runtime) tokenizer(path string) (*sharedTokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(data)
	r.mu.Lock()
	if st, ok := r.tokenizers[digest]; ok {
		st.refs++
		r.mu.Unlock()
		return st, nil
	}
	r.mu.Unlock()
	tok, err := tokenizer.Parse(data)
	if err != nil {
		// A tokenizer.json that does not parse (not JSON, cut short, or a
		// component this runtime cannot read) reads the same on every try.
		return nil, &pathError{path, fmt.Errorf("%w: %w", ErrDamagedPackage, err)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.tokenizers[digest]; ok { // another load parsed it meanwhile
		st.refs++
		return st, nil
	}
	st := &sharedTokenizer{tok: tok, digest: digest, refs: 1, seed: maphash.MakeSeed()}
	r.tokenizers[digest] = st
	return st, nil
}

// releaseTokenizer drops a model's use of st; the last use removes it.
func (r *Runtime) releaseTokenizer(st *sharedTokenizer) {
	if st == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st.refs--
	if st.refs <= 0 && r.tokenizers[st.digest] == st {
		delete(r.tokenizers, st.digest)
	}
}

// pathError names the file a parse error is about, as tokenizer.Load does.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }
