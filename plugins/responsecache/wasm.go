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

// lookup are the namespace, key, query and embedding a request is looked up
// and stored under. Semantic matches are confined to requests with the same
// context (every message but the last user message, every parameter) and,
// when the mode matches by similarity, the same slots and content words of
// the last user message, which a hit needs equal anyway (the exact key then
// lives in that namespace too: the same text has the same slots and words).
type lookup struct {
	ns, key, query string
	emb            []float32
	note           string
}

// lookupArgs computes them for body; the query is embedded through req's
// host functions (a module's imports, or the router's when run natively).
func (c *Config) lookupArgs(req *sdk.Request, body []byte, decision, model string) (lookup, error) {
	k, err := c.keys(body, decision, model, c.Similar())
	if err != nil {
		return lookup{}, err
	}
	if k.NoUser {
		return lookup{}, errNoUser
	}
	l := lookup{ns: k.Namespace + "/context=" + k.Context[:32], key: k.Exact, query: k.Query}
	if c.Similar() {
		l.ns += "/slots=" + k.Slots + "/words=" + k.Words
	}
	if c.Similar() && k.Query != "" {
		v, err := req.Embed(k.Query)
		switch {
		case err == nil:
			l.emb = v
		case c.Exact():
			l.note = "semantic matching unavailable (" + err.Error() + "); exact only"
		default:
			return lookup{}, fmt.Errorf("semantic cache: %w", err)
		}
	}
	if !c.Exact() && l.emb == nil {
		return l, errors.New("nothing to look up: semantic mode needs a user message")
	}
	return l, nil
}

// errNoUser: scope.user is on and the request names no user.
var errNoUser = errors.New("scope.user is on and the request names no user (user or safety_identifier)")

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
		res.Value("slots", k.Slots)
		res.Value("words", k.Words)
		res.Skip(fmt.Sprintf("%s: the response cache is used in live mode only (mode %s, %s)", req.Mode(), c.Mode, k.Namespace))
		return nil
	}
	l, err := c.lookupArgs(req, req.Body(), req.Decision(), req.Model())
	if errors.Is(err, errNoUser) {
		res.Skip("not looked up: " + err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	threshold := float32(*c.Semantic.SimilarityThreshold)
	why := "miss (" + c.Mode + ")"
	if c.Exact() {
		entry, err := req.CacheLookup(l.ns, l.key, nil, threshold)
		switch {
		case err == nil:
			_, answer, err := DecodeAnswer(entry.Value)
			if err != nil {
				return err
			}
			if why := c.servable(answer); why != "" {
				res.CacheStatus("miss")
				res.Detail(joinNote("miss: the exact entry "+why, l.note))
				return nil
			}
			c.hit(res, answer, HitExact, 1, l.note)
			return nil
		case !errors.Is(err, sdk.ErrNotFound):
			return err
		}
	}
	if l.emb != nil {
		// An empty key: the exact key was tried (or is not used); this is
		// the similarity lookup alone.
		entry, err := req.CacheLookup(l.ns, "", l.emb, threshold)
		switch {
		case err == nil:
			query, answer, err := DecodeAnswer(entry.Value)
			if err != nil {
				return err
			}
			ok, diff := Agree(l.query, query)
			if why := c.servable(answer); ok && why != "" {
				ok, diff = false, why
			}
			if ok {
				c.hit(res, answer, HitSemantic, float64(entry.Similarity), l.note)
				return nil
			}
			why += fmt.Sprintf("; the nearest entry (similarity %s) was refused: %s", FormatSimilarity(float64(entry.Similarity), false), diff)
		case !errors.Is(err, sdk.ErrNotFound):
			return err
		}
	}
	res.CacheStatus("miss")
	res.Detail(joinNote(why, l.note))
	return nil
}

// servable says why an entry may not answer ("" when it may): one that
// calls tools only while cache_tool_calls is on.
func (c *Config) servable(a Answer) string {
	if len(a.ToolCalls) > 0 && !c.CacheToolCalls {
		return "calls tools and cache_tool_calls is off"
	}
	return ""
}

func (c *Config) hit(res *sdk.Result, answer Answer, kind string, similarity float64, note string) {
	sim := FormatSimilarity(similarity, kind == HitExact)
	res.CacheStatus("hit")
	res.Value(HitValue, kind)
	res.Value("similarity", sim)
	if len(answer.ToolCalls) > 0 {
		res.RespondWithToolCalls(200, answer.Content, answer.ToolCalls)
	} else {
		res.Respond(200, answer.Content)
	}
	res.Detail(joinNote(fmt.Sprintf("%s hit (%s, similarity %s)", kind, c.Mode, sim), note))
}

// OnResponse stores a cacheable answer.
func (c *Config) OnResponse(resp *sdk.Response, res *sdk.Result) error {
	hs := headers(resp.Request)
	if c.Bypassed(hs) {
		res.Skip("bypassed: the request carries " + c.BypassHeader)
		return nil
	}
	if NoStore(hs) {
		res.Skip("not stored: the request says Cache-Control: no-store")
		return nil
	}
	answer, why := c.StorableAnswer(resp.Status(), resp.Body())
	if why != "" {
		res.Skip("not stored: " + why)
		return nil
	}
	if resp.Mode() != sdk.ModeLive {
		res.Skip("not stored: only live requests are stored")
		return nil
	}
	l, err := c.lookupArgs(resp.Request, resp.RequestBody(), resp.Decision(), resp.Model())
	if errors.Is(err, errNoUser) {
		res.Skip("not stored: " + err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	if err := resp.CacheStore(l.ns, l.key, EncodeAnswer(l.query, answer), int(c.TTLSeconds), l.emb); err != nil {
		return err
	}
	stored := fmt.Sprintf("stored %d bytes for %ds", len(answer.Content), c.TTLSeconds)
	if len(answer.ToolCalls) > 0 {
		stored += " with tool calls"
	}
	res.Detail(joinNote(stored, l.note))
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
