// Package embedding is the embedding model of stored data: the one model
// that embeds every chunk of every vector store, every search query and every
// memory, so that what is stored and what is asked live in one vector space.
// A vector store records the Name and Dimensions it was built with, and a
// query embedded by another model is refused (see internal/retrieval).
//
// FromConfig builds the model global.storage.embedding names: nil is the
// router's own embedder (the one the embedding signals use); deployment
// names a model deployment that serves embeddings; endpoint is an
// OpenAI-compatible POST /v1/embeddings (endpoint.go). Every model batches
// its inputs, checks that the answer has one vector per input, all of the
// model's dimension, and scales vectors to unit length.
//
// The package does no routing and knows no deployment: the caller passes the
// router's embedder and a function that finds a deployment's.
package embedding

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// Model embeds the texts of stored data.
type Model interface {
	// Name identifies the model and where it runs ("router:hashed-ngrams",
	// "deployment:emb/worker:emb", "openai:api.openai.com/text-embedding-3-small");
	// a store built with one name is searched with that name only.
	Name() string
	// Dimensions is the length of every vector Embed returns.
	Dimensions() int
	// Embed returns one unit-length vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrModel is wrapped by every error the model (not the caller's context)
// caused: an unreachable or failing endpoint, a wrong answer. Ingestion marks
// such files failed with code embedding_error.
var ErrModel = errors.New("embedding model")

// probeText is what a model embeds once to learn its dimension.
const probeText = "Junction embedding dimension probe."

// routerBatch is how many texts go in one call to the router's or a
// deployment's embedder (a worker request stays well under its byte limit).
const routerBatch = 64

// FromConfig returns the embedding model cfg names (see the package comment).
// router is the router's own embedder (required when cfg is nil);
// deployment finds the embedder of a global.model_catalog.deployments entry
// (required when cfg names one); getenv reads the endpoint's API key
// variable (nil: no key). Unless cfg.Dimensions is set, the model embeds a
// probe text once, under ctx, to learn its dimension, so the model must
// answer by then.
func FromConfig(ctx context.Context, cfg *recipes.StorageEmbedding, router signal.Embedder,
	deployment func(name string) (signal.Embedder, error), getenv func(string) string) (Model, error) {
	switch {
	case cfg == nil:
		if router == nil {
			return nil, errors.New("global.storage.embedding: no router embedder to use; name a deployment or an endpoint")
		}
		return FromEmbedder(ctx, "router:"+router.Method(), router, 0)
	case cfg.Deployment != "" && cfg.Endpoint != "":
		return nil, errors.New("global.storage.embedding: name a deployment or an endpoint, not both")
	case cfg.Deployment != "":
		if deployment == nil {
			return nil, fmt.Errorf("global.storage.embedding.deployment %q: model deployments are not available here", cfg.Deployment)
		}
		e, err := deployment(cfg.Deployment)
		if err != nil {
			return nil, fmt.Errorf("global.storage.embedding.deployment %q: %w", cfg.Deployment, err)
		}
		if e == nil {
			return nil, fmt.Errorf("global.storage.embedding.deployment %q does not serve embeddings", cfg.Deployment)
		}
		m, err := FromEmbedder(ctx, "deployment:"+cfg.Deployment+"/"+e.Method(), e, cfg.Dimensions)
		if err != nil {
			return nil, fmt.Errorf("global.storage.embedding.deployment %q: %w", cfg.Deployment, err)
		}
		return m, nil
	case cfg.Endpoint != "":
		return NewEndpoint(ctx, EndpointOptions{
			URL: cfg.Endpoint, Model: cfg.Model, APIKeyEnv: cfg.APIKeyEnv, Getenv: getenv,
			Dimensions: cfg.Dimensions, TimeoutMS: cfg.TimeoutMS,
		})
	default:
		if router == nil {
			return nil, errors.New("global.storage.embedding: no router embedder to use; name a deployment or an endpoint")
		}
		return FromEmbedder(ctx, "router:"+router.Method(), router, cfg.Dimensions)
	}
}

// FromEmbedder makes a Model of a signal embedder named name. With dims 0 it
// embeds a probe text once to learn the dimension; otherwise every answer is
// checked against dims.
func FromEmbedder(ctx context.Context, name string, e signal.Embedder, dims int) (Model, error) {
	m := &embedderModel{name: name, e: e, dims: dims}
	if d, ok := e.(interface{ Dimensions() int }); ok && dims == 0 {
		// An embedder that knows its width (one loaded on its first call)
		// is not made to load by a probe.
		m.dims = d.Dimensions()
	}
	if m.dims == 0 {
		d, err := probe(ctx, e.Embed)
		if err != nil {
			return nil, err
		}
		m.dims = d
	}
	return m, nil
}

// probe learns a model's dimension from one text's vector.
func probe(ctx context.Context, embed func(context.Context, []string) ([][]float32, error)) (int, error) {
	vs, err := embed(ctx, []string{probeText})
	if err != nil {
		if !errors.Is(err, ErrModel) && ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", ErrModel, err)
		}
		return 0, fmt.Errorf("embedding a probe text to learn the dimension: %w", err)
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return 0, fmt.Errorf("%w: the probe text got no vector", ErrModel)
	}
	return len(vs[0]), nil
}

type embedderModel struct {
	name string
	e    signal.Embedder
	dims int
}

func (m *embedderModel) Name() string    { return m.name }
func (m *embedderModel) Dimensions() int { return m.dims }

func (m *embedderModel) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return inBatches(ctx, texts, routerBatch, m.dims, func(ctx context.Context, batch []string) ([][]float32, error) {
		vs, err := m.e.Embed(ctx, batch)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w %s: %w", ErrModel, m.name, err)
		}
		return vs, nil
	})
}

// inBatches embeds texts size at a time with call, checking each answer's
// count and dimension and scaling vectors to unit length.
func inBatches(ctx context.Context, texts []string, size, dims int, call func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += size {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := texts[start:min(start+size, len(texts))]
		vs, err := call(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(vs) != len(batch) {
			return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrModel, len(vs), len(batch))
		}
		for i, v := range vs {
			if len(v) != dims {
				return nil, fmt.Errorf("%w: text %d got a vector of %d dimensions, the model's is %d", ErrModel, start+i, len(v), dims)
			}
			u, err := unit(v)
			if err != nil {
				return nil, fmt.Errorf("%w: text %d: %w", ErrModel, start+i, err)
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// unit scales v to unit length (a zero vector stays zero: a text without
// words has no direction) and refuses values that are not finite.
func unit(v []float32) ([]float32, error) {
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("the vector has a value that is not a finite number")
		}
		sum += f * f
	}
	if sum == 0 || math.Abs(sum-1) < 1e-6 {
		return v, nil
	}
	inv := 1 / math.Sqrt(sum)
	u := make([]float32, len(v))
	for i, x := range v {
		u[i] = float32(float64(x) * inv)
	}
	return u, nil
}

// clip shortens an error message from a remote service for an error string.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 { // not inside a UTF-8 character
		n--
	}
	return s[:n] + "…"
}
