package worker

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

type classifyRequest struct {
	Model   string          `json:"model"`
	Input   json.RawMessage `json:"input"`
	Options struct {
		Overflow   string         `json:"overflow"`
		MaxTokens  int            `json:"max_tokens"`
		Window     *windowOptions `json:"window"`
		ReturnMeta bool           `json:"return_meta"`
	} `json:"options"`
}

type spanOut struct {
	Label       string  `json:"label"`
	Start       int     `json:"start"`
	End         int     `json:"end"`
	Text        string  `json:"text"`
	Probability float32 `json:"probability"`
}

type classifyItem struct {
	Index         int                `json:"index"`
	Label         string             `json:"label,omitempty"`
	Score         *float32           `json:"score,omitempty"`
	Probabilities map[string]float32 `json:"probabilities,omitempty"`
	Scores        map[string]float32 `json:"scores,omitempty"`
	Spans         *[]spanOut         `json:"spans,omitempty"`
	Windows       int                `json:"windows,omitempty"`
	Usage         *usage             `json:"usage,omitempty"`
	Error         *itemError         `json:"error,omitempty"`
}

type classifyResponse struct {
	Object  string         `json:"object"`
	Model   string         `json:"model"`
	Results []classifyItem `json:"results"`
	Usage   usage          `json:"usage"`
	Meta    *meta          `json:"meta,omitempty"`
}

// meta is answered with options.return_meta.
type meta struct {
	Revision       string             `json:"revision,omitempty"`
	Digest         string             `json:"model_digest,omitempty"`
	Profile        string             `json:"profile"`
	Engine         string             `json:"engine,omitempty"`
	Device         string             `json:"device,omitempty"`
	Representation string             `json:"representation,omitempty"`
	Timings        map[string]float64 `json:"timings"`
}

func (s *Server) meta(e *entry, info Info, t *timing) *meta {
	profile := e.spec.Profile
	if profile == "" {
		profile = "exact"
	}
	rev := info.Revision
	if rev == "" {
		rev = e.spec.Revision
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return &meta{Revision: rev, Digest: info.Digest, Profile: profile, Engine: info.Engine, Device: info.Device,
		Timings: map[string]float64{"parse_ms": ms(t.parse), "tokenize_ms": ms(t.tokenize), "queue_ms": ms(t.queue),
			"forward_ms": ms(t.forward), "elapsed_ms": ms(time.Since(t.start))}}
}

// parseInputs reads classify input: a string, a list of strings, a list of
// {text, text_pair} or a list of {context, question, answer}.
func parseInputs(raw json.RawMessage) ([]Pair, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("field /input is required: a string or a non-empty list")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []Pair{{Text: one}}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("field /input: expected a string or a list")
	}
	if len(list) == 0 {
		return nil, badRequest("field /input: the list is empty")
	}
	out := make([]Pair, len(list))
	for i, el := range list {
		if json.Unmarshal(el, &out[i].Text) == nil {
			continue
		}
		var obj struct {
			Text     *string `json:"text"`
			TextPair string  `json:"text_pair"`
			Context  *string `json:"context"`
			Question string  `json:"question"`
			Answer   string  `json:"answer"`
		}
		if err := json.Unmarshal(el, &obj); err != nil {
			return nil, badRequest("field /input/%d: expected a string, {text, text_pair} or {context, question, answer}", i)
		}
		switch {
		case obj.Text != nil && obj.Context == nil:
			out[i] = Pair{Text: *obj.Text, Pair: obj.TextPair}
		case obj.Context != nil && obj.Text == nil:
			// The context is read first; the question and answer form the pair.
			pair := obj.Question
			if obj.Answer != "" {
				pair += "\n" + obj.Answer
			}
			out[i] = Pair{Text: *obj.Context, Pair: pair}
		default:
			return nil, badRequest("field /input/%d: give either text (with optional text_pair) or context (with question and answer)", i)
		}
	}
	return out, nil
}

func (s *Server) classify(ctx context.Context, body []byte, t *timing) (any, *apiError) {
	mark := time.Now()
	req, inputs, aerr := decodeClassify(body)
	if aerr != nil {
		return nil, aerr
	}
	e, info, b, aerr := s.resolve(t, req.Model, "classify", TaskSequence, TaskTokens)
	if aerr != nil {
		return nil, aerr
	}
	bud, aerr := parseBudget(req.Options.Overflow, req.Options.MaxTokens, req.Options.Window, scanBudgetOption(e.spec))
	if aerr != nil {
		return nil, aerr
	}
	since(&t.parse, &mark)

	// Tokenize: each input becomes one or more pieces (windows).
	preps := make([]prepared, len(inputs))
	var units []unit
	direct := handOver(b.model, info, bud)
	for i, in := range inputs {
		if direct {
			preps[i] = prepared{pieces: []piece{{text: in.Text}}, deferred: true}
			units = append(units, unit{pair: in, tokens: estimateTokens(in.Text+in.Pair, info.MaxInputTokens)})
			continue
		}
		pb := bud
		pairTokens := 0
		if in.Pair != "" {
			ends, _, err := b.model.Tokenize(in.Pair, max(info.MaxInputTokens/2, 1))
			if err == nil {
				pairTokens = len(ends)
				if len(ends) > 0 && ends[len(ends)-1] < len(in.Pair) && len(ends) >= max(info.MaxInputTokens/2, 1) {
					inputs[i].Pair = in.Pair[:ends[len(ends)-1]]
				}
			}
			if pb.overflow != overflowWindow {
				room := max(info.MaxInputTokens-pairTokens, 1)
				if pb.maxTokens == 0 || pb.maxTokens > room {
					pb.maxTokens = room
				}
			}
		}
		preps[i] = prepare(b.model, info, in.Text, pb)
		if preps[i].err == nil {
			preps[i].tokens += pairTokens // usage counts the pair too
		}
		for _, pc := range preps[i].pieces {
			units = append(units, unit{pair: Pair{Text: pc.text, Pair: inputs[i].Pair}, tokens: pc.tokens + pairTokens})
		}
	}
	since(&t.tokenize, &mark)

	o := opClassify
	if info.Task == TaskTokens {
		o = opTokens
	}
	res, aerr := s.infer(ctx, e, b, o, units, t)
	if aerr != nil {
		return nil, aerr
	}
	mark = time.Now()
	out := classifyResponse{Object: "list", Model: e.name, Results: make([]classifyItem, len(inputs))}
	k := 0
	for i, p := range preps {
		item := classifyItem{Index: i}
		if p.err != nil {
			item.Error = p.err
			out.Results[i] = item
			continue
		}
		rs := res[k : k+len(p.pieces)]
		k += len(p.pieces)
		p.settle(rs[0])
		if len(p.pieces) > 1 {
			item.Windows = len(p.pieces)
		}
		item.Usage = &usage{InputTokens: p.tokens, TokensLowerBound: p.lowerBound}
		out.Usage.InputTokens += p.tokens
		out.Usage.TokensLowerBound = out.Usage.TokensLowerBound || p.lowerBound
		if err := firstErr(rs); err != nil {
			item.Error, item.Usage = &itemError{"inference_failed", err.Error()}, nil
			out.Results[i] = item
			continue
		}
		if info.Task == TaskTokens {
			spans := mergeSpans(inputs[i].Text, p.pieces, rs)
			item.Spans = &spans
		} else {
			fillScores(&item, info, rs)
		}
		out.Results[i] = item
	}
	if req.Options.ReturnMeta {
		out.Meta = s.meta(e, info, t)
	}
	since(&t.post, &mark)
	return out, nil
}

func firstErr(rs []Result) error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// fillScores writes label probabilities (softmax heads) or independent scores
// (multi-label heads). Read in windows, each label keeps its highest value
// over the windows, so that a label any part of the input shows is reported.
func fillScores(item *classifyItem, info Info, rs []Result) {
	scores := make(map[string]float32, len(info.Labels))
	best, bestP := "", float32(-1)
	for li, l := range info.Labels {
		var v float32
		for _, r := range rs {
			if li < len(r.Scores) && r.Scores[li] > v {
				v = r.Scores[li]
			}
		}
		scores[l] = v
		if v > bestP {
			best, bestP = l, v
		}
	}
	if info.MultiLabel {
		item.Scores = scores
		return
	}
	item.Label, item.Score, item.Probabilities = best, &bestP, scores
}

// mergeSpans maps the spans of each window back onto the input (code point
// offsets, end exclusive), keeping one span where windows overlap.
func mergeSpans(text string, pieces []piece, rs []Result) []spanOut {
	type key struct {
		label      string
		start, end int
	}
	seen := map[key]int{}
	out := []spanOut{}
	for w, r := range rs {
		off := pieces[w].offset
		for _, sp := range r.Spans {
			s, e := sp.Start+off, sp.End+off
			if s < 0 || e > len(text) || s > e {
				continue
			}
			k := key{sp.Label, s, e}
			if i, ok := seen[k]; ok {
				out[i].Probability = max(out[i].Probability, sp.Probability)
				continue
			}
			seen[k] = len(out)
			out = append(out, spanOut{Label: sp.Label, Start: codePoints(text, s), End: codePoints(text, e), Text: text[s:e], Probability: sp.Probability})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int             `json:"dimensions"`
	Layer          *int            `json:"layer"`
	EncodingFormat string          `json:"encoding_format"`
	User           string          `json:"user"`
	Options        struct {
		MaxTokens  int  `json:"max_tokens"`
		ReturnMeta bool `json:"return_meta"`
	} `json:"options"`
}

type embeddingItem struct {
	Object    string     `json:"object"`
	Index     int        `json:"index"`
	Embedding []float32  `json:"embedding"`
	Error     *itemError `json:"error,omitempty"`
}

func (s *Server) embeddings(ctx context.Context, body []byte, t *timing) (any, *apiError) {
	mark := time.Now()
	var req embeddingsRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	var texts []string
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		texts = []string{one}
	} else if err := json.Unmarshal(req.Input, &texts); err != nil || len(texts) == 0 {
		return nil, badRequest("field /input: expected a string or a non-empty list of strings (token arrays, images and audio are not accepted by this worker's models)")
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" {
		return nil, badRequest("field /encoding_format: only \"float\" is served")
	}
	e, info, b, aerr := s.resolve(t, req.Model, "embeddings", TaskEmbedding)
	if aerr != nil {
		return nil, aerr
	}
	layer := 0
	if req.Layer != nil {
		_, serves := b.model.(LayerEmbedder)
		switch {
		case len(info.Layers) == 0 || !serves:
			return nil, badRequest("field /layer: model %q declares no selectable layers (config.json junction.layers); leave layer out", e.name)
		case !slices.Contains(info.Layers, *req.Layer):
			return nil, badRequest("field /layer: model %q declares layers %v (got %d)", e.name, info.Layers, *req.Layer)
		}
		layer = *req.Layer
	}
	dims := 0
	if req.Dimensions != 0 {
		// The model's own width is always declared: it is the vector as is.
		ok := req.Dimensions == info.Dimensions && info.Dimensions > 0
		for _, d := range info.Matryoshka {
			ok = ok || d == req.Dimensions
		}
		if !ok {
			return nil, badRequest("field /dimensions: model %q does not declare %d dimensions (it declares its width %d and the truncations %v)", e.name, req.Dimensions, info.Dimensions, info.Matryoshka)
		}
		dims = req.Dimensions
	}
	since(&t.parse, &mark)
	preps := make([]prepared, len(texts))
	var units []unit
	ebud := budget{overflow: overflowTruncate, maxTokens: req.Options.MaxTokens}
	direct := handOver(b.model, info, ebud)
	for i, text := range texts {
		if direct {
			preps[i] = prepared{pieces: []piece{{text: text}}, deferred: true}
			units = append(units, unit{pair: Pair{Text: text}, tokens: estimateTokens(text, info.MaxInputTokens)})
			continue
		}
		preps[i] = prepare(b.model, info, text, ebud)
		for _, pc := range preps[i].pieces {
			units = append(units, unit{pair: Pair{Text: pc.text}, tokens: pc.tokens})
		}
	}
	since(&t.tokenize, &mark)
	res, aerr := s.inferLayer(ctx, e, b, opEmbed, layer, units, t)
	if aerr != nil {
		return nil, aerr
	}
	mark = time.Now()
	type embUsage struct {
		PromptTokens     int  `json:"prompt_tokens"`
		TotalTokens      int  `json:"total_tokens"`
		TokensLowerBound bool `json:"tokens_lower_bound,omitempty"`
	}
	out := struct {
		Object string          `json:"object"`
		Data   []embeddingItem `json:"data"`
		Model  string          `json:"model"`
		Usage  embUsage        `json:"usage"`
		Meta   *meta           `json:"meta,omitempty"`
	}{Object: "list", Model: e.name, Data: make([]embeddingItem, len(texts))}
	k := 0
	for i, p := range preps {
		it := embeddingItem{Object: "embedding", Index: i}
		if p.err != nil {
			it.Error = p.err
		} else {
			r := res[k]
			k++
			p.settle(r)
			if r.Err != nil {
				it.Error = &itemError{"inference_failed", r.Err.Error()}
			} else {
				it.Embedding = r.Vector
				if dims > 0 && dims < len(r.Vector) {
					it.Embedding = normalize(append([]float32(nil), r.Vector[:dims]...))
				}
			}
			out.Usage.PromptTokens += p.tokens
			out.Usage.TokensLowerBound = out.Usage.TokensLowerBound || p.lowerBound
		}
		out.Data[i] = it
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	if req.Options.ReturnMeta {
		out.Meta = s.meta(e, info, t)
		d := info.Dimensions
		if dims > 0 {
			d = dims
		}
		out.Meta.Representation = representation(e.name, info, d)
		if layer != 0 {
			out.Meta.Representation += "/layer" + strconv.Itoa(layer)
		}
	}
	since(&t.post, &mark)
	return out, nil
}

// representation names the vector space: vectors with equal names compare.
func representation(name string, info Info, dims int) string {
	id := info.Digest
	if id == "" {
		id = info.Revision
	}
	if id == "" {
		id = name
	}
	if len(id) > 16 {
		id = id[:16]
	}
	return name + "@" + id + "/d" + strconv.Itoa(dims)
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
	return v
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

type rerankRequest struct {
	Model           string   `json:"model"`
	Query           *string  `json:"query"`
	Documents       []string `json:"documents"`
	TopN            int      `json:"top_n"`
	ReturnDocuments bool     `json:"return_documents"`
	Options         struct {
		MaxTokens  int  `json:"max_tokens"`
		ReturnMeta bool `json:"return_meta"`
	} `json:"options"`
}

type rerankItem struct {
	Index          int        `json:"index"`
	RelevanceScore *float64   `json:"relevance_score,omitempty"`
	Rank           int        `json:"rank,omitempty"`
	Document       *string    `json:"document,omitempty"`
	Error          *itemError `json:"error,omitempty"`
}

// rerank scores documents against the query: a cross-encoder's score, or the
// cosine similarity of embeddings for an embedding model. Results come in
// input order, each with its rank; top_n keeps only the best n.
func (s *Server) rerank(ctx context.Context, body []byte, t *timing) (any, *apiError) {
	mark := time.Now()
	var req rerankRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if req.Query == nil {
		return nil, badRequest("field /query is required")
	}
	if len(req.Documents) == 0 {
		return nil, badRequest("field /documents: give at least one document")
	}
	if req.TopN < 0 {
		return nil, badRequest("field /top_n: must be positive")
	}
	e, info, b, aerr := s.resolve(t, req.Model, "rerank", TaskRerank, TaskEmbedding)
	if aerr != nil {
		return nil, aerr
	}
	since(&t.parse, &mark)
	q := prepare(b.model, info, *req.Query, budget{overflow: overflowTruncate, maxTokens: req.Options.MaxTokens})
	if q.err != nil {
		return nil, badRequest("field /query: %s", q.err.Message)
	}
	query := q.pieces[0]
	preps := make([]prepared, len(req.Documents))
	var units []unit
	if info.Task == TaskEmbedding {
		units = append(units, unit{pair: Pair{Text: query.text}, tokens: query.tokens})
	}
	for i, d := range req.Documents {
		bud := budget{overflow: overflowTruncate, maxTokens: req.Options.MaxTokens}
		if info.Task == TaskRerank {
			bud.maxTokens = max(info.MaxInputTokens-query.tokens, 1)
		}
		preps[i] = prepare(b.model, info, d, bud)
		for _, pc := range preps[i].pieces {
			if info.Task == TaskRerank {
				units = append(units, unit{pair: Pair{Text: query.text, Pair: pc.text}, tokens: pc.tokens + query.tokens})
			} else {
				units = append(units, unit{pair: Pair{Text: pc.text}, tokens: pc.tokens})
			}
		}
	}
	since(&t.tokenize, &mark)
	o := opRerank
	if info.Task == TaskEmbedding {
		o = opEmbed
	}
	res, aerr := s.infer(ctx, e, b, o, units, t)
	if aerr != nil {
		return nil, aerr
	}
	mark = time.Now()
	u := usage{InputTokens: query.tokens, TokensLowerBound: q.lowerBound}
	items := make([]rerankItem, len(req.Documents))
	var order []int
	k := 0
	if o == opEmbed {
		if res[0].Err != nil {
			return nil, &apiError{500, "inference_failed", res[0].Err.Error()}
		}
		k = 1
	}
	for i, p := range preps {
		items[i] = rerankItem{Index: i}
		if req.ReturnDocuments {
			items[i].Document = &req.Documents[i]
		}
		if p.err != nil {
			items[i].Error = p.err
			continue
		}
		r := res[k]
		k++
		u.InputTokens += p.tokens
		u.TokensLowerBound = u.TokensLowerBound || p.lowerBound
		if r.Err != nil {
			items[i].Error = &itemError{"inference_failed", r.Err.Error()}
			continue
		}
		var sc float64
		if o == opEmbed {
			sc = cosine(res[0].Vector, r.Vector)
		} else if len(r.Scores) > 0 {
			sc = float64(r.Scores[0])
		}
		items[i].RelevanceScore = &sc
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return *items[order[a]].RelevanceScore > *items[order[b]].RelevanceScore })
	keep := map[int]bool{}
	for r, i := range order {
		items[i].Rank = r + 1
		keep[i] = req.TopN == 0 || r < req.TopN
	}
	results := items[:0:0]
	for i, it := range items {
		if it.Error != nil || keep[i] {
			results = append(results, it)
		}
	}
	out := struct {
		Object  string       `json:"object"`
		Model   string       `json:"model"`
		Results []rerankItem `json:"results"`
		Usage   usage        `json:"usage"`
		Meta    *meta        `json:"meta,omitempty"`
	}{"list", e.name, results, u, nil}
	if req.Options.ReturnMeta {
		out.Meta = s.meta(e, info, t)
	}
	since(&t.post, &mark)
	return out, nil
}
