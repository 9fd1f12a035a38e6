package mgmt

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/pii"
)

// The information endpoints of document 001 (GET /info/models, /info/classifier):
// what the process and its classifiers are, not a classification.

// ModelInfo is GET /info/models (document 001).
type ModelInfo struct {
	Models []ModelInfoEntry `json:"models"`
	System SystemInfo       `json:"system"`
}

// ModelInfoEntry is one model.
type ModelInfoEntry struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Loaded     bool              `json:"loaded"`
	ModelPath  string            `json:"model_path"`
	Categories []string          `json:"categories"`
	Metadata   map[string]string `json:"metadata"`
}

// SystemInfo describes the process.
type SystemInfo struct {
	GoVersion    string `json:"go_version"`
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	MemoryUsage  string `json:"memory_usage"`
	GPUAvailable bool   `json:"gpu_available"`
}

func systemInfo() SystemInfo {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return SystemInfo{GoVersion: runtime.Version(), Architecture: runtime.GOARCH, OS: runtime.GOOS,
		MemoryUsage: formatMiB(m.Alloc), GPUAvailable: false}
}

func formatMiB(b uint64) string {
	return strings.TrimRight(strings.TrimRight(formatFloat(float64(b)/(1<<20)), "0"), ".") + " MiB"
}

func (s *Server) infoModels(w http.ResponseWriter, r *http.Request) {
	gen := s.cfg.Runtime().Current()
	models, err := s.modelsOf(gen)
	if err != nil {
		writeError(w, err)
		return
	}
	out := ModelInfo{Models: []ModelInfoEntry{
		{Name: "category_classifier", Type: "intent_classification", Loaded: true, ModelPath: "builtin:" + models.Domain.Method(), Categories: signal.DomainCategories(),
			Metadata: map[string]string{"model_type": models.Domain.Method(), "use_cpu": "true", "mapping_path": mappingPath(models.Domain.Method())}},
		{Name: "jailbreak_guard", Type: "security_detection", Loaded: true, ModelPath: "builtin:" + models.Jailbreak.Method(), Categories: []string{"benign", "jailbreak"},
			Metadata: map[string]string{"model_type": models.Jailbreak.Method(), "use_cpu": "true", "mapping_path": mappingPath(models.Jailbreak.Method())}},
		{Name: "pii_detector", Type: "pii_detection", Loaded: true, ModelPath: "builtin:pattern", Categories: pii.Types(),
			Metadata: map[string]string{"model_type": "pattern+heuristic", "use_cpu": "true", "mapping_path": "builtin:pattern"}},
		{Name: "embedding", Type: "embedding", Loaded: true, ModelPath: "builtin:" + models.Embedder.Method(), Categories: []string{},
			Metadata: map[string]string{"model_type": models.Embedder.Method(), "use_cpu": "true"}},
	}, System: systemInfo()}
	// A model whose deployment's worker is not ready is not loaded.
	for kind, state := range s.unloaded(gen) {
		i := map[string]int{"domain": 0, "jailbreak": 1, "embeddings": 3}[kind]
		out.Models[i].Loaded = false
		out.Models[i].Metadata["state"] = state
	}
	// threshold is the default recipe's: the highest domain threshold for
	// the category classifier, the jailbreak signal's for the guard, the
	// highest PII threshold for the detector (omitted where the recipe has
	// no such signal). The embedding has no mapping_path: it has no labels.
	if rc, err := recipeIn(gen, ""); err == nil {
		set := func(i int, v float64, ok bool) {
			if ok {
				out.Models[i].Metadata["threshold"] = strconv.FormatFloat(v, 'f', -1, 64)
			}
		}
		var dom, jb, p float64
		for _, d := range rc.Signals.Domains {
			dom = max(dom, d.Threshold)
		}
		for _, j := range rc.Signals.Jailbreak {
			jb = max(jb, j.Threshold)
		}
		for _, x := range rc.Signals.PII {
			p = max(p, x.Threshold)
		}
		set(0, dom, len(rc.Signals.Domains) > 0)
		set(1, jb, len(rc.Signals.Jailbreak) > 0)
		set(2, p, len(rc.Signals.PII) > 0)
	}
	writeJSON(w, http.StatusOK, out)
}

// unloaded lists the signal kinds (domain, jailbreak, embeddings) whose
// bound model deployment has no ready worker, as serve last reported it to
// Startup: a worker still loading, restarting or failed. Their calls fail
// (or wait) until it is ready, so the classifier is a placeholder meanwhile.
func (s *Server) unloaded(gen *engine.Generation) map[string]string {
	mc := gen.Document().Global.ModelCatalog
	if mc == nil || mc.Bindings == nil || s.opts.Startup == nil {
		return nil
	}
	_, _, deps := s.opts.Startup.snapshot()
	var out map[string]string
	for _, nb := range mc.Bindings.Each() {
		for _, d := range deps {
			if d.Name == nb.Binding.Deployment && !d.Ready {
				if out == nil {
					out = map[string]string{}
				}
				out[nb.Kind] = d.State
			}
		}
	}
	return out
}

// mappingPath is where a classifier's label mapping (label index to
// category name) is read from: an ONNX package's or a worker model's
// config.json (its id2label), or the model itself for the lexical models
// and the PII patterns, whose labels are compiled in. The recipe's domain
// signals then translate those labels to generic names (mmlu_categories).
func mappingPath(method string) string {
	switch {
	case strings.HasPrefix(method, "onnx:"):
		return "builtin:" + strings.TrimPrefix(method, "onnx:") + "/config.json"
	case strings.HasPrefix(method, "worker:"):
		return method + "/config.json"
	}
	return "builtin:" + method
}

// ClassifierInfo is GET /info/classifier and /api/v1/inventory/classifier.
type ClassifierInfo struct {
	Status        string            `json:"status"`
	Capabilities  []string          `json:"capabilities"`
	Categories    []CategoryInfo    `json:"categories"`
	Decisions     []DecisionInfo    `json:"decisions"`
	PIITypes      []string          `json:"pii_types"`
	Security      SecurityInfo      `json:"security"`
	Performance   PerformanceInfo   `json:"performance"`
	Configuration ClassifierSetting `json:"configuration"`
	Recipe        string            `json:"recipe"`
	// Backends lists each model's backends; base URLs and header values are
	// redacted without secret_view.
	Backends map[string][]string `json:"backends"`
}

// CategoryInfo is a domain signal.
type CategoryInfo struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Threshold   float64 `json:"threshold"`
}

// DecisionInfo is a decision.
type DecisionInfo struct {
	Name             string `json:"name"`
	Description      string `json:"description"`
	Priority         int    `json:"priority"`
	ReasoningEnabled bool   `json:"reasoning_enabled"`
}

// SecurityInfo describes jailbreak detection.
type SecurityInfo struct {
	JailbreakDetection bool     `json:"jailbreak_detection"`
	DetectionTypes     []string `json:"detection_types"`
	Enabled            bool     `json:"enabled"`
}

// PerformanceInfo summarises diagnostics calls.
type PerformanceInfo struct {
	AverageLatencyMS float64 `json:"average_latency_ms"`
	RequestsHandled  int64   `json:"requests_handled"`
	CacheEnabled     bool    `json:"cache_enabled"`
}

// ClassifierSetting holds thresholds.
type ClassifierSetting struct {
	CategoryThreshold   float64 `json:"category_threshold"`
	PIIThreshold        float64 `json:"pii_threshold"`
	SimilarityThreshold float64 `json:"similarity_threshold"`
	UseCPU              bool    `json:"use_cpu"`
}

func (s *Server) infoClassifier(w http.ResponseWriter, r *http.Request) {
	gen := s.cfg.Runtime().Current()
	rc, err := recipeIn(gen, r.URL.Query().Get("recipe"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := ClassifierInfo{Status: "active", Recipe: rc.Name,
		Capabilities: []string{"intent_classification", "pii_detection", "security_detection", "similarity_matching"},
		Categories:   []CategoryInfo{}, Decisions: []DecisionInfo{}, PIITypes: pii.Types(),
		Security:      SecurityInfo{JailbreakDetection: len(rc.Signals.Jailbreak) > 0, DetectionTypes: []string{"jailbreak", "prompt_injection"}, Enabled: len(rc.Signals.Jailbreak) > 0},
		Configuration: ClassifierSetting{UseCPU: true}, Backends: map[string][]string{}}
	// placeholder when models are not loaded (document 001): the bindings,
	// or the lexical fallbacks that stand in for missing ones, failed to load.
	if _, err := s.modelsOf(gen); err != nil || len(s.unloaded(gen)) > 0 {
		out.Status = "placeholder"
	}
	for _, d := range rc.Signals.Domains {
		out.Categories = append(out.Categories, CategoryInfo{Name: d.Name, Description: d.Description, Threshold: d.Threshold})
		out.Configuration.CategoryThreshold = max(out.Configuration.CategoryThreshold, d.Threshold)
	}
	for _, p := range rc.Signals.PII {
		out.Configuration.PIIThreshold = max(out.Configuration.PIIThreshold, p.Threshold)
	}
	for _, e := range rc.Signals.Embeddings {
		out.Configuration.SimilarityThreshold = max(out.Configuration.SimilarityThreshold, e.Threshold)
	}
	for _, d := range rc.Decisions {
		di := DecisionInfo{Name: d.Name, Description: d.Description, Priority: d.Priority}
		for _, m := range d.ModelRefs {
			if m.UseReasoning != nil && *m.UseReasoning {
				di.ReasoningEnabled = true
			}
		}
		out.Decisions = append(out.Decisions, di)
	}
	secret := principalOf(r.Context()).Has(PermSecretView)
	for _, m := range gen.Document().Providers.Models {
		for _, b := range m.BackendRefs {
			u := b.BaseURL
			if !secret {
				u = redacted
			}
			out.Backends[m.Name] = append(out.Backends[m.Name], u)
		}
	}
	snap := s.stats.snapshot()
	var total float64
	for _, t := range snap.Tasks {
		out.Performance.RequestsHandled += t.Requests
		total += t.AverageMS * float64(t.Requests)
	}
	if out.Performance.RequestsHandled > 0 {
		out.Performance.AverageLatencyMS = total / float64(out.Performance.RequestsHandled)
	}
	writeJSON(w, http.StatusOK, out)
}
