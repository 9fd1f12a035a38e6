package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
)

// workerCommands are the worker's commands other than serving (the spec's
// "other worker commands"). Their names are reserved as the first argument:
// a model directory called like one is given as ./NAME.
var workerCommands = map[string]func(args []string, stdout io.Writer) error{
	"list-models":  workerListModels,
	"list-plugins": workerListPlugins,
	"devices":      workerDevices,
}

const workerCommandsUsage = `  junction worker list-models    the built-in models with their pinned revisions, tasks and labels (JSON)
  junction worker list-plugins   the installed family plugins (JSON; this build has none)
  junction worker devices        the devices models can run on here, and why a GPU cannot (JSON)
`

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// builtinModel is one line of list-models.
type builtinModel struct {
	Name string `json:"name"`
	// Revision pins the model: the 40-character commit-style revision
	// `junction worker NAME@REVISION` accepts, checked file by file against
	// the manifest when the model loads.
	Revision string `json:"revision"`
	// Digest is the whole digest of the committed bundle the model is written
	// from (internal/inference/defaultmodels/data/manifest.json); Revision is
	// its first 40 hex digits.
	Digest string   `json:"digest"`
	Task   string   `json:"task"`
	Labels []string `json:"labels,omitempty"`
	Source string   `json:"source"`
	// Dir is where the model directory is written on first use.
	Dir string `json:"dir"`
}

func workerListModels(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("list-models takes no arguments")
	}
	man, err := defaultmodels.ReadManifest()
	if err != nil {
		return err
	}
	digest, err := defaultmodels.ManifestDigest()
	if err != nil {
		return err
	}
	rev, err := defaultmodels.Revision()
	if err != nil {
		return err
	}
	dir, err := defaultmodels.CacheDir("")
	if err != nil {
		return err
	}
	source := man.Source["glove"] + " + ../shared/data (" + man.Source["data"] + ")"
	var out []builtinModel
	for _, name := range builtinDefaults {
		p := filepath.Join(dir, name)
		var cfg struct {
			ID2Label    map[string]string `json:"id2label"`
			ProblemType string            `json:"problem_type"`
		}
		b, err := os.ReadFile(filepath.Join(p, "config.json"))
		if err != nil {
			return fmt.Errorf("built-in model %s: %w", name, err)
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("built-in model %s: config.json: %w", name, err)
		}
		m := builtinModel{Name: name, Revision: rev, Digest: digest, Task: "embedding", Source: source, Dir: p}
		if len(cfg.ID2Label) > 0 {
			m.Task = "sequence_classification"
			for i := range len(cfg.ID2Label) {
				m.Labels = append(m.Labels, cfg.ID2Label[fmt.Sprint(i)])
			}
		}
		out = append(out, m)
	}
	return printJSON(stdout, map[string]any{"models": out})
}

func workerListPlugins(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("list-plugins takes no arguments")
	}
	// Family plugins adapt model families the runtime cannot run as plain
	// Hugging Face exports; this build runs every model through ONNX Runtime
	// and has none, so --family names nothing it could load.
	return printJSON(stdout, map[string]any{"plugins": []string{}})
}

func workerDevices(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("devices takes no arguments")
	}
	rt, err := inference.Open(inference.Options{Device: "cpu"})
	if err != nil {
		return err
	}
	defer rt.Close()
	return printJSON(stdout, map[string]any{
		"onnxruntime": map[string]string{"version": rt.Version(), "library": rt.LibraryPath()},
		"devices":     rt.Devices(),
	})
}
