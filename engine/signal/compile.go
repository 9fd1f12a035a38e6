package signal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

// DefaultScanBytes bounds the text one safety scan (pii, jailbreak) reads per
// request. Input beyond it is left unscanned and on_unscanned decides.
const DefaultScanBytes = pii.DefaultScanBytes

// Options tune compilation beyond what the recipe says.
type Options struct {
	// ScanBytes bounds the bytes of user text that pii and jailbreak read per
	// request; 0 means DefaultScanBytes.
	ScanBytes int
	// Language is a detector to share among the recipes of one generation
	// (lingua's models are large; see NewLanguageDetector). It must know every
	// language the recipe's language signals name. Nil builds one per Compile.
	Language *LanguageDetector
}

// Compile builds one Set per signal kind that has at least one signal used
// reports as referenced by a decision; signals no decision references are
// neither compiled nor evaluated. A nil used compiles every signal. Sets come
// in the order of recipes.Kinds.
func Compile(rs recipes.Signals, used func(kind, name string) bool, models Models) ([]Set, error) {
	return CompileWith(context.Background(), rs, used, models, Options{})
}

// CompileWith is Compile with a context (which bounds the embedding of
// candidate phrasings at compile time) and options.
func CompileWith(ctx context.Context, rs recipes.Signals, used func(kind, name string) bool, models Models, opts Options) ([]Set, error) {
	if used == nil {
		used = func(string, string) bool { return true }
	}
	if opts.ScanBytes <= 0 {
		opts.ScanBytes = DefaultScanBytes
	}
	// Embedding and complexity signals share one embedder, so that one
	// request text is embedded once for both; it is built only if needed.
	var shared *sharedEmbedder
	embedder := func() *sharedEmbedder {
		if shared == nil {
			e := models.Embedder
			if e == nil {
				e = HashedEmbedder()
			}
			shared = newSharedEmbedder(e)
		}
		return shared
	}
	c := &compiler{used: used}
	addKind(c, recipes.KindKeyword, rs.Keywords, func(s recipes.KeywordSignal) string { return s.Name }, newKeywordSet)
	addKind(c, recipes.KindDomain, rs.Domains, func(s recipes.DomainSignal) string { return s.Name },
		func(sig []recipes.DomainSignal) (Set, error) { return newDomainSet(sig, models.Domain) })
	addKind(c, recipes.KindPII, rs.PII, func(s recipes.PIISignal) string { return s.Name },
		func(sig []recipes.PIISignal) (Set, error) { return newPIISet(sig, opts.ScanBytes) })
	addKind(c, recipes.KindJailbreak, rs.Jailbreak, func(s recipes.JailbreakSignal) string { return s.Name },
		func(sig []recipes.JailbreakSignal) (Set, error) {
			return newJailbreakSet(sig, models.Jailbreak, opts.ScanBytes)
		})
	addKind(c, recipes.KindContext, rs.Context, func(s recipes.ContextSignal) string { return s.Name }, newContextSet)
	addKind(c, recipes.KindLanguage, rs.Language, func(s recipes.LanguageSignal) string { return s.Name },
		func(sig []recipes.LanguageSignal) (Set, error) { return newLanguageSet(sig, opts.Language) })
	addKind(c, recipes.KindEmbedding, rs.Embeddings, func(s recipes.EmbeddingSignal) string { return s.Name },
		func(sig []recipes.EmbeddingSignal) (Set, error) { return newEmbeddingSet(ctx, sig, embedder()) })
	addKind(c, recipes.KindComplexity, rs.Complexity, func(s recipes.ComplexitySignal) string { return s.Name },
		func(sig []recipes.ComplexitySignal) (Set, error) { return newComplexitySet(ctx, sig, embedder()) })
	if c.err != nil {
		return nil, c.err
	}
	return c.sets, nil
}

type compiler struct {
	used func(kind, name string) bool
	sets []Set
	err  error
}

// addKind compiles the used signals of one kind, if any, after checking that
// their names are unique (results are addressed by kind and name).
func addKind[T any](c *compiler, kind string, signals []T, name func(T) string, build func([]T) (Set, error)) {
	if c.err != nil {
		return
	}
	var picked []T
	seen := map[string]bool{}
	for _, s := range signals {
		n := name(s)
		if seen[n] {
			c.err = fmt.Errorf("signals: %s signal %q is defined twice", kind, n)
			return
		}
		seen[n] = true
		if c.used(kind, n) {
			picked = append(picked, s)
		}
	}
	if len(picked) == 0 {
		return
	}
	s, err := build(picked)
	if err != nil {
		c.err = err
		return
	}
	c.sets = append(c.sets, s)
}

// unscannedMatches turns an on_unscanned policy into the Matched value of an
// unscanned result: the spec's default is to treat unscanned content as a hit.
func unscannedMatches(kind, name, policy string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(policy)) {
	case "", recipes.UnscannedBlock:
		return true, nil
	case recipes.UnscannedAllow:
		return false, nil
	}
	return false, fmt.Errorf("signals: %s signal %q: on_unscanned %q is neither %q nor %q",
		kind, name, policy, recipes.UnscannedBlock, recipes.UnscannedAllow)
}

// errorCode maps an evaluation error to the bounded codes of Result.Error.
func errorCode(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return CodeDeadline
	}
	return CodeModelError
}

// callModel runs a model call so that the caller can stop waiting when ctx is
// done even if the model does not honor ctx: the deadline bounds the wait, not
// the forward pass already running (the spec's long-input rule 6). The result
// channel is buffered so that an abandoned call's goroutine still exits.
//
// Under a Detached context the call runs directly: the goroutine evaluating
// the Set is itself the one its caller abandons at the deadline.
func callModel[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if IsDetached(ctx) {
		return call(ctx)
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

type detachedKey struct{}

// Detached marks ctx as that of an evaluation whose caller stops waiting for
// it at ctx's deadline by itself (the engine runs a request's ModelSets on
// one goroutine and waits for it under the signal deadline): model calls
// under it run on the evaluating goroutine instead of on one of their own
// that the Set abandons at the deadline. The deadline still bounds the
// request's wait, and a forward pass already running is not interrupted.
func Detached(ctx context.Context) context.Context {
	return context.WithValue(ctx, detachedKey{}, true)
}

// IsDetached reports whether ctx was marked by Detached.
func IsDetached(ctx context.Context) bool {
	v, _ := ctx.Value(detachedKey{}).(bool)
	return v
}

// stamp sets the elapsed time on every result.
func stamp(rs []Result, start time.Time) []Result {
	d := time.Since(start)
	for i := range rs {
		rs[i].Elapsed = d
	}
	return rs
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string { return pii.TruncateUTF8(s, n) }

func inputOrEmpty(in *Input) *Input {
	if in == nil {
		return &Input{}
	}
	return in
}
