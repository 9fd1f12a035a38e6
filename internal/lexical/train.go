package lexical

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Example is one labelled training text.
type Example struct {
	Text  string
	Label string
}

// TrainConfig is what training and cross-validation vary.
type TrainConfig struct {
	Features Features
	Alpha    float64
	// MinCount drops features counted fewer times over the training texts; it
	// keeps the stored model small and removes one-off noise.
	MinCount     int
	UniformPrior bool
	// Temperature is stored with the model; see NaiveBayes.
	Temperature float64
}

func (c TrainConfig) String() string {
	f := c.Features
	s := fmt.Sprintf("bigrams=%t binary=%t symbols=%t numbers=%t prefix=%d alpha=%g min_count=%d",
		f.Bigrams, f.Binary, f.Symbols, f.Numbers, f.Prefix, c.Alpha, c.MinCount)
	if c.UniformPrior {
		s += " uniform_prior=true"
	}
	return s
}

// corpus holds texts turned into feature ids once, so that cross-validation
// folds only count.
type corpus struct {
	labels []string
	gold   []int
	docs   [][]int32
	vocab  []string
}

func newCorpus(examples []Example, labels []string, f Features) (*corpus, error) {
	li := make(map[string]int, len(labels))
	for i, l := range labels {
		li[l] = i
	}
	c := &corpus{labels: labels, gold: make([]int, len(examples)), docs: make([][]int32, len(examples))}
	ids := map[string]int32{}
	for i, ex := range examples {
		g, ok := li[ex.Label]
		if !ok {
			return nil, fmt.Errorf("lexical: example %d has unknown label %q", i, ex.Label)
		}
		c.gold[i] = g
		var doc []int32
		f.strings(ex.Text, func(s string) {
			id, ok := ids[s]
			if !ok {
				id = int32(len(c.vocab))
				ids[s] = id
				c.vocab = append(c.vocab, s)
			}
			doc = append(doc, id)
		})
		if f.Binary {
			slices.Sort(doc)
			doc = slices.Compact(doc)
		}
		c.docs[i] = doc
	}
	return c, nil
}

// fitted is a model trained on a subset of the corpus, in corpus ids.
type fitted struct {
	nc       int
	kept     []bool
	logProb  []float64 // [id*nc+c], valid where kept
	logPrior []float64
	counts   []int32
	docs     []int
}

func (c *corpus) fit(train []int, cfg TrainConfig) *fitted {
	nc, nv := len(c.labels), len(c.vocab)
	f := &fitted{nc: nc, kept: make([]bool, nv), logProb: make([]float64, nv*nc), counts: make([]int32, nv*nc), docs: make([]int, nc)}
	for _, d := range train {
		g := c.gold[d]
		f.docs[g]++
		for _, id := range c.docs[d] {
			f.counts[int(id)*nc+g]++
		}
	}
	totals := make([]float64, nc)
	kept := 0
	for id := 0; id < nv; id++ {
		var sum int32
		for g := 0; g < nc; g++ {
			sum += f.counts[id*nc+g]
		}
		if sum == 0 || int(sum) < cfg.MinCount {
			continue
		}
		f.kept[id] = true
		kept++
		for g := 0; g < nc; g++ {
			totals[g] += float64(f.counts[id*nc+g])
		}
	}
	for g := 0; g < nc; g++ {
		den := math.Log(totals[g] + cfg.Alpha*float64(kept))
		for id := 0; id < nv; id++ {
			if f.kept[id] {
				f.logProb[id*nc+g] = math.Log(float64(f.counts[id*nc+g])+cfg.Alpha) - den
			}
		}
	}
	f.logPrior = priors(f.docs, cfg.UniformPrior)
	return f
}

func (f *fitted) score(doc []int32) []float64 {
	s := slices.Clone(f.logPrior)
	for _, id := range doc {
		if !f.kept[id] {
			continue
		}
		for g := range s {
			s[g] += f.logProb[int(id)*f.nc+g]
		}
	}
	return s
}

// model exports the fitted counts in their stored form.
func (c *corpus) model(f *fitted, cfg TrainConfig) *Model {
	m := &Model{
		Format:       ModelFormat,
		Labels:       slices.Clone(c.labels),
		Features:     cfg.Features,
		Alpha:        cfg.Alpha,
		UniformPrior: cfg.UniformPrior,
		Temperature:  cfg.Temperature,
		ClassDocs:    slices.Clone(f.docs),
	}
	var ids []int
	for id, k := range f.kept {
		if k {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return c.vocab[ids[i]] < c.vocab[ids[j]] })
	for _, id := range ids {
		m.Vocab = append(m.Vocab, c.vocab[id])
		var pairs []int32
		for g := 0; g < f.nc; g++ {
			if n := f.counts[id*f.nc+g]; n > 0 {
				pairs = append(pairs, int32(g), n)
			}
		}
		m.Counts = append(m.Counts, pairs)
	}
	return m
}

// Train fits a model on every example. Labels fixes the class order.
func Train(examples []Example, labels []string, cfg TrainConfig) (*Model, error) {
	if cfg.Alpha <= 0 {
		return nil, fmt.Errorf("lexical: alpha must be positive")
	}
	c, err := newCorpus(examples, labels, cfg.Features)
	if err != nil {
		return nil, err
	}
	all := make([]int, len(examples))
	for i := range all {
		all[i] = i
	}
	return c.model(c.fit(all, cfg), cfg), nil
}

// OutOfFold holds every example's joint log scores from the fold that did not
// train on it: the input to accuracy figures and to temperature fitting.
type OutOfFold struct {
	Labels []string
	Gold   []int
	Scores [][]float64
}

// Folds assigns examples to k folds, stratified by label and shuffled with a
// fixed seed so that reports are reproducible.
func Folds(examples []Example, k int, seed uint64) []int {
	byLabel := map[string][]int{}
	var order []string
	for i, ex := range examples {
		if _, ok := byLabel[ex.Label]; !ok {
			order = append(order, ex.Label)
		}
		byLabel[ex.Label] = append(byLabel[ex.Label], i)
	}
	sort.Strings(order)
	rng := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	fold := make([]int, len(examples))
	next := 0
	for _, l := range order {
		idx := byLabel[l]
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for _, i := range idx {
			fold[i] = next % k
			next++
		}
	}
	return fold
}

// CrossValidate trains k models, each without one fold, and scores that fold.
func CrossValidate(examples []Example, labels []string, cfg TrainConfig, fold []int, k int) (*OutOfFold, error) {
	c, err := newCorpus(examples, labels, cfg.Features)
	if err != nil {
		return nil, err
	}
	oof := &OutOfFold{Labels: labels, Gold: c.gold, Scores: make([][]float64, len(examples))}
	for f := 0; f < k; f++ {
		var train, test []int
		for i := range examples {
			if fold[i] == f {
				test = append(test, i)
			} else {
				train = append(train, i)
			}
		}
		m := c.fit(train, cfg)
		for _, i := range test {
			oof.Scores[i] = m.score(c.docs[i])
		}
	}
	return oof, nil
}

// ClassReport is one class's precision and recall.
type ClassReport struct {
	Label     string
	Support   int
	Precision float64
	Recall    float64
	F1        float64
}

// Report summarises out-of-fold predictions.
type Report struct {
	Accuracy float64
	MacroF1  float64
	// LogLoss is the mean negative log-probability of the true label at the
	// report's temperature.
	LogLoss     float64
	Temperature float64
	Classes     []ClassReport
}

// Report computes accuracy, per-class figures and log loss at temperature t.
func (o *OutOfFold) Report(t float64) Report {
	return o.ReportWith(ReportOptions{Temperature: t})
}

// ReportOptions say how out-of-fold predictions are judged.
type ReportOptions struct {
	Temperature float64
	// Boost applies the injection phrase boost; Texts are the examples'
	// texts in corpus order.
	Boost *PhraseBoost
	Texts []string
	// Merge reports training classes under other labels, as Model.Merge.
	Merge map[string]string
	// Include, when set, limits the report to the examples it accepts.
	Include func(i int) bool
}

// ReportWith computes a report as the options say.
func (o *OutOfFold) ReportWith(opt ReportOptions) Report {
	t := opt.Temperature
	var bi *boost
	if opt.Boost != nil {
		bi = &boost{label: slices.Index(o.Labels, opt.Boost.Label), floor: opt.Boost.Floor}
	}
	var labels []string
	outIndex := make([]int, len(o.Labels))
	for c, l := range o.Labels {
		if to, ok := opt.Merge[l]; ok {
			l = to
		}
		i := slices.Index(labels, l)
		if i < 0 {
			i = len(labels)
			labels = append(labels, l)
		}
		outIndex[c] = i
	}
	nc := len(labels)
	tp, fp, fn := make([]int, nc), make([]int, nc), make([]int, nc)
	support := make([]int, nc)
	correct, n := 0, 0
	var loss float64
	for i, s := range o.Scores {
		if opt.Include != nil && !opt.Include(i) {
			continue
		}
		n++
		g := outIndex[o.Gold[i]]
		support[g]++
		inner := softmax(s, t)
		if bi != nil {
			applyBoost(inner, bi, opt.Texts[i])
		}
		probs := make([]float64, nc)
		for c, p := range inner {
			probs[outIndex[c]] += p
		}
		p := argmax(probs)
		if p == g {
			correct++
			tp[g]++
		} else {
			fp[p]++
			fn[g]++
		}
		loss -= math.Log(math.Max(probs[g], 1e-12))
	}
	if n == 0 {
		return Report{Temperature: t}
	}
	r := Report{Accuracy: float64(correct) / float64(n), LogLoss: loss / float64(n), Temperature: t}
	for c := 0; c < nc; c++ {
		cr := ClassReport{Label: labels[c], Support: support[c]}
		if tp[c]+fp[c] > 0 {
			cr.Precision = float64(tp[c]) / float64(tp[c]+fp[c])
		}
		if tp[c]+fn[c] > 0 {
			cr.Recall = float64(tp[c]) / float64(tp[c]+fn[c])
		}
		if cr.Precision+cr.Recall > 0 {
			cr.F1 = 2 * cr.Precision * cr.Recall / (cr.Precision + cr.Recall)
		}
		if cr.Support > 0 {
			r.MacroF1 += cr.F1
		}
		r.Classes = append(r.Classes, cr)
	}
	classes := 0
	for _, c := range r.Classes {
		if c.Support > 0 {
			classes++
		}
	}
	r.MacroF1 /= float64(max(classes, 1))
	return r
}

// FitTemperature picks, from a fixed grid, the softmax temperature with the
// lowest out-of-fold log loss.
func (o *OutOfFold) FitTemperature() float64 {
	return o.FitTemperatureWith(ReportOptions{})
}

// FitTemperatureWith is FitTemperature judged as opt says (its Temperature is
// ignored).
func (o *OutOfFold) FitTemperatureWith(opt ReportOptions) float64 {
	best, bestLoss := 1.0, math.Inf(1)
	for t := 1.0; t <= 64; t *= 1.1 {
		t = math.Round(t*100) / 100
		opt.Temperature = t
		if l := o.ReportWith(opt).LogLoss; l < bestLoss {
			best, bestLoss = t, l
		}
	}
	return best
}

func argmax(s []float64) int {
	best := 0
	for i, v := range s {
		if v > s[best] {
			best = i
		}
	}
	return best
}
