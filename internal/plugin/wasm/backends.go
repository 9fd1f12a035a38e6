package wasm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/memstore"
)

// Classifier is a classify binding's model: the labels of one text with
// their scores, in any order.
type Classifier func(ctx context.Context, text string) ([]abi.Class, error)

// labelScore is a label with its score, as a classifier package spells it
// (engine/signal's and internal/lexical's LabelScore both are).
type labelScore interface {
	~struct {
		Label string
		Score float64
	}
}

// Classify adapts a batch classifier (a signal model's or a naive Bayes
// model's Classify method) to a binding.
func Classify[L labelScore](classify func(ctx context.Context, texts []string) ([][]L, error)) Classifier {
	return func(ctx context.Context, text string) ([]abi.Class, error) {
		out, err := classify(ctx, []string{text})
		if err != nil {
			return nil, err
		}
		if len(out) != 1 {
			return nil, errors.New("the classifier returned no result")
		}
		res := make([]abi.Class, len(out[0]))
		for i, l := range out[0] {
			ls := struct {
				Label string
				Score float64
			}(l)
			res[i] = abi.Class{Label: ls.Label, Score: float32(ls.Score)}
		}
		return res, nil
	}
}

// Backends are the host functions' backends: emb (nil: the hashed n-gram
// embedder), the classifiers by binding name ("domain" and "jailbreak" not
// given: the naive Bayes ones), an in-memory response cache and in-memory
// vector stores, and the wall clock. The serve side gives the engine's
// signal models (internal/pluginsys); the author harness gives none.
func Backends(emb hostapi.Embedder, cls map[string]Classifier) (hostapi.Backends, *memstore.Cache, *memstore.Vectors, error) {
	if emb == nil {
		emb = lexical.NewHashedEmbedder(0)
	}
	all := classifiers{}
	for name, c := range cls {
		all[name] = c
	}
	for name, model := range map[string]func() (*lexical.NaiveBayes, error){"domain": lexical.Domain, "jailbreak": lexical.Jailbreak} {
		if all[name] != nil {
			continue
		}
		nb, err := model()
		if err != nil {
			return hostapi.Backends{}, nil, nil, err
		}
		all[name] = Classify(nb.Classify)
	}
	cache, vecs := memstore.NewCache(), memstore.NewVectors()
	return hostapi.Backends{
		Embedder: emb, Classifier: all, Cache: cache, Vectors: vecs, Clock: time.Now,
	}, cache, vecs, nil
}

type classifiers map[string]Classifier

func (c classifiers) Classify(ctx context.Context, binding, text string) ([]abi.Class, error) {
	cl := c[binding]
	if cl == nil {
		return nil, fmt.Errorf("%w: %s (the host has domain and jailbreak)", hostapi.ErrNoSuchBinding, binding)
	}
	res, err := cl(ctx, text)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(res, func(a, b abi.Class) int { return cmp.Compare(b.Score, a.Score) })
	return res, nil
}
