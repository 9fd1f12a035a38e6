package recipes

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Defaults ApplyDefaults fills in, and those the engine applies itself.
const (
	DefaultAddress         = "127.0.0.1"
	DefaultListenerName    = "public"
	DefaultListenerPort    = 8801
	DefaultListenerTimeout = 300 * time.Second
	DefaultManagementPort  = 8080
	DefaultMetricsPort     = 9190
	DefaultExtprocPort     = 50051
	DefaultMaxBatchSize    = 100
	// DefaultMaxBodyBytes bounds a request body when a listener sets no
	// max_body_bytes.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultReasoningEffort is the effort the engine uses when neither the
	// modelRef nor providers.defaults names one. ApplyDefaults leaves
	// default_reasoning_effort empty.
	DefaultReasoningEffort = "medium"
	// DefaultAggregation is how embedding signals combine candidate similarities.
	DefaultAggregation = "max"
)

// ApplyDefaults fills every unset value that has a default, in place. It is
// idempotent and safe on a partly filled document:
//
//   - no listeners: one listener "public"; every listener: address 127.0.0.1,
//     port 8801, timeout 300s (a zero timeout counts as unset), max_body_bytes
//     DefaultMaxBodyBytes; entrypoint stays empty (the default recipe);
//   - keyword signals: operator OR, word_boundary true;
//   - pii and jailbreak signals: on_unscanned block, action route;
//   - embedding signals: aggregation max;
//   - plugins: on_error skip;
//   - management API 127.0.0.1:8080, metrics 127.0.0.1:9190, ext_proc
//     127.0.0.1:50051, batch classification max_batch_size 100.
//
// It also normalizes spellings the engine compares exactly: personal-data type
// names to upper case, language codes to lower case, and complexity boundaries
// given as bare numbers in exponent form ("1e-05") to plain decimals.
// default_reasoning_effort stays empty: the engine applies "medium".
func (d *Document) ApplyDefaults() {
	if d == nil {
		return
	}
	if len(d.Listeners) == 0 {
		d.Listeners = []Listener{{Name: DefaultListenerName}}
	}
	for i := range d.Listeners {
		l := &d.Listeners[i]
		if l.Address == "" {
			l.Address = DefaultAddress
		}
		if l.Port == 0 {
			l.Port = DefaultListenerPort
		}
		if l.Timeout.Duration == 0 {
			l.Timeout.Duration = DefaultListenerTimeout
		}
		if l.MaxBodyBytes == 0 {
			l.MaxBodyBytes = DefaultMaxBodyBytes
		}
	}

	for i := range d.Providers.Models {
		if p := d.Providers.Models[i].PIIPolicy; p != nil {
			upperAll(p.TypesAllowed)
		}
	}

	for r := range d.Recipes {
		s := &d.Recipes[r].Signals
		for i := range s.Keywords {
			k := &s.Keywords[i]
			if k.Operator == "" {
				k.Operator = OpOR
			}
			if k.WordBoundary == nil {
				t := true
				k.WordBoundary = &t
			}
		}
		for i := range s.PII {
			p := &s.PII[i]
			upperAll(p.Types)
			if p.OnUnscanned == "" {
				p.OnUnscanned = UnscannedBlock
			}
			if p.Action == "" {
				p.Action = ActionRoute
			}
		}
		for i := range s.Jailbreak {
			j := &s.Jailbreak[i]
			if j.OnUnscanned == "" {
				j.OnUnscanned = UnscannedBlock
			}
			if j.Action == "" {
				j.Action = ActionRoute
			}
		}
		for i := range s.Language {
			for k, code := range s.Language[i].Languages {
				s.Language[i].Languages[k] = strings.ToLower(strings.TrimSpace(code))
			}
		}
		for i := range s.Embeddings {
			if s.Embeddings[i].Aggregation == "" {
				s.Embeddings[i].Aggregation = DefaultAggregation
			}
		}
		for i := range s.Complexity {
			c := &s.Complexity[i]
			for _, p := range []*Decimal{&c.Threshold, &c.HardAbove, &c.EasyBelow, &c.HardBelow, &c.EasyAbove} {
				*p = normalizeDecimal(*p)
			}
		}
		for i := range d.Recipes[r].Decisions {
			dec := &d.Recipes[r].Decisions[i]
			for k := range dec.Plugins {
				if dec.Plugins[k].OnError == "" {
					dec.Plugins[k].OnError = OnErrorSkip
				}
			}
		}
	}

	g := &d.Global
	m := &g.Services.ManagementAPI
	if m.Address == "" {
		m.Address = DefaultAddress
	}
	if m.Port == 0 {
		m.Port = DefaultManagementPort
	}
	mt := &g.Services.Observability.Metrics
	if mt.Address == "" {
		mt.Address = DefaultAddress
	}
	if mt.Port == 0 {
		mt.Port = DefaultMetricsPort
	}
	if g.Extproc.Address == "" {
		g.Extproc.Address = DefaultAddress
	}
	if g.Extproc.Port == 0 {
		g.Extproc.Port = DefaultExtprocPort
	}
	if b := &g.Services.API.BatchClassification; b.MaxBatchSize == 0 {
		b.MaxBatchSize = DefaultMaxBatchSize
	}
	for i := range g.RateLimits {
		if g.RateLimits[i].Window.Duration == 0 {
			g.RateLimits[i].Window.Duration = DefaultRateLimitWindow
		}
	}
}

func upperAll(list []string) {
	for i, s := range list {
		list[i] = strings.ToUpper(strings.TrimSpace(s))
	}
}

// normalizeDecimal rewrites a decimal given in a form other than a plain
// decimal (a bare JSON number such as 1e-05) as a plain decimal. Plain decimals
// and unparsable values are kept as written.
func normalizeDecimal(d Decimal) Decimal {
	s := strings.TrimSpace(string(d))
	if s == "" || decimalSyntax(s) {
		return d
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return d
	}
	return Decimal(strconv.FormatFloat(f, 'f', -1, 64))
}

// WholeWords reports whether keywords must match whole words (word_boundary,
// default true).
func (k KeywordSignal) WholeWords() bool {
	return k.WordBoundary == nil || *k.WordBoundary
}

// Recipe returns the recipe with the given name.
func (d *Document) Recipe(name string) (*Recipe, bool) {
	if d == nil {
		return nil, false
	}
	for i := range d.Recipes {
		if d.Recipes[i].Name == name {
			return &d.Recipes[i], true
		}
	}
	return nil, false
}

// DefaultRecipe names the default recipe: the one named "default", else the
// first; "" when there is none.
func (d *Document) DefaultRecipe() string {
	if d == nil || len(d.Recipes) == 0 {
		return ""
	}
	if _, ok := d.Recipe("default"); ok {
		return "default"
	}
	return d.Recipes[0].Name
}

// Entrypoint names the recipe a listener routes with: its entrypoint, else the
// default recipe.
func (d *Document) Entrypoint(l Listener) string {
	if l.Entrypoint != "" {
		return l.Entrypoint
	}
	return d.DefaultRecipe()
}

// Model returns the provider model with the given name.
func (d *Document) Model(name string) (*Model, bool) {
	if d == nil {
		return nil, false
	}
	for i := range d.Providers.Models {
		if d.Providers.Models[i].Name == name {
			return &d.Providers.Models[i], true
		}
	}
	return nil, false
}

// BodyLimit is the listener's request body bound: MaxBodyBytes, else
// DefaultMaxBodyBytes.
func (l Listener) BodyLimit() int64 {
	if l.MaxBodyBytes > 0 {
		return l.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

// SplitComplexityCondition splits a complexity condition name such as
// "reasoning_load:hard" into the signal name and the level. ok is false when
// there is no colon or the level is not hard, medium or easy.
func SplitComplexityCondition(name string) (signal, level string, ok bool) {
	i := strings.LastIndexByte(name, ':')
	if i < 0 {
		return name, "", false
	}
	signal, level = name[:i], name[i+1:]
	switch level {
	case LevelHard, LevelMedium, LevelEasy:
		return signal, level, signal != ""
	}
	return signal, level, false
}

// Clone returns a deep copy of the document.
func (d *Document) Clone() *Document {
	if d == nil {
		return nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		// Only hand-built documents with invalid raw JSON get here; copy what we can.
		c := *d
		return &c
	}
	var c Document
	if err := json.Unmarshal(b, &c); err != nil {
		c = *d
	}
	return &c
}
