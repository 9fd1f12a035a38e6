package embedding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// EndpointOptions configure an OpenAI-compatible embeddings endpoint.
type EndpointOptions struct {
	// URL is the endpoint: a URL whose path ends in /embeddings is used as
	// is; one ending in /v1 gets /embeddings; any other gets /v1/embeddings
	// (so https://api.openai.com, https://api.openai.com/v1 and
	// https://api.openai.com/v1/embeddings are the same endpoint).
	URL string
	// Model is the model the endpoint is asked for.
	Model string
	// APIKeyEnv names the environment variable holding the key, sent as
	// Authorization: Bearer (never logged or put in an error); "" sends none.
	APIKeyEnv string
	// Getenv reads APIKeyEnv (nil: no key).
	Getenv func(string) string
	// Dimensions is asked of the endpoint (OpenAI's dimensions parameter) and
	// checked in every answer; 0 asks nothing and learns the dimension from a
	// probe at construction.
	Dimensions int
	// TimeoutMS bounds one call (default 30000).
	TimeoutMS int
	// Client makes the calls (default: a client of its own).
	Client *http.Client
}

// endpointBatch is how many inputs go in one call (OpenAI takes up to 2048;
// fewer keeps one call's body and time small).
const endpointBatch = 256

// maxAnswerBytes bounds an endpoint's answer: 256 vectors of 3072 floats
// written as JSON text are about 16 MiB.
const maxAnswerBytes = 64 << 20

// Endpoint is a Model over an OpenAI-compatible POST /v1/embeddings.
type Endpoint struct {
	url     string
	model   string
	name    string
	key     string
	askDims int
	dims    int
	timeout time.Duration
	client  *http.Client
}

// NewEndpoint returns the endpoint model; without o.Dimensions it embeds a
// probe text once, under ctx, to learn the dimension.
func NewEndpoint(ctx context.Context, o EndpointOptions) (*Endpoint, error) {
	const p = "global.storage.embedding"
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s.endpoint must be an http(s) URL of an OpenAI-compatible embeddings endpoint (got %q)", p, o.URL)
	}
	if o.Model == "" {
		return nil, fmt.Errorf("%s.model: an embeddings endpoint needs the model to ask for", p)
	}
	if o.Dimensions < 0 {
		return nil, fmt.Errorf("%s.dimensions must not be negative", p)
	}
	switch path := strings.TrimRight(u.Path, "/"); {
	case strings.HasSuffix(path, "/embeddings"):
		u.Path = path
	case strings.HasSuffix(path, "/v1"):
		u.Path = path + "/embeddings"
	default:
		u.Path = path + "/v1/embeddings"
	}
	e := &Endpoint{url: u.String(), model: o.Model, name: "openai:" + u.Host + "/" + o.Model,
		askDims: o.Dimensions, dims: o.Dimensions, timeout: 30 * time.Second, client: o.Client}
	if o.TimeoutMS > 0 {
		e.timeout = time.Duration(o.TimeoutMS) * time.Millisecond
	}
	if e.client == nil {
		e.client = &http.Client{}
	}
	if o.APIKeyEnv != "" && o.Getenv != nil {
		e.key = o.Getenv(o.APIKeyEnv)
		if e.key == "" {
			return nil, fmt.Errorf("%s.api_key_env: the environment variable %s is empty or not set", p, o.APIKeyEnv)
		}
	}
	if e.dims == 0 {
		d, err := probe(ctx, func(ctx context.Context, texts []string) ([][]float32, error) { return e.call(ctx, texts) })
		if err != nil {
			return nil, fmt.Errorf("%w (set %s.dimensions to start without asking)", err, p)
		}
		e.dims = d
	}
	return e, nil
}

// Name is "openai:" + the endpoint's host + "/" + the model.
func (e *Endpoint) Name() string { return e.name }

// Dimensions is the length of every vector.
func (e *Endpoint) Dimensions() int { return e.dims }

// Embed embeds texts, endpointBatch to a call.
func (e *Endpoint) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return inBatches(ctx, texts, endpointBatch, e.dims, e.call)
}

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

type embeddingsAnswer struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// call makes one request and returns its vectors in input order.
func (e *Endpoint) call(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingsRequest{Model: e.model, Input: texts, Dimensions: e.askDims, EncodingFormat: "float"})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if cctx.Err() != nil {
			return nil, fmt.Errorf("%w %s: no answer within %v (timeout_ms)", ErrModel, e.name, e.timeout)
		}
		return nil, fmt.Errorf("%w %s: %w", ErrModel, e.name, stripURL(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w %s: reading the answer: %w", ErrModel, e.name, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w %s answered %d: %s", ErrModel, e.name, resp.StatusCode, remoteMessage(raw))
	}
	if len(raw) > maxAnswerBytes {
		return nil, fmt.Errorf("%w %s: the answer is larger than %d bytes", ErrModel, e.name, maxAnswerBytes)
	}
	var ans embeddingsAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("%w %s: the answer is not an embeddings list: %v", ErrModel, e.name, err)
	}
	if len(ans.Data) != len(texts) {
		return nil, fmt.Errorf("%w %s answered %d vectors for %d inputs", ErrModel, e.name, len(ans.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, d := range ans.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= len(texts) || out[at] != nil {
			return nil, fmt.Errorf("%w %s answered a bad or repeated index %d", ErrModel, e.name, at)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("%w %s answered an empty vector for input %d (encoding_format float is required)", ErrModel, e.name, at)
		}
		out[at] = d.Embedding
	}
	return out, nil
}

// remoteMessage is the error message of an endpoint's error answer (OpenAI's
// {"error":{"message"}}, or a plain {"message"} or {"error":"..."}), else
// its text, shortened.
func remoteMessage(raw []byte) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &env) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(env.Error, &inner) == nil && inner.Message != "":
			return clip(inner.Message, 500)
		case json.Unmarshal(env.Error, &s) == nil && s != "":
			return clip(s, 500)
		case env.Message != "":
			return clip(env.Message, 500)
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "(no message)"
	}
	return clip(string(raw), 200)
}

// stripURL keeps a transport error's cause without repeating the URL (it
// may carry credentials in its user info).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
