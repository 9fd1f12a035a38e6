package inference

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// prepared are a call's items and the flat list of encodings sent to the model.
type prepared struct {
	items []item
	encs  []tokenizer.Encoding
	first []int // per item: index of its first encoding in encs
}

func (m *Model) prepare(inputs []Input, l limits, forcePair bool, tm *Timings) prepared {
	began := time.Now()
	p := prepared{items: make([]item, len(inputs)), first: make([]int, len(inputs))}
	for i, in := range inputs {
		it := m.plan(in, forcePair || in.Pair != "", l)
		p.items[i] = it
		p.first[i] = len(p.encs)
		p.encs = append(p.encs, it.encs...)
	}
	tm.Tokenize += time.Since(began)
	return p
}

func (m *Model) checkTask(call string, tasks ...Task) error {
	for _, t := range tasks {
		if m.info.Task == t {
			return nil
		}
	}
	return fmt.Errorf("%w: model %s is a %s model; %s needs %v", ErrUnsupportedTask, m.info.Name, m.info.Task, call, tasks)
}

// Classify runs a sequence- or token-classification model. Results are in input order: label scores for
// sequence classification (softmax probabilities, or independent sigmoid scores when Info.MultiLabel), spans
// of the first text for token classification. Inputs that break the long-input rules fail alone (ItemError).
func (m *Model) Classify(ctx context.Context, inputs []Input, o ClassifyOptions) (ClassifyResponse, error) {
	var resp ClassifyResponse
	if err := m.checkTask("classify", TaskSequenceClassification, TaskTokenClassification); err != nil {
		return resp, err
	}
	l, err := m.limits(o.InputOptions)
	if err != nil {
		return resp, err
	}
	agg := o.Aggregate
	switch agg {
	case "":
		agg = AggregateMean
		if m.info.MultiLabel {
			agg = AggregateMax
		}
	case AggregateMax, AggregateMean:
	default:
		return resp, invalid("aggregate %q is not one of max, mean", agg)
	}
	p := m.prepare(inputs, l, false, &resp.Timings)
	outs, err := m.forward(ctx, p.encs, &resp.Timings)
	if err != nil {
		return resp, err
	}
	began := time.Now()
	resp.Results = make([]ClassifyResult, len(inputs))
	for i, it := range p.items {
		r := &resp.Results[i]
		r.Usage, r.Truncated, r.Err = it.usage, it.truncated, it.err
		resp.Usage = resp.Usage.Add(it.usage)
		if it.err != nil {
			continue
		}
		if len(it.encs) > 1 {
			r.Windows = len(it.encs)
		}
		rows := outs[p.first[i] : p.first[i]+len(it.encs)]
		if m.info.Task == TaskSequenceClassification {
			r.MultiLabel = m.info.MultiLabel
			r.Scores = m.sequenceScores(it, rows, agg)
		} else {
			text := inputs[i].Text
			if it.seq == 1 {
				text = inputs[i].Pair
			}
			r.Spans = m.tokenSpans(it, rows, text)
		}
	}
	resp.Timings.Post += time.Since(began)
	return resp, nil
}

func (m *Model) sequenceScores(it item, rows []rowOutput, agg Aggregate) []LabelScore {
	n := len(m.info.Labels)
	acc := make([]float64, n)
	var weight float64
	for w, row := range rows {
		probs := m.activate(row.data[0])
		wt := float64(it.content[w])
		if wt == 0 {
			wt = 1
		}
		for k, p := range probs {
			switch agg {
			case AggregateMax:
				if w == 0 || p > acc[k] {
					acc[k] = p
				}
			default:
				acc[k] += wt * p
			}
		}
		weight += wt
	}
	scores := make([]LabelScore, n)
	for k := range scores {
		v := acc[k]
		if agg == AggregateMean {
			v /= weight
		}
		scores[k] = LabelScore{Label: m.info.Labels[k], Score: float32(v)}
	}
	return scores
}

// activate turns a row of outputs into scores: softmax probabilities, independent sigmoid scores, or the
// values themselves when the graph already computes probabilities.
func (m *Model) activate(logits []float32) []float64 {
	out := make([]float64, len(logits))
	m.activateInto(logits, out)
	return out
}

func (m *Model) activateInto(logits []float32, out []float64) {
	switch m.info.Activation {
	case "sigmoid":
		for i, x := range logits {
			out[i] = sigmoid(float64(x))
		}
	case "none":
		for i, x := range logits {
			out[i] = float64(x)
		}
	default:
		softmax(logits, out)
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func softmax(logits []float32, out []float64) {
	maxV := math.Inf(-1)
	for _, x := range logits {
		maxV = math.Max(maxV, float64(x))
	}
	var sum float64
	for i, x := range logits {
		out[i] = math.Exp(float64(x) - maxV)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
}

// tokenSpans labels each token of the text with the prediction of the window where it sits most centrally,
// then groups tokens into spans by their BIO tags.
func (m *Model) tokenSpans(it item, rows []rowOutput, text string) []Span {
	nl := len(m.info.Labels)
	type pred struct {
		label int
		prob  float64
		dist  int // distance from its window's centre; lower wins
		set   bool
	}
	preds := make([]pred, len(it.toks))
	probs := make([]float64, nl)
	for w, row := range rows {
		e := it.encs[w]
		k := 0 // index of the windowed token within this window
		for pos := 0; pos < e.Len(); pos++ {
			if e.Special[pos] || e.Sequence[pos] != it.seq {
				continue
			}
			g := it.starts[w] + k
			center := it.content[w] / 2
			dist := k - center
			if dist < 0 {
				dist = -dist
			}
			k++
			if preds[g].set && preds[g].dist <= dist {
				continue
			}
			m.activateInto(row.data[0][pos*nl:(pos+1)*nl], probs)
			best := 0
			for i := range probs {
				if probs[i] > probs[best] {
					best = i
				}
			}
			preds[g] = pred{label: best, prob: probs[best], dist: dist, set: true}
		}
	}
	var spans []Span
	var cur *Span
	var curN int
	flush := func() {
		if cur != nil {
			cur.Score = float32(float64(cur.Score) / float64(curN))
			// SentencePiece tokens carry the space before a word (▁word): spans hold the word only.
			for cur.ByteStart < cur.ByteEnd {
				r, size := utf8.DecodeRuneInString(text[cur.ByteStart:])
				if !unicode.IsSpace(r) {
					break
				}
				cur.ByteStart += size
			}
			for cur.ByteEnd > cur.ByteStart {
				r, size := utf8.DecodeLastRuneInString(text[:cur.ByteEnd])
				if !unicode.IsSpace(r) {
					break
				}
				cur.ByteEnd -= size
			}
			cur.Text = text[cur.ByteStart:cur.ByteEnd]
			spans = append(spans, *cur)
			cur = nil
		}
	}
	for g, pr := range preds {
		if !pr.set {
			continue
		}
		tag, entity := splitTag(m.info.Labels[pr.label])
		tk := it.toks[g]
		if entity == "" {
			flush()
			continue
		}
		if cur != nil && cur.Label == entity && tag != "B" {
			cur.ByteEnd = tk.End
			cur.Score += float32(pr.prob)
			curN++
			continue
		}
		flush()
		cur = &Span{Label: entity, ByteStart: tk.Start, ByteEnd: tk.End, Score: float32(pr.prob)}
		curN = 1
	}
	flush()
	// Code-point offsets, counted in one pass over the text.
	cp, last := 0, 0
	for i := range spans {
		cp += utf8.RuneCountInString(text[last:spans[i].ByteStart])
		spans[i].Start = cp
		spans[i].End = cp + utf8.RuneCountInString(text[spans[i].ByteStart:spans[i].ByteEnd])
		cp, last = spans[i].Start, spans[i].ByteStart
	}
	return spans
}

// splitTag reads a BIO (or IOB2, BILOU-free) label: "B-PER" → ("B", "PER"), "I-PER" → ("I", "PER"),
// "O" → ("O", ""), a bare "PER" → ("I", "PER").
func splitTag(label string) (tag, entity string) {
	if label == "O" || label == "" {
		return "O", ""
	}
	if len(label) > 2 && (label[1] == '-' || label[1] == '_') {
		switch label[0] {
		case 'B', 'b':
			return "B", label[2:]
		case 'I', 'i':
			return "I", label[2:]
		}
	}
	return "I", strings.TrimSpace(label)
}

// Embed returns one vector per text: pooled (mean over real tokens, the first token, or the last), normalised
// when the model normalises, truncated to Dimensions (Matryoshka) and then renormalised.
func (m *Model) Embed(ctx context.Context, texts []string, o EmbedOptions) (EmbedResponse, error) {
	var resp EmbedResponse
	if err := m.checkTask("embeddings", TaskEmbedding); err != nil {
		return resp, err
	}
	dims, outIdx, err := m.embedShape(o)
	if err != nil {
		return resp, err
	}
	l, err := m.limits(o.InputOptions)
	if err != nil {
		return resp, err
	}
	p := m.prepare(Texts(texts...), l, false, &resp.Timings)
	outs, err := m.forward(ctx, p.encs, &resp.Timings)
	if err != nil {
		return resp, err
	}
	began := time.Now()
	resp.Results = make([]EmbedResult, len(texts))
	for i, it := range p.items {
		r := &resp.Results[i]
		r.Usage, r.Truncated, r.Err = it.usage, it.truncated, it.err
		resp.Usage = resp.Usage.Add(it.usage)
		if it.err != nil {
			continue
		}
		if len(it.encs) > 1 {
			r.Windows = len(it.encs)
		}
		r.Embedding = m.pooled(it, outs[p.first[i]:p.first[i]+len(it.encs)], outIdx)
		if dims == 0 {
			dims = len(r.Embedding)
		}
		if dims < len(r.Embedding) {
			r.Embedding = r.Embedding[:dims]
		}
		if m.info.Normalize {
			normalize(r.Embedding)
		}
	}
	resp.Dimensions = dims
	resp.Timings.Post += time.Since(began)
	return resp, nil
}

func (m *Model) embedShape(o EmbedOptions) (dims, outIdx int, err error) {
	if o.Layer != 0 {
		idx, ok := m.layerOut[o.Layer]
		if !ok {
			return 0, 0, invalid("layer %d: model %s declares layers %v", o.Layer, m.info.Name, m.info.Layers)
		}
		outIdx = idx
	}
	switch d := o.Dimensions; {
	case d < 0:
		return 0, 0, invalid("dimensions %d: must be ≥ 0", d)
	case d == 0 || d == m.info.Dimensions:
		return m.info.Dimensions, outIdx, nil
	}
	for _, d := range m.info.MatryoshkaDimensions {
		if d == o.Dimensions {
			return d, outIdx, nil
		}
	}
	if len(m.info.MatryoshkaDimensions) == 0 {
		return 0, 0, invalid("dimensions %d: model %s declares no Matryoshka dimensions; its vectors have %d", o.Dimensions, m.info.Name, m.info.Dimensions)
	}
	return 0, 0, invalid("dimensions %d: model %s supports %v (or its full %d)", o.Dimensions, m.info.Name, m.info.MatryoshkaDimensions, m.info.Dimensions)
}

// pooled pools each window and averages the windows, weighted by their text tokens.
func (m *Model) pooled(it item, rows []rowOutput, outIdx int) []float32 {
	var acc []float64
	var weight float64
	for w, row := range rows {
		data, width := row.data[outIdx], row.width[outIdx]
		vec := make([]float64, width)
		if !row.perT[outIdx] {
			for k := range vec {
				vec[k] = float64(data[k])
			}
		} else if n := len(data) / width; n > 0 { // an input with no tokens at all pools to the zero vector
			switch m.info.Pooling {
			case PoolingCLS:
				for k := range vec {
					vec[k] = float64(data[k])
				}
			case PoolingLast:
				for k := range vec {
					vec[k] = float64(data[(n-1)*width+k])
				}
			default:
				for t := 0; t < n; t++ {
					for k := range vec {
						vec[k] += float64(data[t*width+k])
					}
				}
				for k := range vec {
					vec[k] /= float64(n)
				}
			}
		}
		if len(rows) == 1 {
			out := make([]float32, width)
			for k, v := range vec {
				out[k] = float32(v)
			}
			return out
		}
		wt := float64(it.content[w])
		if wt == 0 {
			wt = 1
		}
		if acc == nil {
			acc = make([]float64, width)
		}
		for k, v := range vec {
			acc[k] += wt * v
		}
		weight += wt
	}
	out := make([]float32, len(acc))
	for k, v := range acc {
		out[k] = float32(v / weight)
	}
	return out
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}

// Rerank scores each document against the query, in document order. A cross-encoder reads (query, document)
// pairs; the budget applies to each pair and, under window, the document is read in windows with the query in
// each, and a document's score is its best window's. An embedding model ranks by cosine similarity.
func (m *Model) Rerank(ctx context.Context, query string, docs []string, o RerankOptions) (RerankResponse, error) {
	var resp RerankResponse
	if err := m.checkTask("rerank", TaskRerank, TaskEmbedding); err != nil {
		return resp, err
	}
	if m.info.Task == TaskEmbedding {
		return m.rerankByEmbedding(ctx, query, docs, o)
	}
	l, err := m.limits(o.InputOptions)
	if err != nil {
		return resp, err
	}
	inputs := make([]Input, len(docs))
	for i, d := range docs {
		inputs[i] = Input{Text: query, Pair: d}
	}
	p := m.prepare(inputs, l, true, &resp.Timings)
	outs, err := m.forward(ctx, p.encs, &resp.Timings)
	if err != nil {
		return resp, err
	}
	began := time.Now()
	resp.Results = make([]RerankResult, len(docs))
	for i, it := range p.items {
		r := &resp.Results[i]
		r.Index, r.Usage, r.Truncated, r.Err = i, it.usage, it.truncated, it.err
		resp.Usage = resp.Usage.Add(it.usage)
		if it.err != nil {
			continue
		}
		if len(it.encs) > 1 {
			r.Windows = len(it.encs)
		}
		for w, row := range outs[p.first[i] : p.first[i]+len(it.encs)] {
			logits := row.data[0]
			var score, logit float64
			switch {
			case len(logits) >= 2:
				probs := m.activate(logits)
				score, logit = probs[1], float64(logits[1]-logits[0])
			case m.info.Activation == "none":
				score, logit = float64(logits[0]), float64(logits[0])
			default:
				logit = float64(logits[0])
				score = sigmoid(logit)
			}
			if w == 0 || score > float64(r.Score) {
				r.Score, r.Logit = float32(score), float32(logit)
			}
		}
	}
	resp.Timings.Post += time.Since(began)
	return resp, nil
}

func (m *Model) rerankByEmbedding(ctx context.Context, query string, docs []string, o RerankOptions) (RerankResponse, error) {
	var resp RerankResponse
	emb, err := m.Embed(ctx, append([]string{query}, docs...), EmbedOptions{InputOptions: o.InputOptions})
	if err != nil {
		return resp, err
	}
	resp.Timings = emb.Timings
	resp.Usage = emb.Usage
	q := emb.Results[0]
	resp.Results = make([]RerankResult, len(docs))
	for i := range docs {
		d := emb.Results[i+1]
		r := &resp.Results[i]
		r.Index, r.Usage, r.Truncated, r.Windows, r.Err = i, d.Usage, d.Truncated, d.Windows, d.Err
		if r.Err == nil && q.Err != nil {
			r.Err = &ItemError{Code: q.Err.Code, Message: "the query: " + q.Err.Message}
		}
		if r.Err != nil {
			continue
		}
		cos := cosine(q.Embedding, d.Embedding)
		r.Logit, r.Score = float32(cos), float32((cos+1)/2)
	}
	return resp, nil
}

func cosine(a, b []float32) float64 {
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
