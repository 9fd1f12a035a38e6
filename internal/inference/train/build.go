package train

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/lexical"
)

// BuildConfig is what `make models` fixes.
type BuildConfig struct {
	// TopWords keeps the vectors of the most frequent words (by GloVe rank).
	TopWords  int    `json:"top_words"`
	Domain    Config `json:"domain"`
	Jailbreak Config `json:"jailbreak"`
	// ExamWeight weighs the exam questions that the jailbreak model learns as
	// a class of their own (reported as benign).
	ExamWeight float64 `json:"exam_weight"`
	// EverydayWeight weighs the hand-written everyday requests, learnt as
	// another class reported as benign.
	EverydayWeight float64 `json:"everyday_weight"`
	Folds          int     `json:"folds"`
	Seed           uint64  `json:"seed"`
	// Repeats of the jailbreak cross-validation (seeds Seed, Seed+1, ...).
	Repeats int `json:"repeats"`
}

// DefaultBuild is the configuration of the committed models, chosen by the
// cross-validation grid documented in docs/models.md.
func DefaultBuild() BuildConfig {
	f := FeatureConfig{MaxTokens: defaultmodels.MaxTokens, BoW: true, Dense: 0.05, SIFa: 1e-3}
	dom, jb := f, f
	dom.MeanPrior, jb.MeanPrior = 3, 6
	dom.Presence = true
	return BuildConfig{
		TopWords:       50000,
		Domain:         Config{Features: dom, Lambda: 5e-6, MaxIter: 300},
		Jailbreak:      Config{Features: jb, Lambda: 1e-5, MaxIter: 300},
		ExamWeight:     0.05,
		EverydayWeight: 1,
		Folds:          5,
		Seed:           1,
		Repeats:        5,
	}
}

// Reports are the cross-validated figures of a build.
type Reports struct {
	Config BuildConfig `json:"config"`
	// Domain: 14 categories, out of fold.
	Domain Report `json:"domain"`
	// Jailbreak: the 546 prompts, first repeat pooled; Accuracies per repeat.
	Jailbreak           Report    `json:"jailbreak"`
	JailbreakAccuracies []float64 `json:"jailbreak_accuracies"`
	JailbreakMean       float64   `json:"jailbreak_accuracy_mean"`
	JailbreakSD         float64   `json:"jailbreak_accuracy_sd"`
	// ExamFlagged is the share of exam questions the jailbreak model calls
	// attacks (out of fold, first repeat).
	ExamFlagged float64 `json:"exam_flagged"`
	// EverydayFlagged counts the everyday requests called attacks (out of
	// fold, first repeat).
	EverydayFlagged int `json:"everyday_flagged"`
	// PhraseAccuracies are the jailbreak accuracies per repeat when a
	// well-known injection phrasing (lexical.HasInjectionPhrase) lifts the
	// jailbreak probability to at least PhraseFloor, as the signal does.
	PhraseAccuracies []float64 `json:"jailbreak_phrase_accuracies"`
	PhraseMean       float64   `json:"jailbreak_phrase_accuracy_mean"`
	PhraseSD         float64   `json:"jailbreak_phrase_accuracy_sd"`
	// Phrase is the first repeat's report with the phrase floor.
	Phrase Report `json:"jailbreak_phrase"`
	// DomainThresholds: for a least top probability, the share of questions
	// that reach it and the accuracy among them (out of fold).
	DomainThresholds []ThresholdRow `json:"domain_thresholds"`
	// Coverage is the share of the domain questions' tokens that have a vector.
	Coverage float64 `json:"coverage"`
	Words    int     `json:"vocabulary"`
}

// ThresholdRow is one line of a threshold table.
type ThresholdRow struct {
	Threshold float64 `json:"threshold"`
	Share     float64 `json:"share"`
	Accuracy  float64 `json:"accuracy"`
}

// PhraseFloor is the jailbreak probability a well-known injection phrasing
// guarantees (the lexical fallback's floor; defaultmodels applies it).
const PhraseFloor = 0.9

// DomainCategories is the output order of the domain model.
var DomainCategories = []string{"business", "law", "psychology", "biology", "chemistry", "history", "other",
	"health", "economics", "math", "physics", "computer science", "philosophy", "engineering"}

// JailbreakOutputs is the output order of the jailbreak model.
var JailbreakOutputs = []string{"benign", "jailbreak"}

// Build trains the default models from the npm package file and the shared
// data folder, logging progress to log.
func Build(glovePath, dataDir string, cfg BuildConfig, log io.Writer) (*defaultmodels.Bundle, *Reports, error) {
	start := time.Now()
	dom, err := ReadJSONL(filepath.Join(dataDir, "domain", "train.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	jb, err := ReadJSONL(filepath.Join(dataDir, "jailbreak", "train.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	g, err := LoadGloVe(glovePath, func(_ string, rank int) bool { return rank <= cfg.TopWords })
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(log, "loaded %d vectors in %v\n", len(g.Vec), time.Since(start).Round(time.Millisecond))
	all := append(append([]Record{}, dom...), jb...)
	for _, r := range EverydayRequests() {
		all = append(all, Record{Text: r})
	}
	vec, err := buildVectors(g, all, cfg)
	if err != nil {
		return nil, nil, err
	}
	rep := &Reports{Config: cfg, Words: len(vec.Words)}
	ids := map[string]int32{}
	for i, w := range vec.Words {
		ids[w] = int32(i)
	}
	tot, cov := 0, 0
	for _, r := range dom {
		for _, t := range Tokenize(r.Text) {
			tot++
			if _, ok := g.Vec[t]; ok {
				cov++
			}
		}
	}
	rep.Coverage = float64(cov) / float64(tot)

	// Domain: learn the 57 subjects, report the 14 categories.
	dt := NewDomainTask(dom)
	catY := make([]int, len(dom))
	for i := range dom {
		catY[i] = dt.Gold(i)
	}
	fold := StratifiedFolds(catY, cfg.Folds, cfg.Seed)
	probs := CrossValidate(dt, g, cfg.Domain, fold, cfg.Folds)
	rep.Domain = Evaluate(DomainCategories, catY, argmaxAll(probs), probs)
	fmt.Fprintf(log, "domain: %d-fold accuracy %.4f macro-F1 %.4f (%v)\n", cfg.Folds, rep.Domain.Accuracy, rep.Domain.MacroF1, time.Since(start).Round(time.Second))
	for _, th := range []float64{0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8} {
		row := ThresholdRow{Threshold: th}
		n, ok := 0, 0
		for i, p := range probs {
			if k := Argmax(p); p[k] >= th {
				n++
				if k == catY[i] {
					ok++
				}
			}
		}
		row.Share = float64(n) / float64(len(probs))
		if n > 0 {
			row.Accuracy = float64(ok) / float64(n)
		}
		rep.DomainThresholds = append(rep.DomainThresholds, row)
	}
	domain := export(Fit(dt, g, cfg.Domain, nil), ids)

	// Jailbreak: benign, jailbreak and exam questions (reported as benign).
	jt := NewJailbreakTask(jb, dom, cfg.ExamWeight, cfg.EverydayWeight)
	for r := 0; r < cfg.Repeats; r++ {
		fold := StratifiedFolds(jt.Y, cfg.Folds, cfg.Seed+uint64(r))
		probs := CrossValidate(jt, g, cfg.Jailbreak, fold, cfg.Folds)
		gold := make([]int, len(jt.Y))
		pred := argmaxAll(probs)
		flagged, everyday := 0, 0
		for i := range gold {
			gold[i] = jt.Gold(i)
			if i >= len(jb) {
				gold[i] = -1 // exam questions and everyday requests: not part of the accuracy
				if pred[i] == 1 && i < len(jb)+len(dom) {
					flagged++
				} else if pred[i] == 1 {
					everyday++
				}
			}
		}
		rp := Evaluate(JailbreakOutputs, gold, pred, probs)
		floored := make([][]float64, len(probs))
		fpred := make([]int, len(probs))
		for i, p := range probs {
			floored[i] = p
			if i < len(jb) && lexical.HasInjectionPhrase(jb[i].Text) && p[1] < PhraseFloor {
				floored[i] = []float64{1 - PhraseFloor, PhraseFloor}
			}
			fpred[i] = Argmax(floored[i])
		}
		fr := Evaluate(JailbreakOutputs, gold, fpred, floored)
		rep.PhraseAccuracies = append(rep.PhraseAccuracies, fr.Accuracy)
		rep.JailbreakAccuracies = append(rep.JailbreakAccuracies, rp.Accuracy)
		if r == 0 {
			rep.Jailbreak = rp
			rep.Phrase = fr
			rep.ExamFlagged = float64(flagged) / float64(len(dom))
			rep.EverydayFlagged = everyday
		}
		fmt.Fprintf(log, "jailbreak: repeat %d accuracy %.4f, with the phrase floor %.4f (%v)\n", r+1, rp.Accuracy, fr.Accuracy, time.Since(start).Round(time.Second))
	}
	rep.JailbreakMean, rep.JailbreakSD = meanSD(rep.JailbreakAccuracies)
	rep.PhraseMean, rep.PhraseSD = meanSD(rep.PhraseAccuracies)
	jail := export(Fit(jt, g, cfg.Jailbreak, nil), ids)
	return &defaultmodels.Bundle{Vectors: vec, Domain: domain, Jailbreak: jail}, rep, nil
}

func argmaxAll(p [][]float64) []int {
	out := make([]int, len(p))
	for i, v := range p {
		out[i] = Argmax(v)
	}
	return out
}

func meanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	if len(xs) > 1 {
		s /= float64(len(xs) - 1)
	}
	return m, math.Sqrt(s)
}

// NewDomainTask is the domain corpus: 57 subjects learnt, 14 categories reported.
func NewDomainTask(dom []Record) *Task {
	catIdx := map[string]int{}
	for i, c := range DomainCategories {
		catIdx[c] = i
	}
	subjCat := map[string]string{}
	for _, r := range dom {
		subjCat[r.Subject] = r.Category
	}
	t := &Task{Outputs: DomainCategories}
	for s := range subjCat {
		t.Classes = append(t.Classes, s)
	}
	sort.Strings(t.Classes)
	subjIdx := map[string]int{}
	for i, s := range t.Classes {
		subjIdx[s] = i
		t.Map = append(t.Map, catIdx[subjCat[s]])
	}
	for _, r := range dom {
		t.Docs = append(t.Docs, Tokenize(r.Text))
		t.Y = append(t.Y, subjIdx[r.Subject])
	}
	return t
}

// EverydayRequests are the hand-written benign instructions of
// everyday_requests.txt.
func EverydayRequests() []string {
	var out []string
	for _, line := range strings.Split(everydayRequests, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

//go:embed everyday_requests.txt
var everydayRequests string

// NewJailbreakTask is the prompt-injection corpus plus, as classes of their
// own reported as benign, the exam questions and the everyday requests.
func NewJailbreakTask(jb, dom []Record, examWeight, everydayWeight float64) *Task {
	t := &Task{Classes: []string{"benign", "jailbreak", "exam_question", "everyday_request"}, Map: []int{0, 1, 0, 0}, Outputs: JailbreakOutputs}
	for _, r := range jb {
		t.Docs = append(t.Docs, Tokenize(r.Text))
		y := 0
		if r.Label != nil && *r.Label == 1 {
			y = 1
		}
		t.Y = append(t.Y, y)
		t.Weight = append(t.Weight, 1)
	}
	for _, r := range dom {
		t.Docs = append(t.Docs, Tokenize(r.Text))
		t.Y = append(t.Y, 2)
		t.Weight = append(t.Weight, examWeight)
	}
	for _, r := range EverydayRequests() {
		t.Docs = append(t.Docs, Tokenize(r))
		t.Y = append(t.Y, 3)
		t.Weight = append(t.Weight, everydayWeight)
	}
	return t
}

// buildVectors quantises the kept vectors to int8 (one scale per word) and
// replaces g's vectors by their dequantised values, so that training sees
// exactly what the exported graph computes with; the vocabulary is the kept
// words by rank, then the other words of the data, sorted.
func buildVectors(g *GloVe, recs []Record, cfg BuildConfig) (*defaultmodels.Vectors, error) {
	byRank := make([]string, 0, len(g.Vec))
	for w := range g.Vec {
		byRank = append(byRank, w)
	}
	sort.Slice(byRank, func(i, j int) bool { return g.Rank[byRank[i]] < g.Rank[byRank[j]] })
	extra := map[string]bool{}
	for _, r := range recs {
		for _, t := range Tokenize(r.Text) {
			if _, ok := g.Vec[t]; !ok {
				extra[t] = true
			}
		}
	}
	var rest []string
	for w := range extra {
		rest = append(rest, w)
	}
	sort.Strings(rest)
	words := append(append([]string{defaultmodels.PadToken, defaultmodels.UnkToken}, byRank...), rest...)
	v := &defaultmodels.Vectors{Words: words, Q: make([]int8, len(words)*Dim), Scale: make([]float32, len(words)), SIF: make([]float32, len(words))}
	for id, w := range words {
		x, ok := g.Vec[w]
		if !ok {
			continue
		}
		m := float32(0)
		for _, a := range x {
			m = max(m, float32(math.Abs(float64(a))))
		}
		s := m / 127
		v.Scale[id] = s
		v.SIF[id] = float32(SIFWeight(cfg.Domain.Features.SIFa, g.Rank[w], g.Size))
		deq := make([]float32, Dim)
		for k, a := range x {
			q := int8(math.Round(float64(a / s)))
			v.Q[id*Dim+k] = q
			deq[k] = float32(q) * s
		}
		g.Vec[w] = deq
	}
	// SIF weights as the graph stores them (float32), for training too.
	g.sif = map[string]float64{}
	for id, w := range words {
		if v.SIF[id] > 0 {
			g.sif[w] = float64(v.SIF[id])
		}
	}
	v.Common = commonComponent(v, recs, words)
	return v, nil
}

// commonComponent is the first (uncentred) principal component of the SIF
// means of the data's texts, by power iteration from a fixed start.
func commonComponent(v *defaultmodels.Vectors, recs []Record, words []string) []float32 {
	ids := map[string]int32{}
	for i, w := range words {
		ids[w] = int32(i)
	}
	var means [][]float64
	for _, r := range recs {
		var seq []int32
		for _, t := range Tokenize(r.Text) {
			seq = append(seq, ids[t])
		}
		if len(seq) > defaultmodels.MaxTokens {
			seq = seq[:defaultmodels.MaxTokens]
		}
		means = append(means, v.Mean(seq))
	}
	u := make([]float64, Dim)
	for k := range u {
		u[k] = 1 / math.Sqrt(Dim)
	}
	for it := 0; it < 100; it++ {
		next := make([]float64, Dim)
		for _, m := range means {
			d := dot(m, u)
			axpy(d, m, next)
		}
		scale(1/norm(next), next)
		u = next
	}
	out := make([]float32, Dim)
	for k, x := range u {
		out[k] = float32(x)
	}
	return out
}

// export turns a fitted model into the stored form over the vocabulary ids,
// folding the standardisation and the dense weight into Dense and Bias.
func export(f *Fitted, ids map[string]int32) *defaultmodels.Linear {
	c := f.Model.Classes
	l := &defaultmodels.Linear{Classes: f.Task.Classes, Outputs: f.Task.Outputs, Map: f.Task.Map}
	for i, w := range f.Feat.Words {
		id, ok := ids[w]
		if !ok {
			panic(fmt.Sprintf("train: the word %q of a training text is not in the vocabulary", w))
		}
		l.BowIDs = append(l.BowIDs, id)
		l.IDF = append(l.IDF, float32(f.Feat.IDF[i]))
		for k := 0; k < c; k++ {
			l.BowWeights = append(l.BowWeights, float32(f.Model.W[i*c+k]))
		}
	}
	bias := append([]float64(nil), f.Model.B...)
	l.Dense = make([]float32, Dim*c)
	base := len(f.Feat.Words)
	for d := 0; d < Dim; d++ {
		for k := 0; k < c; k++ {
			w := f.Model.W[(base+d)*c+k] * f.Feat.Cfg.Dense / f.Feat.Std[d]
			l.Dense[d*c+k] = float32(w)
			bias[k] -= w * f.Feat.Mean[d]
		}
	}
	for _, b := range bias {
		l.Bias = append(l.Bias, float32(b))
	}
	l.MeanPrior = float32(f.Feat.Cfg.MeanPrior)
	l.Presence = f.Feat.Cfg.Presence
	return l
}
