package worker

// What the `junction worker` process needs besides its server: the models
// file, model directories and its listener.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// ReadModelsFile reads a worker models file (`junction worker --models`):
// a list `models` of entries.
func ReadModelsFile(path string) ([]Spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--models: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("--models %s: not YAML or JSON: %w", path, err)
	}
	var doc struct {
		Models []Spec `json:"models"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("--models %s: %w (entries take model, revision, name, device, profile, engine, family, memory_budget_gib, options)", path, err)
	}
	if len(doc.Models) == 0 {
		return nil, fmt.Errorf("--models %s: /models lists no model", path)
	}
	for i, m := range doc.Models {
		if m.Model == "" {
			return nil, fmt.Errorf("--models %s: /models/%d/model is required", path, i)
		}
	}
	return doc.Models, nil
}

// ResolveModel turns a model argument into a local directory: a directory
// path as given, or a built-in name under the models directory. Hub
// repositories cannot be downloaded by this build.
func ResolveModel(spec Spec, dir string) (string, error) {
	if st, err := os.Stat(spec.Model); err == nil && st.IsDir() {
		return spec.Model, nil
	}
	cand := filepath.Join(dir, spec.Model)
	if st, err := os.Stat(cand); err == nil && st.IsDir() {
		return cand, nil
	}
	return "", Permanent(fmt.Errorf("model %q is neither a model directory nor a built-in model in %s; this build does not download models — give a local directory with model.onnx, config.json and tokenizer.json", spec.Model, dir))
}

// Listen opens the TCP or Unix socket listener: uds, or host:port when uds is empty. A stale socket file
// left by a worker that died is replaced; a live one is not.
func Listen(uds, host string, port int) (net.Listener, string, error) {
	if uds == "" {
		addr := net.JoinHostPort(host, fmt.Sprint(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", fmt.Errorf("worker: listen on %s: %w (another worker running? use --port)", addr, err)
		}
		return ln, "http://" + ln.Addr().String(), nil
	}
	if c, err := net.Dial("unix", uds); err == nil {
		c.Close()
		return nil, "", fmt.Errorf("worker: %s is in use by a running process", uds)
	}
	_ = os.Remove(uds)
	ln, err := net.Listen("unix", uds)
	if err != nil {
		return nil, "", fmt.Errorf("worker: listen on unix socket %s: %w", uds, err)
	}
	_ = os.Chmod(uds, 0o600)
	return ln, "unix:" + uds, nil
}

// DefaultSpecs returns the built-in default models names under dir, or
// says clearly that they are not installed: the worker never serves a stand-in.
func DefaultSpecs(dir string, names []string) ([]Spec, error) {
	var specs []Spec
	var missing []string
	for _, name := range names {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(filepath.Join(p, "model.onnx")); err != nil || st.IsDir() {
			missing = append(missing, p)
			continue
		}
		specs = append(specs, Spec{Model: p, Name: name})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the built-in default models are not available (no model.onnx in %s); build them with `make models`, point --cache-dir or $JUNCTION_MODELS_DIR at them, or name a model directory: junction worker ./path/to/model", strings.Join(missing, ", "))
	}
	return specs, nil
}
