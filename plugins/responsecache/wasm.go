package responsecache

import (
	"errors"
	"fmt"

	"github.com/junction-router/junction/plugins/internal/guest"

	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Answer from earlier answers (exact, semantic, or exact then semantic), scoped per model and decision; store 2xx answers.",
	Phases:      []string{"request", "response"},
	Operations: []sdk.Operation{
		{Name: "keys", Kind: "preview", Description: "compute the request's cache namespace and keys; nothing is looked up"},
		{Name: "lookup", Kind: "read", Description: "look the request up in the cache (live only)"},
		{Name: "answer_hit", Kind: "mutation", Description: "answer the request from a cache hit"},
		{Name: "store", Kind: "mutation", Description: "store a 2xx single-choice answer for ttl_seconds (live only)"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// lookupArgs are the namespace, key and embedding a request is looked up and
// stored under. Semantic matches are confined to requests with the same
// context (every message but the last user message, every parameter).
func (c *Config) lookupArgs(body []byte, decision, model string) (ns, key string, emb []float32, note string, err error) {
	k, err := c.Keys(body, decision, model)
	if err != nil {
		return "", "", nil, "", err
	}
	ns = k.Namespace + "/context=" + k.Context[:32]
	if c.Exact() {
		key = k.Exact
	}
	if c.Similar() && k.Query != "" {
		v, err := sdk.Embed(k.Query)
		switch {
		case err == nil:
			emb = v
		case c.Exact():
			note = "semantic matching unavailable (" + err.Error() + "); exact only"
		default:
			return "", "", nil, "", fmt.Errorf("semantic cache: %w", err)
		}
	}
	if key == "" && emb == nil {
		return ns, "", nil, note, errors.New("nothing to look up: semantic mode needs a user message")
	}
	return ns, key, emb, note, nil
}

// OnRequest answers from the cache on a hit.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	if c.Bypassed(headers(req)) {
		res.Skip("bypassed: the request carries " + c.BypassHeader)
		res.Value("cache", "bypass")
		return nil
	}
	if req.Mode() != sdk.ModeLive {
		k, err := c.Keys(req.Body(), req.Decision(), req.Model())
		if err != nil {
			return err
		}
		res.Value("namespace", k.Namespace)
		res.Value("exact_key", k.Exact)
		res.Skip(fmt.Sprintf("%s: the response cache is used in live mode only (mode %s, %s)", req.Mode(), c.Mode, k.Namespace))
		return nil
	}
	ns, key, emb, note, err := c.lookupArgs(req.Body(), req.Decision(), req.Model())
	if err != nil {
		return err
	}
	entry, err := sdk.CacheLookup(ns, key, emb, float32(*c.Semantic.SimilarityThreshold))
	if errors.Is(err, sdk.ErrNotFound) {
		res.CacheStatus("miss")
		res.Detail(joinNote("miss ("+c.Mode+")", note))
		return nil
	}
	if err != nil {
		return err
	}
	res.CacheStatus("hit")
	res.Value("similarity", FormatSimilarity(float64(entry.Similarity)))
	res.Respond(200, string(entry.Value))
	res.Detail(joinNote(fmt.Sprintf("hit (%s, similarity %s)", c.Mode, FormatSimilarity(float64(entry.Similarity))), note))
	return nil
}

// OnResponse stores a cacheable answer.
func (c *Config) OnResponse(resp *sdk.Response, res *sdk.Result) error {
	if c.Bypassed(headers(resp.Request)) {
		res.Skip("bypassed: the request carries " + c.BypassHeader)
		return nil
	}
	content, why := c.Storable(resp.Status(), resp.Body())
	if why != "" {
		res.Skip("not stored: " + why)
		return nil
	}
	if resp.Mode() != sdk.ModeLive {
		res.Skip("not stored: only live requests are stored")
		return nil
	}
	ns, key, emb, note, err := c.lookupArgs(resp.RequestBody(), resp.Decision(), resp.Model())
	if err != nil {
		return err
	}
	if key == "" {
		k, _ := c.Keys(resp.RequestBody(), resp.Decision(), resp.Model())
		key = k.Exact
	}
	if err := sdk.CacheStore(ns, key, []byte(content), int(c.TTLSeconds), emb); err != nil {
		return err
	}
	res.Detail(joinNote(fmt.Sprintf("stored %d bytes for %ds", len(content), c.TTLSeconds), note))
	return nil
}

func headers(req *sdk.Request) []Header {
	hs := req.Headers()
	out := make([]Header, len(hs))
	for i, h := range hs {
		out[i] = Header{Name: h.Name, Value: h.Value}
	}
	return out
}

func joinNote(s, note string) string {
	if note == "" {
		return s
	}
	return s + "; " + note
}
