// Package toolselection is the built-in tool_selection plugin: it keeps the
// tools relevant to the prompt. Candidates are the request's tools or, when
// the request offers none, the configured tools database (tools_db); each is
// scored by the cosine similarity of its embedding (name and description) to
// the user's last message, and the top_k at or above similarity_threshold
// are kept, plus the always_keep list. Selection embeds text, so it runs in
// probe and live mode; a preview shows the static policy only.
//
// The package is the plugin's logic, testable on the host; wasm.go joins it
// to the SDK and guest/ builds the module. It does no I/O: embeddings come
// through the function the caller passes.
package toolselection

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "tool_selection"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Defaults and bounds (spec 001 "Tools selection": similarity_threshold 0.2,
// fallback_to_empty true).
const (
	DefaultTopK      = 3
	DefaultThreshold = 0.2
	MaxTools         = 512
	// MaxQueryChars bounds the prompt text embedded: the last user message
	// is what the tools are chosen for, and a huge one says no more.
	MaxQueryChars = 4096
)

// Config is the plugin's configuration.
type Config struct {
	// TopK keeps at most this many selected tools (always_keep not counted).
	TopK int `json:"top_k,omitempty"`
	// SimilarityThreshold is the least cosine similarity a selected tool
	// needs: a decimal string ("0.2", as spec 001 writes it) or a number.
	SimilarityThreshold json.RawMessage `json:"similarity_threshold,omitempty"`
	// FallbackToEmpty: when no tool reaches the threshold, offer none but
	// always_keep (true, the default) rather than leave the tools as they were.
	FallbackToEmpty *bool `json:"fallback_to_empty,omitempty"`
	// AlwaysKeep are function names never removed (and, from tools_db,
	// always added).
	AlwaysKeep []string `json:"always_keep,omitempty"`
	// ToolsDB are tool definitions (OpenAI shape) offered when the request
	// has no tools of its own.
	ToolsDB []json.RawMessage `json:"tools_db,omitempty"`
	// ToolsDBPath is spec 001's file of tool definitions. A plugin has no
	// file system (its module runs sandboxed), so it is refused with the
	// inline alternative named.
	ToolsDBPath string `json:"tools_db_path,omitempty"`

	threshold float64
	db        []tool
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	if c.TopK == 0 {
		c.TopK = DefaultTopK
	}
	if c.TopK < 1 || c.TopK > MaxTools {
		return nil, pconfig.Errorf("top_k", "must be between 1 and %d, not %d", MaxTools, c.TopK)
	}
	c.threshold = DefaultThreshold
	if len(c.SimilarityThreshold) > 0 && string(c.SimilarityThreshold) != "null" {
		t, err := decimal(c.SimilarityThreshold)
		if err != nil {
			return nil, pconfig.Errorf("similarity_threshold", "%v", err)
		}
		if t < -1 || t > 1 || math.IsNaN(t) {
			return nil, pconfig.Errorf("similarity_threshold", "must be a cosine similarity between -1 and 1, not %v", t)
		}
		c.threshold = t
	}
	if c.FallbackToEmpty == nil {
		t := true
		c.FallbackToEmpty = &t
	}
	for i, n := range c.AlwaysKeep {
		if strings.TrimSpace(n) == "" {
			return nil, pconfig.Errorf(fmt.Sprintf("always_keep[%d]", i), "must not be empty")
		}
	}
	if c.ToolsDBPath != "" {
		return nil, pconfig.Errorf("tools_db_path", "cannot be read: a plugin runs without a file system; put the file's tool definitions in tools_db instead")
	}
	if len(c.ToolsDB) > MaxTools {
		return nil, pconfig.Errorf("tools_db", "has %d tools; at most %d", len(c.ToolsDB), MaxTools)
	}
	seen := map[string]bool{}
	for i, r := range c.ToolsDB {
		t, err := parseTool(r)
		if err != nil || t.name == "" {
			return nil, pconfig.Errorf(fmt.Sprintf("tools_db[%d]", i), "must be a tool object with function.name (OpenAI's shape)")
		}
		if seen[t.name] {
			return nil, pconfig.Errorf(fmt.Sprintf("tools_db[%d]", i), "repeats the function name %q", t.name)
		}
		seen[t.name] = true
		c.db = append(c.db, t)
	}
	return c, nil
}

// Threshold is the effective similarity threshold.
func (c *Config) Threshold() float64 { return c.threshold }

func decimal(raw json.RawMessage) (float64, error) {
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("must be a decimal string or a number")
		}
	} else {
		s = string(raw)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("must be a decimal string like \"0.2\" or a number, not %s", raw)
	}
	return v, nil
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
	// Remove are the request's tools to remove (function names); Add the
	// tools_db entries to add, in the database's order.
	Remove []string
	Add    []json.RawMessage
	// DeleteToolChoice: tool_choice names a removed tool, or requires a
	// tool and none is left.
	DeleteToolChoice bool
	// Kept are the function names offered after the plugin, in order.
	Kept []string
	// Source is "request" or "tools_db"; Candidates how many were scored.
	Source     string
	Candidates int
	// Scores are the similarities, by name (semantic selection only);
	// Names the candidates' names in order (reports list scores in it, so
	// that a report does not depend on map order).
	Scores map[string]float64
	Names  []string
	// Skipped says why nothing was selected (preview, no prompt, no tools).
	Skipped string
	Detail  string
}

type tool struct {
	raw         json.RawMessage
	name, descr string
}

// parseTool reads a tool's function name and description (the tool's own
// name for a non-function tool).
func parseTool(raw []byte) (tool, error) {
	ms, err := jsonscan.Members(raw)
	if err != nil {
		return tool{}, err
	}
	t := tool{raw: raw}
	if v := jsonscan.Lookup(ms, "name"); v != nil {
		t.name, _ = jsonscan.Unquote(v)
	}
	if fn := jsonscan.Lookup(ms, "function"); len(fn) > 0 && fn[0] == '{' {
		fm, err := jsonscan.Members(fn)
		if err != nil {
			return tool{}, err
		}
		if v := jsonscan.Lookup(fm, "name"); v != nil {
			t.name, _ = jsonscan.Unquote(v)
		}
		if v := jsonscan.Lookup(fm, "description"); v != nil {
			t.descr, _ = jsonscan.Unquote(v)
		}
	}
	if t.descr == "" {
		if v := jsonscan.Lookup(ms, "description"); v != nil {
			t.descr, _ = jsonscan.Unquote(v)
		}
	}
	return t, nil
}

// Text is what a tool is embedded as: its name (words split out of
// snake_case and camelCase, which an embedder reads better) and description.
func (t tool) Text() string { return ToolText(t.name, t.descr) }

// ToolText is the text a tool named name with description descr is
// embedded as.
func ToolText(name, descr string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.':
			b.WriteByte(' ')
		case i > 0 && r >= 'A' && r <= 'Z':
			b.WriteByte(' ')
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	if descr != "" {
		b.WriteString(": ")
		b.WriteString(descr)
	}
	return b.String()
}

// Run applies the policy to one request.
func (c *Config) Run(in Input) (*Result, error) {
	res := &Result{Source: "request"}
	var cands []tool
	if len(in.Tools) > 0 && string(in.Tools) != "null" {
		raws, err := jsonscan.Elements(in.Tools)
		if err != nil {
			return nil, fmt.Errorf("tools must be an array of tool objects: %v", err)
		}
		if len(raws) > MaxTools {
			return nil, fmt.Errorf("the request offers %d tools; the plugin handles at most %d", len(raws), MaxTools)
		}
		for i, r := range raws {
			t, err := parseTool(r)
			if err != nil {
				return nil, fmt.Errorf("tools[%d] must be a tool object: %v", i, err)
			}
			cands = append(cands, t)
		}
	}
	if len(cands) == 0 && len(c.db) > 0 {
		res.Source, cands = "tools_db", c.db
	}
	res.Candidates = len(cands)
	for _, t := range cands {
		res.Names = append(res.Names, t.name)
	}
	if len(cands) == 0 {
		res.Skipped = "the request offers no tools and no tools_db is configured"
		res.Detail = res.Skipped
		return res, nil
	}
	query := chatmsg.Truncate(chatmsg.LastUserText(in.Messages), MaxQueryChars)
	switch {
	case in.Embed == nil:
		res.Skipped = fmt.Sprintf("preview: semantic selection needs mode probe or live (it embeds text); %d candidate tools from the %s, top_k %d, similarity_threshold %g, always_keep [%s]",
			len(cands), res.Source, c.TopK, c.threshold, strings.Join(c.AlwaysKeep, ", "))
	case strings.TrimSpace(query) == "":
		res.Skipped = "no user message to select tools for"
	}
	if res.Skipped != "" {
		res.Detail = res.Skipped
		return res, nil
	}
	keep, err := c.selectTools(in.Embed, query, cands, res)
	if err != nil {
		return nil, err
	}
	for _, t := range cands {
		if keep[t.name] {
			res.Kept = append(res.Kept, t.name)
		}
	}
	if res.Source == "tools_db" {
		for _, t := range cands {
			if keep[t.name] {
				res.Add = append(res.Add, t.raw)
			}
		}
	} else {
		for _, t := range cands {
			if !keep[t.name] && !slices.Contains(res.Remove, t.name) {
				res.Remove = append(res.Remove, t.name)
			}
		}
		if len(res.Remove) > 0 && choiceGone(in.ToolChoice, res.Kept) {
			res.DeleteToolChoice = true
		}
	}
	res.Detail = fmt.Sprintf("kept %d of %d tools from the %s (top_k %d, similarity_threshold %g)", len(res.Kept), len(cands), res.Source, c.TopK, c.threshold)
	return res, nil
}

// selectTools scores cands against query and returns the names kept.
func (c *Config) selectTools(embed func([]string) ([][]float32, error), query string, cands []tool, res *Result) (map[string]bool, error) {
	texts := make([]string, 0, len(cands)+1)
	texts = append(texts, query)
	for _, t := range cands {
		texts = append(texts, t.Text())
	}
	vecs, err := embed(texts)
	if err != nil {
		return nil, fmt.Errorf("tool selection could not embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("tool selection: the host returned %d embeddings for %d texts", len(vecs), len(texts))
	}
	res.Scores = make(map[string]float64, len(cands))
	type scored struct {
		name  string
		i     int
		score float64
	}
	var pass []scored
	keep := map[string]bool{}
	for i, t := range cands {
		sc := Cosine(vecs[0], vecs[i+1])
		res.Scores[t.name] = sc
		if slices.Contains(c.AlwaysKeep, t.name) {
			keep[t.name] = true
			continue
		}
		if sc >= c.threshold {
			pass = append(pass, scored{t.name, i, sc})
		}
	}
	if len(pass) == 0 && !*c.FallbackToEmpty {
		for _, t := range cands {
			keep[t.name] = true
		}
		return keep, nil
	}
	sort.SliceStable(pass, func(a, b int) bool { return pass[a].score > pass[b].score })
	if len(pass) > c.TopK {
		pass = pass[:c.TopK]
	}
	for _, p := range pass {
		keep[p.name] = true
	}
	return keep, nil
}

// Rank orders candidate tool names by similarity to query, best first: the
// measurement harness (recall at k) reads it.
func Rank(embed func([]string) ([][]float32, error), query string, names, descrs []string) ([]string, error) {
	texts := []string{query}
	for i := range names {
		texts = append(texts, ToolText(names[i], descrs[i]))
	}
	vecs, err := embed(texts)
	if err != nil {
		return nil, err
	}
	idx := make([]int, len(names))
	score := make([]float64, len(names))
	for i := range names {
		idx[i], score[i] = i, Cosine(vecs[0], vecs[i+1])
	}
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] > score[idx[b]] })
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = names[j]
	}
	return out, nil
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

// choiceGone reports whether tool_choice can no longer be honoured: it names
// a function not kept, or it requires a tool and none is left.
func choiceGone(choice json.RawMessage, kept []string) bool {
	if len(choice) == 0 || string(choice) == "null" {
		return false
	}
	var s string
	if json.Unmarshal(choice, &s) == nil {
		return s == "required" && len(kept) == 0
	}
	var obj struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Name string `json:"name"`
	}
	if json.Unmarshal(choice, &obj) != nil {
		return false
	}
	name := obj.Function.Name
	if name == "" {
		name = obj.Name
	}
	return name != "" && !slices.Contains(kept, name)
}
