// Package responsecache is the built-in response_cache plugin: it answers a
// request from earlier answers. Mode exact matches the request itself (every
// message and every parameter that shapes the answer); semantic matches the
// user's last message by embedding similarity, among requests whose other
// messages and parameters are identical and whose last user messages agree
// on their slots and content words (Agree; plugins/internal/slots);
// exact_then_semantic tries exact first. Entries are scoped per model and per
// decision (each can be turned off; the router adds the recipe and the
// configuration epoch), expire after ttl_seconds, and are written only from
// 2xx answers that hold one assistant message without tool calls (unless
// cache_tool_calls), never for a request that says Cache-Control: no-store. A request carrying the
// bypass header (x-cache-bypass: true by default) is neither answered from
// nor stored in the cache.
//
// The package is the plugin's logic (keys, scope, what may be stored), testable
// on the host; guest/ wraps it as a wasm module that uses the host's cache
// functions. It must not do I/O.
package responsecache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
	"github.com/junction-router/junction/plugins/internal/slots"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "response_cache"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Modes.
const (
	ModeExact             = "exact"
	ModeSemantic          = "semantic"
	ModeExactThenSemantic = "exact_then_semantic"
)

// Defaults.
const (
	DefaultThreshold     = 0.9
	DefaultTTLSeconds    = 3600
	DefaultBypassHeader  = "X-Cache-Bypass"
	DefaultMaxEntryBytes = 1 << 20
	// StatusHeader and SimilarityHeader are the headers a hit carries.
	StatusHeader     = "x-cache-status"
	SimilarityHeader = "x-cache-similarity"
	// HitValue is the report value that says which kind of hit answered:
	// HitExact or HitSemantic.
	HitValue    = "hit"
	HitExact    = "exact"
	HitSemantic = "semantic"
)

// Config is the plugin's configuration.
type Config struct {
	Mode     string    `json:"mode,omitempty"`
	Semantic *Semantic `json:"semantic,omitempty"`
	// TTLSeconds is how long an entry lives (default 3600).
	TTLSeconds int64  `json:"ttl_seconds,omitempty"`
	Scope      *Scope `json:"scope,omitempty"`
	// BypassHeader names the request header that, set to true (or 1), skips
	// the cache for that request.
	BypassHeader string `json:"bypass_header,omitempty"`
	// MaxEntryBytes bounds a stored answer (default 1 MiB).
	MaxEntryBytes int `json:"max_entry_bytes,omitempty"`
	// CacheToolCalls stores answers that call tools too, and answers hits
	// with their tool calls (default false: such an answer is never stored,
	// and an entry holding one is not served).
	CacheToolCalls bool `json:"cache_tool_calls,omitempty"`
}

// Semantic configures similarity matching.
type Semantic struct {
	SimilarityThreshold *float64 `json:"similarity_threshold,omitempty"`
}

// Scope says what separates cache entries.
type Scope struct {
	// Model: entries are per selected model (default true).
	Model *bool `json:"model,omitempty"`
	// Decision: entries are per matched decision (default true).
	Decision *bool `json:"decision,omitempty"`
	// Recipe: entries are per recipe (default true). The router applies
	// it, with the configuration epoch, outside the plugin's namespace
	// (internal/respcache): the plugin does not know the recipe.
	Recipe *bool `json:"recipe,omitempty"`
	// User: entries are per user, named by the body's user or
	// safety_identifier field (default false). A request that names no user
	// is then neither answered from nor stored in the cache.
	User bool `json:"user,omitempty"`
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	switch c.Mode {
	case "":
		c.Mode = ModeExact
	case ModeExact, ModeSemantic, ModeExactThenSemantic:
	default:
		return nil, pconfig.Errorf("mode", "must be exact, semantic or exact_then_semantic, not %q", c.Mode)
	}
	if c.Semantic == nil {
		c.Semantic = &Semantic{}
	}
	if c.Semantic.SimilarityThreshold == nil {
		t := DefaultThreshold
		c.Semantic.SimilarityThreshold = &t
	}
	if t := *c.Semantic.SimilarityThreshold; math.IsNaN(t) || t <= 0 || t > 1 {
		return nil, pconfig.Errorf("semantic.similarity_threshold", "must be above 0 and at most 1, not %v", t)
	}
	if c.TTLSeconds == 0 {
		c.TTLSeconds = DefaultTTLSeconds
	}
	if c.TTLSeconds < 1 || c.TTLSeconds > 366*24*3600 {
		return nil, pconfig.Errorf("ttl_seconds", "must be between 1 and %d, not %d", 366*24*3600, c.TTLSeconds)
	}
	if c.Scope == nil {
		c.Scope = &Scope{}
	}
	t := true
	if c.Scope.Model == nil {
		c.Scope.Model = &t
	}
	if c.Scope.Decision == nil {
		c.Scope.Decision = &t
	}
	if c.Scope.Recipe == nil {
		c.Scope.Recipe = &t
	}
	if c.BypassHeader == "" {
		c.BypassHeader = DefaultBypassHeader
	}
	for i := 0; i < len(c.BypassHeader); i++ {
		if ch := c.BypassHeader[i]; !(ch == '-' || ch == '_' || ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			return nil, pconfig.Errorf("bypass_header", "%q is not a header name (letters, digits, - and _)", c.BypassHeader)
		}
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if c.MaxEntryBytes < 1 || c.MaxEntryBytes > 16<<20 {
		return nil, pconfig.Errorf("max_entry_bytes", "must be between 1 and %d, not %d", 16<<20, c.MaxEntryBytes)
	}
	return c, nil
}

// Exact reports whether the mode looks up exact keys; Similar whether it
// looks up by similarity.
func (c *Config) Exact() bool   { return c.Mode != ModeSemantic }
func (c *Config) Similar() bool { return c.Mode != ModeExact }

// Header is one request header.
type Header struct{ Name, Value string }

// Bypassed reports whether the request asks to skip the cache.
func (c *Config) Bypassed(headers []Header) bool {
	for _, h := range headers {
		if strings.EqualFold(h.Name, c.BypassHeader) {
			v := strings.ToLower(strings.TrimSpace(h.Value))
			if v == "true" || v == "1" || v == "yes" {
				return true
			}
		}
	}
	return false
}

// NoStore reports whether the request says Cache-Control: no-store: its
// answer is not stored (it may still be answered from the cache).
func NoStore(headers []Header) bool {
	for _, h := range headers {
		if strings.EqualFold(h.Name, "Cache-Control") {
			for _, d := range strings.Split(h.Value, ",") {
				if strings.EqualFold(strings.TrimSpace(d), "no-store") {
					return true
				}
			}
		}
	}
	return false
}

// Keys are what a request is looked up and stored under.
type Keys struct {
	// Namespace separates scopes: model and decision when scoped.
	Namespace string
	// Slots is the signature of the last user message's slots (numbers,
	// units, dates, identifiers, entities, quotes, negation, languages,
	// code identifiers; see plugins/internal/slots): semantic matches happen
	// only among requests with the same Slots.
	Slots string
	// Words is the signature of the last user message's content words
	// (stemmed, without function and filler words): a semantic hit needs
	// them equal (slots.Agree), so matches happen only among requests with
	// the same Words too, and a lookup compares embeddings only of entries
	// that could answer.
	Words string
	// Exact is the hash of the whole request (every message, every parameter
	// that shapes the answer).
	Exact string
	// Context is the hash of everything but the last user message; semantic
	// matches happen only among requests with the same Context.
	Context string
	// Query is the last user message, embedded for semantic matching.
	Query string
	// NoUser: scope.user is on and the request names no user.
	NoUser bool
}

// ignored are body fields that do not change the answer's content: how it is
// delivered (stream), who asks, and storage hints. Reasoning switches do
// change it and are part of the key; the router writes its own after the
// plugins, and both phases see the request without them.
var ignored = map[string]bool{
	"model": true, "stream": true, "stream_options": true, "user": true, "metadata": true,
	"store": true, "safety_identifier": true, "prompt_cache_key": true, "prompt_cache_options": true,
	"prompt_cache_retention": true, "service_tier": true,
}

// Keys computes the cache keys of a request body for the decision and model
// that routing chose.
func (c *Config) Keys(body []byte, decision, model string) (Keys, error) {
	return c.keys(body, decision, model, true)
}

// keys is Keys; withSlots false leaves Slots and Words empty (exact
// lookups do not use them, and extracting them is a good part of a miss's
// cost in the guest).
func (c *Config) keys(body []byte, decision, model string, withSlots bool) (Keys, error) {
	fields, err := members(body)
	if err != nil {
		return Keys{}, err
	}
	msgs, err := chatmsg.Parse(jsonscan.Lookup(fields, "messages"))
	if err != nil {
		return Keys{}, err
	}
	var ns strings.Builder
	ns.WriteString("response_cache/v2")
	if *c.Scope.Model {
		ns.WriteString("/model=" + model)
	}
	if *c.Scope.Decision {
		ns.WriteString("/decision=" + decision)
	}
	if c.Scope.User {
		var user string
		for _, f := range []string{"user", "safety_identifier"} {
			if raw := jsonscan.Lookup(fields, f); raw != nil && user == "" {
				_ = json.Unmarshal(raw, &user)
			}
		}
		if user == "" {
			return Keys{NoUser: true}, nil
		}
		sum := sha256.Sum256([]byte(user))
		ns.WriteString("/user=" + hex.EncodeToString(sum[:12]))
	}
	k := Keys{Namespace: ns.String()}
	head, _ := json.Marshal(k.Namespace)
	head = append(append([]byte(`{"ns":`), head...), `,"p":{`...)
	n := 0
	for _, f := range fields {
		if ignored[f.Name] || f.Name == "messages" {
			continue
		}
		if n > 0 {
			head = append(head, ',')
		}
		n++
		head = appendString(head, f.Name)
		head = append(head, ':')
		if head, err = appendCanon(head, f.Value); err != nil {
			return Keys{}, fmt.Errorf("%s: %v", f.Name, err)
		}
	}
	head = append(head, `},"m":[`...)
	last := chatmsg.LastUser(msgs)
	// The keys hash {"ns":…,"p":…,"m":[…]} as encoding/json writes it
	// (params and messages decoded, then encoded again: sorted object keys,
	// no spaces, numbers and escapes normalized). Each part is encoded
	// once and shared by both keys; the context key has "<query>" in
	// place of the last user message.
	exact, context := sha256.New(), sha256.New()
	exact.Write(head)
	context.Write(head)
	var buf []byte
	for i, m := range msgs {
		enc, err := appendCanon(buf[:0], m.Raw)
		if err != nil {
			return Keys{}, fmt.Errorf("messages[%d]: %v", i, err)
		}
		buf = enc
		if i > 0 {
			exact.Write([]byte{','})
			context.Write([]byte{','})
		}
		exact.Write(enc)
		if i == last {
			context.Write([]byte(`"\u003cquery\u003e"`))
		} else {
			context.Write(enc)
		}
	}
	exact.Write([]byte("]}"))
	context.Write([]byte("]}"))
	k.Exact = hex.EncodeToString(exact.Sum(nil))
	k.Context = hex.EncodeToString(context.Sum(nil))
	if last >= 0 {
		k.Query = msgs[last].Text
	}
	if withSlots {
		set := slots.Extract(k.Query)
		k.Slots, k.Words = set.Signature(), set.WordsSignature()
	}
	return k, nil
}

// members are the members of the body's JSON object, sorted by name, the
// last of duplicates only (as decoding into a map keeps them).
func members(body []byte) ([]jsonscan.Member, error) {
	if json.Valid(body) {
		if ms, err := jsonscan.Members(body); err == nil {
			return lastOfEach(ms), nil
		}
	}
	// Not an object (or not JSON): encoding/json says why, and decodes
	// null as no members.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("the request body is not a JSON object: %v", err)
	}
	ms := make([]jsonscan.Member, 0, len(fields))
	for name, raw := range fields {
		ms = append(ms, jsonscan.Member{Name: name, Value: raw})
	}
	return lastOfEach(ms), nil
}

// Answer is what an entry keeps of an upstream answer: the assistant's
// text and, with cache_tool_calls, its tool calls (a JSON array).
type Answer struct {
	Content   string
	ToolCalls json.RawMessage
}

// Storable returns the assistant text of an upstream answer worth caching,
// or why it is not (see StorableAnswer).
func (c *Config) Storable(status int, body []byte) (string, string) {
	a, why := c.StorableAnswer(status, body)
	return a.Content, why
}

// StorableAnswer returns an upstream answer worth caching, or why it is
// not: only 2xx answers holding exactly one choice with plain assistant
// content (not cut short by a content filter) are kept, and answers that
// call tools only with cache_tool_calls (from a chat.completion: the router
// merges a stream's chunks into one before the response phase). body is a
// chat.completion or, for streamed answers, its chunk events.
func (c *Config) StorableAnswer(status int, body []byte) (Answer, string) {
	if status < 200 || status > 299 {
		return Answer{}, fmt.Sprintf("upstream status %d is not 2xx", status)
	}
	var a Answer
	var why string
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		a, why = c.fromCompletion(trimmed)
	} else {
		a.Content, why = fromEvents(body)
	}
	if why != "" {
		return Answer{}, why
	}
	if a.Content == "" && len(a.ToolCalls) == 0 {
		return Answer{}, "the answer has no content"
	}
	if n := len(a.Content) + len(a.ToolCalls); n > c.MaxEntryBytes {
		return Answer{}, fmt.Sprintf("the answer is %d bytes, above max_entry_bytes %d", n, c.MaxEntryBytes)
	}
	return a, ""
}

type choice struct {
	Message *struct {
		Content   *string           `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
	} `json:"message"`
	Delta *struct {
		Content   *string           `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
	} `json:"delta"`
	Index        int     `json:"index"`
	FinishReason *string `json:"finish_reason"`
}

func badFinish(f *string) string {
	if f != nil && *f != "stop" && *f != "length" {
		return "finish_reason " + *f
	}
	return ""
}

func (c *Config) fromCompletion(body []byte) (Answer, string) {
	var resp struct {
		Choices []choice `json:"choices"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return Answer{}, "the answer is not a chat.completion"
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message == nil {
		return Answer{}, fmt.Sprintf("the answer has %d choices; only single-choice answers are cached", len(resp.Choices))
	}
	ch := resp.Choices[0]
	if len(ch.Message.ToolCalls) > 0 {
		if !c.CacheToolCalls {
			return Answer{}, "the answer calls tools (cache_tool_calls is off)"
		}
		if f := ch.FinishReason; f != nil && *f != "tool_calls" && *f != "stop" {
			return Answer{}, "finish_reason " + *f
		}
		calls, _ := json.Marshal(ch.Message.ToolCalls)
		a := Answer{ToolCalls: calls}
		if ch.Message.Content != nil {
			a.Content = *ch.Message.Content
		}
		return a, ""
	}
	if why := badFinish(ch.FinishReason); why != "" {
		return Answer{}, why
	}
	if ch.Message.Content == nil {
		return Answer{}, "the answer has no content"
	}
	return Answer{Content: *ch.Message.Content}, ""
}

func fromEvents(body []byte) (string, string) {
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	done := false
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue
		}
		data := bytes.TrimSpace(line[5:])
		if string(data) == "[DONE]" {
			done = true
			break
		}
		var ev struct {
			Choices []choice `json:"choices"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return "", "an event of the answer is not JSON"
		}
		for _, ch := range ev.Choices {
			if ch.Index != 0 {
				return "", "the answer has several choices"
			}
			if ch.Delta != nil {
				if len(ch.Delta.ToolCalls) > 0 {
					return "", "the answer calls tools in stream fragments (only a merged chat.completion's tool calls are stored)"
				}
				if ch.Delta.Content != nil {
					b.WriteString(*ch.Delta.Content)
				}
			}
			if why := badFinish(ch.FinishReason); why != "" {
				return "", why
			}
		}
	}
	if sc.Err() != nil {
		return "", "the answer's events cannot be read: " + sc.Err().Error()
	}
	if !done {
		return "", "the event stream did not end with [DONE]"
	}
	return b.String(), ""
}

// FormatSimilarity writes a similarity the way a hit reports it. 1.0000 is
// for exact hits only: a semantic similarity is rounded down and shown as at
// most 0.9999 (two different texts can embed to the same vector).
func FormatSimilarity(s float64, exact bool) string {
	if exact {
		return "1.0000"
	}
	s = math.Floor(s*10000) / 10000
	return fmt.Sprintf("%.4f", math.Min(s, 0.9999))
}

// Agree reports whether a semantic candidate may answer a query: both
// texts must have the same slots and the same content words (up to order,
// inflection and function words), whatever their embeddings' similarity;
// why says what differs. The slots are also in the namespace, so the host
// only compares candidates with the same slots; the content words are
// checked here against the query stored with the entry.
func Agree(query, candidate string) (bool, string) {
	return slots.Agree(slots.Extract(query), slots.Extract(candidate))
}

// entry is what an entry holds: the query it answers and the answer (with
// its tool calls, if any).
type entry struct {
	Query     string          `json:"q"`
	Answer    string          `json:"a"`
	ToolCalls json.RawMessage `json:"t,omitempty"`
}

// EncodeEntry is the stored value of an answer to query.
func EncodeEntry(query, answer string) []byte { return EncodeAnswer(query, Answer{Content: answer}) }

// EncodeAnswer is the stored value of an answer (text and tool calls) to
// query.
func EncodeAnswer(query string, a Answer) []byte {
	b, _ := json.Marshal(entry{query, a.Content, a.ToolCalls})
	return b
}

// DecodeEntry reads a stored value's query and answer text.
func DecodeEntry(b []byte) (query, answer string, err error) {
	q, a, err := DecodeAnswer(b)
	return q, a.Content, err
}

// DecodeAnswer reads a stored value.
func DecodeAnswer(b []byte) (string, Answer, error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return "", Answer{}, fmt.Errorf("a cache entry is not one this plugin wrote: %v", err)
	}
	return e.Query, Answer{Content: e.Answer, ToolCalls: e.ToolCalls}, nil
}
