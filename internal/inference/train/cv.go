package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
)

// Record is one line of the shared data's JSON Lines files.
type Record struct {
	Text     string `json:"text"`
	Category string `json:"category,omitempty"`
	Subject  string `json:"subject,omitempty"`
	Label    *int   `json:"label,omitempty"`
}

// ReadJSONL reads a JSON Lines file of Records.
func ReadJSONL(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (the shared data lives in ../shared/data; pass -data)", err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// Task is a labelled corpus. A model learns Classes (for the domain model the
// 57 MMLU subjects) and is judged on Outputs (the 14 categories) through Map.
type Task struct {
	Docs    [][]string
	Y       []int // class of each doc
	Classes []string
	Map     []int // class → output
	Outputs []string
	// Weight, when set, weighs each doc's loss.
	Weight []float64
}

// Gold is the output label of doc i.
func (t *Task) Gold(i int) int { return t.Map[t.Y[i]] }

// Config is everything one training run varies.
type Config struct {
	Features FeatureConfig `json:"features"`
	Lambda   float64       `json:"lambda"`
	MaxIter  int           `json:"max_iter"`
}

// Fitted is a trained classifier with its featurizer.
type Fitted struct {
	Feat  *Featurizer
	Model *LogReg
	Task  *Task
}

// Fit trains on the docs of idx (all docs when idx is nil).
func Fit(t *Task, g *GloVe, cfg Config, idx []int) *Fitted {
	if idx == nil {
		idx = make([]int, len(t.Docs))
		for i := range idx {
			idx[i] = i
		}
	}
	docs := make([][]string, len(idx))
	ys := make([]int, len(idx))
	var w []float64
	for j, i := range idx {
		docs[j], ys[j] = t.Docs[i], t.Y[i]
		if t.Weight != nil {
			w = append(w, t.Weight[i])
		}
	}
	feat := NewFeaturizer(cfg.Features, g, docs)
	xs := make([][]Entry, len(docs))
	for j, d := range docs {
		xs[j] = feat.Features(d)
	}
	m := FitLogReg(xs, ys, w, feat.NumFeatures(), len(t.Classes), cfg.Lambda, cfg.MaxIter)
	return &Fitted{Feat: feat, Model: m, Task: t}
}

// Predict returns the output distribution of one token list.
func (f *Fitted) Predict(d []string) []float64 {
	p := Softmax(f.Model.Logits(f.Feat.Features(d)))
	out := make([]float64, len(f.Task.Outputs))
	for c, v := range p {
		out[f.Task.Map[c]] += v
	}
	return out
}

// StratifiedFolds assigns docs to k folds, stratified by class and shuffled
// with a fixed seed (the scheme of the lexical trainer).
func StratifiedFolds(y []int, k int, seed uint64) []int {
	byClass := map[int][]int{}
	var classes []int
	for i, c := range y {
		if _, ok := byClass[c]; !ok {
			classes = append(classes, c)
		}
		byClass[c] = append(byClass[c], i)
	}
	sort.Ints(classes)
	rng := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	fold := make([]int, len(y))
	next := 0
	for _, c := range classes {
		idx := byClass[c]
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for _, i := range idx {
			fold[i] = next % k
			next++
		}
	}
	return fold
}

// CrossValidate returns out-of-fold output distributions, training the k
// folds on up to two goroutines.
func CrossValidate(t *Task, g *GloVe, cfg Config, fold []int, k int) [][]float64 {
	out := make([][]float64, len(t.Docs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for f := 0; f < k; f++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var train, test []int
			for i, fi := range fold {
				if fi == f {
					test = append(test, i)
				} else {
					train = append(train, i)
				}
			}
			m := Fit(t, g, cfg, train)
			for _, i := range test {
				out[i] = m.Predict(t.Docs[i])
			}
		}()
	}
	wg.Wait()
	return out
}

// ClassFigures are one output label's figures.
type ClassFigures struct {
	Label     string  `json:"label"`
	Support   int     `json:"support"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

// Report summarises predictions against gold labels.
type Report struct {
	N        int            `json:"n"`
	Accuracy float64        `json:"accuracy"`
	MacroF1  float64        `json:"macro_f1"`
	LogLoss  float64        `json:"log_loss"`
	Classes  []ClassFigures `json:"classes"`
}

// Evaluate scores the predicted output labels pred against gold (only docs
// with gold ≥ 0), with the probabilities for the log loss.
func Evaluate(outputs []string, gold, pred []int, probs [][]float64) Report {
	r := Report{}
	tp := make([]int, len(outputs))
	np := make([]int, len(outputs))
	ng := make([]int, len(outputs))
	correct := 0
	for i, g := range gold {
		if g < 0 {
			continue
		}
		r.N++
		ng[g]++
		np[pred[i]]++
		if pred[i] == g {
			correct++
			tp[g]++
		}
		r.LogLoss -= math.Log(math.Max(probs[i][g], 1e-15))
	}
	r.Accuracy = float64(correct) / float64(r.N)
	r.LogLoss /= float64(r.N)
	for c, name := range outputs {
		cf := ClassFigures{Label: name, Support: ng[c]}
		if np[c] > 0 {
			cf.Precision = float64(tp[c]) / float64(np[c])
		}
		if ng[c] > 0 {
			cf.Recall = float64(tp[c]) / float64(ng[c])
		}
		if cf.Precision+cf.Recall > 0 {
			cf.F1 = 2 * cf.Precision * cf.Recall / (cf.Precision + cf.Recall)
		}
		if ng[c] > 0 {
			r.MacroF1 += cf.F1
			r.Classes = append(r.Classes, cf)
		}
	}
	r.MacroF1 /= float64(len(r.Classes))
	return r
}

// Argmax is the index of the largest value.
func Argmax(v []float64) int {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return b
}
