// Command junction-train-lexical trains the naive Bayes fallbacks of the signal
// package from the shared data, reports their cross-validated accuracy, and
// writes the embedded model files. The output is reproducible: the same data
// gives the same files byte for byte.
//
//	go run ./cmd/junction-train-lexical -data ../shared/data
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/junction-router/junction/internal/lexical"
)

// domainLabels fixes the category order of the stored model.
var domainLabels = []string{"business", "law", "psychology", "biology", "chemistry", "history", "other",
	"health", "economics", "math", "physics", "computer science", "philosophy", "engineering"}

// The jailbreak model learns exam questions as a class of their own, reported
// as benign. The prompt-injection data's benign prompts are short chat about
// news and daily life; trained on them alone, the model called three in four
// exam questions an attack (they share no vocabulary with the benign class).
// Folded into "benign" they swamp it instead; as a third class they teach what
// ordinary questions look like without diluting the chat prompts.
const examLabel = "exam_question"

var jailbreakLabels = []string{"benign", "jailbreak", examLabel}

func main() {
	data := flag.String("data", "../shared/data", "folder with domain/train.jsonl and jailbreak/train.jsonl")
	out := flag.String("out", "internal/lexical/models", "folder the model files are written to")
	folds := flag.Int("folds", 5, "cross-validation folds")
	seed := flag.Uint64("seed", 1, "fold assignment seed")
	top := flag.Int("top", 8, "configurations listed per task")
	dry := flag.Bool("n", false, "report only; write no files")
	flag.Parse()
	if err := run(*data, *out, *folds, *seed, *top, *dry, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "junction-train-lexical:", err)
		os.Exit(1)
	}
}

// maxModelBytes keeps the embedded files small; a configuration whose model
// is larger loses to the next best one.
const maxModelBytes = 1_500_000

// phraseFloor is the jailbreak probability a well-known injection phrasing
// guarantees when the phrase boost is enabled.
const phraseFloor = 0.9

type task struct {
	name string
	// phrases tries the injection phrase boost on the chosen configuration.
	phrases bool
	file    string
	labels  []string
	read    func(line []byte) (lexical.Example, error)
	// extra adds examples from another file (with their own label); they
	// train every fold, but reports judge only the task's own examples and
	// say separately how many extra ones were misclassified.
	extra     string
	readExtra func(line []byte) (lexical.Example, error)
	merge     map[string]string
	grid      []lexical.TrainConfig
}

func run(data, out string, folds int, seed uint64, top int, dry bool, w io.Writer) error {
	tasks := []task{
		{name: "domain", file: "domain/train.jsonl", labels: domainLabels, read: readDomain, grid: grid()},
		{name: "jailbreak", file: "jailbreak/train.jsonl", labels: jailbreakLabels, read: readJailbreak, grid: grid(), phrases: true,
			extra: "domain/train.jsonl", readExtra: readExam, merge: map[string]string{examLabel: "benign"}},
	}
	for _, t := range tasks {
		exs, err := readExamples(filepath.Join(data, t.file), t.read)
		if err != nil {
			return err
		}
		var extra []lexical.Example
		if t.extra != "" {
			if extra, err = readExamples(filepath.Join(data, t.extra), t.readExtra); err != nil {
				return err
			}
		}
		m, buf, err := trainTask(t, exs, extra, folds, seed, top, w)
		if err != nil {
			return err
		}
		if dry {
			fmt.Fprintf(w, "model: %d bytes, %d features (not written)\n\n", buf.Len(), len(m.Vocab))
			continue
		}
		path := filepath.Join(out, t.name+".json.gz")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s (%d bytes, %d features)\n\n", path, buf.Len(), len(m.Vocab))
	}
	return nil
}

// grid lists the configurations cross-validation chooses from: word
// unigrams or unigrams plus bigrams, counts or presence, symbols as tokens or
// not, whole words or 6-rune prefixes, five smoothing strengths and two
// pruning levels. Uniform class priors were tried and never helped.
func grid() []lexical.TrainConfig {
	var out []lexical.TrainConfig
	for _, bigrams := range []bool{false, true} {
		for _, binary := range []bool{false, true} {
			for _, symbols := range []bool{false, true} {
				for _, prefix := range []int{0, 6} {
					for _, alpha := range []float64{0.02, 0.05, 0.1, 0.3, 1} {
						for _, minCount := range []int{1, 2} {
							out = append(out, lexical.TrainConfig{
								Features: lexical.Features{Bigrams: bigrams, Binary: binary, Symbols: symbols, Numbers: true, Prefix: prefix},
								Alpha:    alpha,
								MinCount: minCount,
							})
						}
					}
				}
			}
		}
	}
	return out
}

type result struct {
	cfg lexical.TrainConfig
	oof *lexical.OutOfFold
	rep lexical.Report
}

func trainTask(t task, own, extra []lexical.Example, k int, seed uint64, top int, w io.Writer) (*lexical.Model, *bytes.Buffer, error) {
	exs := append(append([]lexical.Example(nil), own...), extra...)
	texts := make([]string, len(exs))
	for i, ex := range exs {
		texts[i] = ex.Text
	}
	isOwn := func(i int) bool { return i < len(own) }
	isExtra := func(i int) bool { return i >= len(own) }
	judge := func(oof *lexical.OutOfFold, temp float64, boost *lexical.PhraseBoost) lexical.Report {
		return oof.ReportWith(lexical.ReportOptions{Temperature: temp, Boost: boost, Texts: texts, Merge: t.merge, Include: isOwn})
	}
	fold := lexical.Folds(exs, k, seed)
	results := make([]result, len(t.grid))
	errs := make([]error, len(t.grid))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, cfg := range t.grid {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			oof, err := lexical.CrossValidate(exs, t.labels, cfg, fold, k)
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = result{cfg: cfg, oof: oof, rep: judge(oof, 1, nil)}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	// Stable sort keeps grid order among equals, so the choice is reproducible.
	sort.SliceStable(results, func(i, j int) bool {
		a, b := results[i].rep, results[j].rep
		if a.Accuracy != b.Accuracy {
			return a.Accuracy > b.Accuracy
		}
		return a.MacroF1 > b.MacroF1
	})
	fmt.Fprintf(w, "== %s: %d examples, %d-fold cross-validation (seed %d), %d configurations\n", t.name, len(own), k, seed, len(t.grid))
	if len(extra) > 0 {
		fmt.Fprintf(w, "   plus %d examples of %s as class %q, reported as %q; they are cross-validated with the rest, the figures judge the %d own examples\n",
			len(extra), t.extra, extra[0].Label, t.merge[extra[0].Label], len(own))
	}
	for i := 0; i < top && i < len(results); i++ {
		r := results[i]
		fmt.Fprintf(w, "  accuracy %.4f  macro-F1 %.4f  %s\n", r.rep.Accuracy, r.rep.MacroF1, r.cfg)
	}
	for _, r := range results {
		if r.cfg == baseline(t.grid) {
			fmt.Fprintf(w, "  baseline (unigram counts, alpha 1): accuracy %.4f  macro-F1 %.4f\n", r.rep.Accuracy, r.rep.MacroF1)
		}
	}
	for _, best := range results {
		best.cfg.Temperature = best.oof.FitTemperatureWith(lexical.ReportOptions{Texts: texts, Merge: t.merge, Include: isOwn})
		m, err := lexical.Train(exs, t.labels, best.cfg)
		if err != nil {
			return nil, nil, err
		}
		m.Merge = t.merge
		var boost *lexical.PhraseBoost
		rep := judge(best.oof, best.cfg.Temperature, nil)
		if t.phrases {
			pb := lexical.PhraseBoost{Label: "jailbreak", Floor: phraseFloor}
			boosted := judge(best.oof, best.cfg.Temperature, &pb)
			fmt.Fprintf(w, "  injection phrases (floor %g): accuracy %.4f -> %.4f\n", phraseFloor, rep.Accuracy, boosted.Accuracy)
			if boosted.Accuracy > rep.Accuracy {
				m.InjectionPhrases = &pb
				boost, rep = &pb, boosted
			}
		}
		if len(extra) > 0 {
			ex := best.oof.ReportWith(lexical.ReportOptions{Temperature: best.cfg.Temperature, Boost: boost, Texts: texts, Merge: t.merge, Include: isExtra})
			fmt.Fprintf(w, "  %s examples misclassified (out of fold): %.2f%%\n", t.extra, 100*(1-ex.Accuracy))
			if err := compareWithoutExtra(t, own, extra, best.cfg, boost, k, seed, w); err != nil {
				return nil, nil, err
			}
		}
		var buf bytes.Buffer
		if err := m.Encode(&buf); err != nil {
			return nil, nil, err
		}
		if buf.Len() > maxModelBytes {
			fmt.Fprintf(w, "  skipped (model %d bytes > %d): %s\n", buf.Len(), maxModelBytes, best.cfg)
			continue
		}
		fmt.Fprintf(w, "chosen: %s temperature=%g phrases=%t\n", best.cfg, best.cfg.Temperature, m.InjectionPhrases != nil)
		fmt.Fprintf(w, "  accuracy %.4f  macro-F1 %.4f  log-loss %.4f (at temperature 1: %.4f)\n", rep.Accuracy, rep.MacroF1, rep.LogLoss, judge(best.oof, 1, boost).LogLoss)
		fmt.Fprintf(w, "  %-18s %7s %9s %7s %7s\n", "class", "support", "precision", "recall", "F1")
		for _, c := range rep.Classes {
			fmt.Fprintf(w, "  %-18s %7d %9.3f %7.3f %7.3f\n", c.Label, c.Support, c.Precision, c.Recall, c.F1)
		}
		return m, &buf, nil
	}
	return nil, nil, fmt.Errorf("%s: no configuration gives a model under %d bytes", t.name, maxModelBytes)
}

// compareWithoutExtra reports what the extra examples changed: the same
// configuration trained on the task's own examples alone, cross-validated,
// and applied to every extra example (none of which it saw).
func compareWithoutExtra(t task, own, extra []lexical.Example, cfg lexical.TrainConfig, boost *lexical.PhraseBoost, k int, seed uint64, w io.Writer) error {
	var labels []string
	for _, l := range t.labels {
		if _, merged := t.merge[l]; !merged {
			labels = append(labels, l)
		}
	}
	texts := make([]string, len(own))
	for i, ex := range own {
		texts[i] = ex.Text
	}
	oof, err := lexical.CrossValidate(own, labels, cfg, lexical.Folds(own, k, seed), k)
	if err != nil {
		return err
	}
	cfg.Temperature = oof.FitTemperature()
	rep := oof.ReportWith(lexical.ReportOptions{Temperature: cfg.Temperature, Boost: boost, Texts: texts})
	m, err := lexical.Train(own, labels, cfg)
	if err != nil {
		return err
	}
	m.InjectionPhrases = boost
	nb, err := m.Build()
	if err != nil {
		return err
	}
	wrong := 0
	for _, ex := range extra {
		if top := nb.Predict(ex.Text)[0].Label; top != t.merge[ex.Label] {
			wrong++
		}
	}
	fmt.Fprintf(w, "  without %s: accuracy %.4f, but %.2f%% of its examples misclassified\n",
		t.extra, rep.Accuracy, 100*float64(wrong)/float64(len(extra)))
	return nil
}

func baseline(grid []lexical.TrainConfig) lexical.TrainConfig {
	b := grid[0]
	b.Features = lexical.Features{Numbers: true}
	b.Alpha, b.MinCount = 1, 2
	return b
}

func readExamples(path string, read func([]byte) (lexical.Example, error)) ([]lexical.Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []lexical.Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		ex, err := read(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, ex)
	}
	return out, sc.Err()
}

func readDomain(line []byte) (lexical.Example, error) {
	var r struct {
		Text     string `json:"text"`
		Category string `json:"category"`
	}
	err := json.Unmarshal(line, &r)
	return lexical.Example{Text: r.Text, Label: r.Category}, err
}

func readExam(line []byte) (lexical.Example, error) {
	ex, err := readDomain(line)
	ex.Label = examLabel
	return ex, err
}

func readJailbreak(line []byte) (lexical.Example, error) {
	var r struct {
		Text  string          `json:"text"`
		Label json.RawMessage `json:"label"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return lexical.Example{}, err
	}
	n, err := strconv.Unquote(string(r.Label))
	if err != nil {
		n = string(r.Label)
	}
	switch n {
	case "0":
		return lexical.Example{Text: r.Text, Label: "benign"}, nil
	case "1":
		return lexical.Example{Text: r.Text, Label: "jailbreak"}, nil
	}
	return lexical.Example{}, fmt.Errorf("label %s is neither 0 nor 1", r.Label)
}
