// Package rag is the built-in retrieval-augmented generation plugin: it
// retrieves from the router's stored data (a vector store, by id or name, or
// a knowledge base) with the user's last message, through the host's
// retrieve function, and injects the passages found into the request, as a
// system message or as a tool call and its result. In preview mode it
// retrieves nothing and injects the supplied_context the caller gives; in
// probe mode it retrieves without the host's result cache; in live mode it
// retrieves (the host may answer from its cache). When retrieval fails,
// on_failure says whether the request goes on with a warning (warn), goes on
// silently as if the plugin were not there (skip), or is refused (block).
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O: retrieval comes through the host
// function the adapter (wasm.go) calls.
package rag

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "rag"
	Version = "1.1.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Injection targets.
const (
	InjectSystem = "system"
	InjectTool   = "tool"
)

// Failure policies.
const (
	OnFailureWarn  = "warn"
	OnFailureSkip  = "skip"
	OnFailureBlock = "block"
)

// Config is the plugin's configuration.
type Config struct {
	// Store is what is searched: a vector store's id (vs_…) or name, or a
	// knowledge base's name.
	Store string `json:"store"`
	// TopK is how many passages to retrieve (unset: the knowledge base's
	// top_k, else the host's default; in a preview, DefaultTopK).
	TopK int `json:"top_k,omitempty"`
	// MinScore drops passages scoring below it (unset: a knowledge base's
	// own min_score applies, and a vector store keeps all).
	MinScore *float64 `json:"min_score,omitempty"`
	// Filters is an OpenAI vector-store search filter on the files'
	// attributes ({"type":"eq","key":"lang","value":"en"}, or and/or of
	// filters), passed to the host as JSON.
	Filters json.RawMessage `json:"filters,omitempty"`
	// Injection is system (default) or tool.
	Injection string `json:"injection,omitempty"`
	// Template wraps the passages; {context} marks where they go.
	Template string `json:"template,omitempty"`
	// MaxContextChars bounds the injected text (default 8000).
	MaxContextChars int `json:"max_context_chars,omitempty"`
	// OnFailure is warn (default), skip or block.
	OnFailure string `json:"on_failure,omitempty"`

	filter string // Filters, compacted
}

// Defaults.
const (
	// DefaultTopK is how many supplied passages a preview keeps when top_k
	// is unset (a real retrieval takes the source's default).
	DefaultTopK            = 3
	DefaultMaxContextChars = 8000
	DefaultTemplate        = "Use the following retrieved context to answer. If it does not help, say so.\n\n{context}"
	// ToolName is the function name of the synthetic tool call used by
	// injection: tool.
	ToolName = "retrieve_context"
	// ToolCallID is that call's id.
	ToolCallID = "junction_rag_0"
	maxTopK    = 50
)

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.Store) == "" {
		return nil, pconfig.Errorf("store", "is required: a vector store's id or name, or a knowledge base's name")
	}
	if c.TopK < 0 || c.TopK > maxTopK {
		return nil, pconfig.Errorf("top_k", "must be between 1 and %d, not %d", maxTopK, c.TopK)
	}
	if m := c.MinScore; m != nil && (math.IsNaN(*m) || *m < -1 || *m > 1) {
		return nil, pconfig.Errorf("min_score", "must be between -1 and 1, not %v", *m)
	}
	if f := strings.TrimSpace(string(c.Filters)); f != "" && f != "null" {
		// The grammar is checked here (for the configuration's own error) and
		// again by the host at every retrieve; the plugin imports nothing of
		// the host's, so it keeps this small copy.
		var v any
		if err := json.Unmarshal([]byte(f), &v); err != nil {
			return nil, pconfig.Errorf("filters", "must be a filter object: %v", err)
		}
		if err := checkFilter(v, "filters", 0); err != nil {
			return nil, err
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, []byte(f)) // it parsed, so it is valid JSON
		c.filter = compact.String()
	}
	switch c.Injection {
	case "":
		c.Injection = InjectSystem
	case InjectSystem, InjectTool:
	default:
		return nil, pconfig.Errorf("injection", "must be system or tool, not %q", c.Injection)
	}
	if c.Template == "" {
		c.Template = DefaultTemplate
	}
	if !strings.Contains(c.Template, "{context}") {
		return nil, pconfig.Errorf("template", "must contain {context}, where the passages go")
	}
	if c.MaxContextChars == 0 {
		c.MaxContextChars = DefaultMaxContextChars
	}
	if c.MaxContextChars < 1 || c.MaxContextChars > 1<<20 {
		return nil, pconfig.Errorf("max_context_chars", "must be between 1 and %d, not %d", 1<<20, c.MaxContextChars)
	}
	switch c.OnFailure {
	case "":
		c.OnFailure = OnFailureWarn
	case OnFailureWarn, OnFailureSkip, OnFailureBlock:
	default:
		return nil, pconfig.Errorf("on_failure", "must be warn, skip or block, not %q", c.OnFailure)
	}
	return c, nil
}

// Passage is one retrieved (or supplied) piece of context.
type Passage struct {
	Text   string  `json:"text"`
	Source string  `json:"source,omitempty"`
	Score  float64 `json:"score,omitempty"`
}

// RetrieveArgs is the retrieve call for query: k 0 and no min_score leave
// the source's defaults (a knowledge base's top_k and min_score).
func (c *Config) RetrieveArgs(query string) abi.RetrieveArgs {
	a := abi.RetrieveArgs{Source: c.Store, Query: query, K: uint32(c.TopK), Filter: c.filter}
	if c.MinScore != nil {
		a.MinScore, a.HasMinScore = float32(*c.MinScore), true
	}
	return a
}

// Passages reads retrieve's hits: each payload is JSON {"text", "source"
// (the file's name), "file_id", "vector_store_id", "chunk_index",
// "attributes"}; a hit without a source is named by its id. A payload that
// is not such an object is taken as the passage's text.
func Passages(hits []abi.VectorHit) []Passage {
	out := make([]Passage, 0, len(hits))
	for _, h := range hits {
		p := Passage{Text: string(h.Payload), Source: h.ID, Score: float64(h.Score)}
		var doc struct {
			Text   string `json:"text"`
			Source string `json:"source"`
		}
		if len(h.Payload) > 0 && h.Payload[0] == '{' && json.Unmarshal(h.Payload, &doc) == nil && doc.Text != "" {
			p.Text = doc.Text
			if doc.Source != "" {
				p.Source = doc.Source
			}
		}
		out = append(out, p)
	}
	return out
}

// Result is what the plugin wants done.
type Result struct {
	Edits []chatmsg.Edit
	// Skipped: nothing injected and the plugin chose not to act (on_failure
	// skip, or nothing to search for).
	Skipped bool
	// Block, when not empty, refuses the request with this message (status 503).
	Block string
	// Warning is set when retrieval failed and on_failure is warn.
	Warning string
	// Injected is the number of passages injected; Chars their text's length.
	Injected, Chars int
	// Sources and Scores are the injected passages' sources (file names)
	// and scores, in order.
	Sources []string
	Scores  []float64
	Detail  string
}

// Query is the text searched for: the user's last message.
func Query(msgs []chatmsg.Message) string { return chatmsg.LastUserText(msgs) }

// Inject builds the result from what retrieval gave: passages, or the error
// that stopped it.
func (c *Config) Inject(msgs []chatmsg.Message, passages []Passage, retrievalErr error) *Result {
	return c.inject(msgs, passages, retrievalErr, false)
}

// InjectSupplied builds the result from a preview's supplied_context (an
// unset top_k keeps DefaultTopK of them).
func (c *Config) InjectSupplied(msgs []chatmsg.Message, passages []Passage) *Result {
	return c.inject(msgs, passages, nil, true)
}

func (c *Config) inject(msgs []chatmsg.Message, passages []Passage, retrievalErr error, supplied bool) *Result {
	if retrievalErr != nil {
		why := fmt.Sprintf("retrieval from %q failed: %v", c.Store, retrievalErr)
		switch c.OnFailure {
		case OnFailureBlock:
			return &Result{Block: "the request needs context from the knowledge base, which is unavailable", Detail: why + " (on_failure: block)"}
		case OnFailureSkip:
			return &Result{Skipped: true, Detail: why + " (on_failure: skip)"}
		}
		return &Result{Warning: why, Detail: why + "; the request goes on without context (on_failure: warn)"}
	}
	topK := c.TopK
	if topK == 0 {
		topK = maxTopK
		if supplied {
			topK = DefaultTopK
		}
	}
	var kept []Passage
	for _, p := range passages {
		if strings.TrimSpace(p.Text) == "" || (c.MinScore != nil && p.Score < *c.MinScore) {
			continue
		}
		kept = append(kept, p)
		if len(kept) == topK {
			break
		}
	}
	if len(kept) == 0 {
		why := "nothing was found"
		if len(passages) > 0 && c.MinScore != nil {
			why = fmt.Sprintf("no passage reached min_score %g", *c.MinScore)
		}
		return &Result{Skipped: true, Detail: fmt.Sprintf("%s in %q; nothing injected", why, c.Store)}
	}
	var b strings.Builder
	used := 0
	for i, p := range kept {
		var entry strings.Builder
		fmt.Fprintf(&entry, "[%d]", i+1)
		if p.Source != "" {
			fmt.Fprintf(&entry, " (%s)", p.Source)
		}
		entry.WriteString(" ")
		entry.WriteString(strings.TrimSpace(p.Text))
		sep := ""
		if b.Len() > 0 {
			sep = "\n\n"
		}
		left := c.MaxContextChars - b.Len() - len(sep)
		s := entry.String()
		if left <= 0 {
			break
		}
		if len(s) > left {
			s = chatmsg.Truncate(s, left)
		}
		b.WriteString(sep)
		b.WriteString(s)
		used++
	}
	context := b.String()
	res := &Result{Injected: used, Chars: len(context)}
	for _, p := range kept[:used] {
		res.Sources = append(res.Sources, p.Source)
		res.Scores = append(res.Scores, p.Score)
	}
	switch c.Injection {
	case InjectTool:
		at := len(msgs)
		if last := chatmsg.LastUser(msgs); last >= 0 {
			at = last + 1
		}
		args, _ := json.Marshal(map[string]string{"query": chatmsg.Truncate(Query(msgs), 512)})
		res.Edits = []chatmsg.Edit{
			{Kind: chatmsg.Insert, Index: at, Raw: chatmsg.NewToolCall(ToolCallID, ToolName, string(args))},
			{Kind: chatmsg.Insert, Index: at + 1, Raw: chatmsg.NewTool(ToolCallID, strings.Replace(c.Template, "{context}", context, 1))},
		}
		res.Detail = fmt.Sprintf("injected %d passages (%d chars) from %q as a %s tool result after the last user message", used, len(context), c.Store, ToolName)
	default:
		at := chatmsg.AfterInstructions(msgs)
		res.Edits = []chatmsg.Edit{{Kind: chatmsg.Insert, Index: at, Raw: chatmsg.New("system", strings.Replace(c.Template, "{context}", context, 1))}}
		res.Detail = fmt.Sprintf("injected %d passages (%d chars) from %q as a system message at messages[%d]", used, len(context), c.Store, at)
	}
	return res
}

// ParseSupplied reads supplied_context: an array of strings or of passages.
func ParseSupplied(raw json.RawMessage) ([]Passage, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("supplied_context must be an array of strings or {text, source, score} objects: %v", err)
	}
	out := make([]Passage, 0, len(elems))
	for i, e := range elems {
		var s string
		if json.Unmarshal(e, &s) == nil {
			out = append(out, Passage{Text: s})
			continue
		}
		var p Passage
		if err := json.Unmarshal(e, &p); err != nil || p.Text == "" {
			return nil, fmt.Errorf("supplied_context[%d] must be a string or an object with a text", i)
		}
		out = append(out, p)
	}
	return out, nil
}

// checkFilter checks an OpenAI vector-store filter: {type: eq|ne|gt|gte|lt|
// lte|in|nin, key, value} or {type: and|or, filters: [...]}.
func checkFilter(v any, path string, depth int) error {
	const want = `want {"type": eq|ne|gt|gte|lt|lte|in|nin, "key", "value"} or {"type": and|or, "filters": [...]}`
	f, ok := v.(map[string]any)
	if !ok || depth > 8 {
		return pconfig.Errorf(path, "is not a valid filter; %s", want)
	}
	typ, _ := f["type"].(string)
	switch typ {
	case "and", "or":
		subs, _ := f["filters"].([]any)
		if len(subs) == 0 {
			return pconfig.Errorf(path+".filters", "an %q filter needs filters", typ)
		}
		for i, sub := range subs {
			if err := checkFilter(sub, fmt.Sprintf("%s.filters[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		return nil
	case "eq", "ne", "gt", "gte", "lt", "lte", "in", "nin":
		if k, _ := f["key"].(string); k == "" {
			return pconfig.Errorf(path, "a %q comparison needs a key", typ)
		}
		list, isList := f["value"].([]any)
		if isList != (typ == "in" || typ == "nin") {
			return pconfig.Errorf(path+".value", "must be an array for in and nin, and a string, number or boolean otherwise")
		}
		if !isList {
			list = []any{f["value"]}
		}
		for _, e := range list {
			switch e.(type) {
			case string, float64, bool:
			default:
				return pconfig.Errorf(path+".value", "values must be strings, numbers or booleans")
			}
		}
		return nil
	}
	return pconfig.Errorf(path+".type", "must be eq, ne, gt, gte, lt, lte, in, nin, and or or (got %v); %s", f["type"], want)
}
