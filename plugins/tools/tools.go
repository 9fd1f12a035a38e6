// Package tools is the built-in tools plugin: it narrows the tools a request
// offers the model. A static policy (allow and block lists of function names)
// runs in every mode; semantic selection (keep the top_k tools whose
// description is closest to the user's last message, at least threshold
// similar) needs the host's embedding function and therefore runs only in
// probe and live mode. strip_tool_history removes earlier turns' tool calls and
// tool results, which keeps long agent conversations small.
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O: embeddings come through the function the
// caller passes.
package tools

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "tools"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Config is the plugin's configuration.
type Config struct {
	// Allow, when not empty, keeps only these function names.
	Allow []string `json:"allow,omitempty"`
	// Block removes these function names.
	Block []string `json:"block,omitempty"`
	// StripToolHistory removes assistant tool calls and tool results that come
	// before the last user message.
	StripToolHistory bool `json:"strip_tool_history,omitempty"`
	// Semantic selection; off unless configured.
	Semantic *Semantic `json:"semantic,omitempty"`
}

// Semantic configures selection by similarity to the user's last message.
type Semantic struct {
	// TopK keeps at most this many tools (default 3).
	TopK int `json:"top_k,omitempty"`
	// Threshold is the least cosine similarity a kept tool needs (default 0.2).
	Threshold *float64 `json:"threshold,omitempty"`
	// FallbackToEmpty: when no tool reaches the threshold, offer none (true,
	// the default) rather than keeping the statically allowed ones.
	FallbackToEmpty *bool `json:"fallback_to_empty,omitempty"`
}

// Defaults of semantic selection.
const (
	DefaultTopK      = 3
	DefaultThreshold = 0.2
	MaxTools         = 1024
)

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	for i, n := range c.Allow {
		if strings.TrimSpace(n) == "" {
			return nil, pconfig.Errorf(fmt.Sprintf("allow[%d]", i), "must not be empty")
		}
		if slices.Contains(c.Block, n) {
			return nil, pconfig.Errorf(fmt.Sprintf("allow[%d]", i), "%q is also in block; a tool is either allowed or blocked", n)
		}
	}
	for i, n := range c.Block {
		if strings.TrimSpace(n) == "" {
			return nil, pconfig.Errorf(fmt.Sprintf("block[%d]", i), "must not be empty")
		}
	}
	if s := c.Semantic; s != nil {
		if s.TopK == 0 {
			s.TopK = DefaultTopK
		}
		if s.TopK < 1 || s.TopK > MaxTools {
			return nil, pconfig.Errorf("semantic.top_k", "must be between 1 and %d, not %d", MaxTools, s.TopK)
		}
		if s.Threshold == nil {
			t := DefaultThreshold
			s.Threshold = &t
		}
		if t := *s.Threshold; t < -1 || t > 1 || math.IsNaN(t) {
			return nil, pconfig.Errorf("semantic.threshold", "must be a cosine similarity between -1 and 1, not %v", t)
		}
		if s.FallbackToEmpty == nil {
			t := true
			s.FallbackToEmpty = &t
		}
	}
	return c, nil
}

// Input is what the plugin reads of a request.
type Input struct {
	Messages []chatmsg.Message
	// Tools and ToolChoice are the body's fields (nil when absent).
	Tools, ToolChoice json.RawMessage
	// Embed returns one vector per text; nil when the mode allows no backend
	// calls (preview).
	Embed func(texts []string) ([][]float32, error)
}

// Result is what the plugin wants changed.
type Result struct {
	// SetTools, when not nil, replaces the tools field; DeleteTools removes it
	// (when no tool is left). DeleteToolChoice removes a tool_choice that names
	// a removed tool (or any tool_choice when no tool is left).
	SetTools    json.RawMessage
	DeleteTools bool
	// Removed are the function names of the tools removed, in request order
	// (each once).
	Removed          []string
	DeleteToolChoice bool
	// Edits strip tool history from the messages.
	Edits []chatmsg.Edit
	// Selected is the number of tools offered after the plugin; Offered before.
	Selected, Offered int
	// SemanticSkipped says why semantic selection did not run, if it is configured.
	SemanticSkipped string
	// Scores are the similarities of the tools semantic selection looked at, by name.
	Scores map[string]float64
	Detail string
}

// Changed reports whether the result changes the request.
func (r *Result) Changed() bool {
	return r.SetTools != nil || r.DeleteTools || r.DeleteToolChoice || len(r.Edits) > 0
}

type tool struct {
	raw         json.RawMessage
	name, descr string
}

// Run applies the policy to one request.
func (c *Config) Run(in Input) (*Result, error) {
	res := &Result{}
	var notes []string
	var all []tool
	if len(in.Tools) > 0 && string(in.Tools) != "null" {
		raws, err := jsonscan.Elements(in.Tools)
		if err != nil {
			return nil, fmt.Errorf("tools must be an array of tool objects: %v", err)
		}
		if len(raws) > MaxTools {
			return nil, fmt.Errorf("the request offers %d tools; the plugin handles at most %d", len(raws), MaxTools)
		}
		for i, r := range raws {
			name, descr, err := toolNames(r)
			if err != nil {
				return nil, fmt.Errorf("tools[%d] must be an object with a function: %v", i, err)
			}
			all = append(all, tool{raw: r, name: name, descr: descr})
		}
	}
	res.Offered = len(all)
	kept := make([]tool, 0, len(all))
	var removed []string
	for _, t := range all {
		if (len(c.Allow) > 0 && !slices.Contains(c.Allow, t.name)) || slices.Contains(c.Block, t.name) {
			removed = append(removed, t.name)
			continue
		}
		kept = append(kept, t)
	}
	if len(removed) > 0 {
		notes = append(notes, "policy removed "+strings.Join(removed, ", "))
	}
	if s := c.Semantic; s != nil && len(kept) > 0 {
		query := chatmsg.LastUserText(in.Messages)
		switch {
		case in.Embed == nil:
			res.SemanticSkipped = "semantic selection needs mode probe or live (it embeds text); the static policy was applied"
			notes = append(notes, res.SemanticSkipped)
		case strings.TrimSpace(query) == "":
			res.SemanticSkipped = "no user message to select tools for"
			notes = append(notes, res.SemanticSkipped)
		default:
			var err error
			var dropped int
			if kept, dropped, err = c.selectSemantic(in.Embed, query, kept, res); err != nil {
				return nil, err
			}
			notes = append(notes, fmt.Sprintf("semantic selection kept %d (top_k %d, threshold %g), removed %d", len(kept), s.TopK, *s.Threshold, dropped))
		}
	}
	res.Selected = len(kept)
	for _, t := range all {
		if !slices.ContainsFunc(kept, func(k tool) bool { return k.name == t.name }) && !slices.Contains(res.Removed, t.name) {
			res.Removed = append(res.Removed, t.name)
		}
	}
	if len(kept) != len(all) {
		if len(kept) == 0 {
			res.DeleteTools = true
		} else {
			raws := make([]json.RawMessage, len(kept))
			for i, t := range kept {
				raws[i] = t.raw
			}
			res.SetTools, _ = json.Marshal(raws)
		}
		if choiceGone(in.ToolChoice, kept) {
			res.DeleteToolChoice = true
			notes = append(notes, "removed tool_choice, which named a removed tool")
		}
	}
	if c.StripToolHistory {
		if next, n := stripHistory(in.Messages); n > 0 {
			res.Edits = chatmsg.Transform(in.Messages, next)
			notes = append(notes, fmt.Sprintf("stripped %d tool-history messages", n))
		}
	}
	res.Detail = fmt.Sprintf("%d of %d tools offered", res.Selected, res.Offered)
	if len(notes) > 0 {
		res.Detail += "; " + strings.Join(notes, "; ")
	}
	return res, nil
}

func (c *Config) selectSemantic(embed func([]string) ([][]float32, error), query string, kept []tool, res *Result) ([]tool, int, error) {
	s := c.Semantic
	texts := make([]string, 0, len(kept)+1)
	texts = append(texts, query)
	for _, t := range kept {
		texts = append(texts, t.name+": "+t.descr)
	}
	vecs, err := embed(texts)
	if err != nil {
		return nil, 0, fmt.Errorf("semantic tool selection could not embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, 0, fmt.Errorf("semantic tool selection: the host returned %d embeddings for %d texts", len(vecs), len(texts))
	}
	type scored struct {
		t     tool
		i     int
		score float64
	}
	res.Scores = make(map[string]float64, len(kept))
	var pass []scored
	for i, t := range kept {
		sc := Cosine(vecs[0], vecs[i+1])
		res.Scores[t.name] = sc
		if sc >= *s.Threshold {
			pass = append(pass, scored{t, i, sc})
		}
	}
	if len(pass) == 0 && !*s.FallbackToEmpty {
		return kept, 0, nil
	}
	sort.SliceStable(pass, func(a, b int) bool { return pass[a].score > pass[b].score })
	if len(pass) > s.TopK {
		pass = pass[:s.TopK]
	}
	// Keep the request's order among the selected tools.
	sort.Slice(pass, func(a, b int) bool { return pass[a].i < pass[b].i })
	out := make([]tool, len(pass))
	for i, p := range pass {
		out[i] = p.t
	}
	return out, len(kept) - len(out), nil
}

// toolNames reads a tool's function name and description.
func toolNames(raw []byte) (name, descr string, err error) {
	ms, err := jsonscan.Members(raw)
	if err != nil {
		return "", "", err
	}
	fn := jsonscan.Lookup(ms, "function")
	if fn == nil || fn[0] != '{' {
		return "", "", nil
	}
	fm, err := jsonscan.Members(fn)
	if err != nil {
		return "", "", err
	}
	if v := jsonscan.Lookup(fm, "name"); v != nil {
		name, _ = jsonscan.Unquote(v)
	}
	if v := jsonscan.Lookup(fm, "description"); v != nil {
		descr, _ = jsonscan.Unquote(v)
	}
	return name, descr, nil
}

// Cosine is the cosine similarity of a and b (0 when either is zero or their
// lengths differ).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// choiceGone reports whether tool_choice can no longer be honoured: it names a
// function that was removed, or it requires a tool and none is left.
func choiceGone(choice json.RawMessage, kept []tool) bool {
	if len(choice) == 0 || string(choice) == "null" {
		return false
	}
	var s string
	if json.Unmarshal(choice, &s) == nil {
		return len(kept) == 0 && s != "none"
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(choice, &named) != nil || named.Function.Name == "" {
		return len(kept) == 0
	}
	for _, t := range kept {
		if t.name == named.Function.Name {
			return false
		}
	}
	return true
}

// stripHistory removes, before the last user message, tool messages and the
// tool_calls of assistant messages (an assistant message left with no content
// goes too). The current turn (from the last user message on) is kept whole,
// so a tool loop in progress still has its calls and results. next[i] is what
// message i becomes (nil: removed); n counts the messages touched.
func stripHistory(msgs []chatmsg.Message) (next []json.RawMessage, n int) {
	last := chatmsg.LastUser(msgs)
	if last <= 0 {
		return nil, 0
	}
	next = chatmsg.Raws(msgs)
	for i, m := range msgs[:last] {
		switch {
		case m.Role == "tool" || m.Role == "function":
			next[i] = nil
			n++
		case m.Role == "assistant" && len(m.ToolCallIDs) > 0:
			n++
			next[i] = nil
			if m.HasContent {
				if raw, err := chatmsg.DeleteMember(m.Raw, "tool_calls"); err == nil {
					next[i] = raw
				}
			}
		}
	}
	return next, n
}
