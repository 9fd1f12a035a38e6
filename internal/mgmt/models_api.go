package mgmt

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// Binding is one prepared model binding of a recipe.
type Binding struct {
	Name   string `json:"name"`
	Recipe string `json:"recipe"`
	// Kind is classifier, embedder or token_classifier.
	Kind  string   `json:"kind"`
	Tasks []string `json:"tasks"`
	// Method names the implementation ("lexical-bayes", "hashed-ngrams",
	// "pattern+heuristic", or an ONNX binding once inference is merged).
	Method string   `json:"method"`
	Labels []string `json:"labels,omitempty"`
	// Signals are the recipe's signals this binding serves.
	Signals          []string `json:"signals"`
	Provider         string   `json:"provider"`
	Device           string   `json:"device"`
	Precision        string   `json:"precision"`
	ArtifactRevision string   `json:"artifact_revision"`
	InputMaxTokens   int      `json:"input_max_tokens"`
	// MaxSequenceLength is the legacy name of the effective input limit
	// (input_max_tokens), not the physical context window.
	MaxSequenceLength int  `json:"max_sequence_length"`
	MaxBatchSize      int  `json:"max_batch_size"`
	Prepared          bool `json:"prepared"`
	// ForwardMaxTokens is one forward pass's capacity; omitted where the
	// binding does not know it (the lexical models have none).
	ForwardMaxTokens int `json:"forward_max_tokens,omitempty"`
	// Metadata holds resource_id (the physical runtime identity: an ONNX
	// package's name and digest, a worker deployment and served model) and
	// registry_match "source_revision" where Registry is set.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Registry is set for a derived local graph whose declared source
	// (repo_id and revision) matches exactly one registered checkpoint.
	Registry *RegistrySource `json:"registry,omitempty"`
	// Windowed bindings (overflow window) only, each where known.
	DocumentMaxTokens int `json:"document_max_tokens,omitempty"`
	WindowSize        int `json:"window_size,omitempty"`
	WindowOverlap     int `json:"window_overlap,omitempty"`
}

// RegistrySource is the registered checkpoint a binding's graph derives
// from.
type RegistrySource struct {
	RepoID string `json:"repo_id"`
}

// registry is the registered checkpoints of a configuration: each
// global.model_catalog.deployments entry that pins its artifact to a
// 40-character commit, as (artifact, revision).
type registry []recipes.ModelDeployment

func registryOf(doc *recipes.Document) registry {
	if doc.Global.ModelCatalog == nil {
		return nil
	}
	var out registry
	for _, d := range doc.Global.ModelCatalog.Deployments {
		if d.Artifact != "" && isCommit(d.Revision) {
			out = append(out, d)
		}
	}
	return out
}

func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// match returns the repo_id of the one registered checkpoint a graph's
// declared source matches: the same revision and, where the graph names
// one, the same repo. No match, or several distinct repos (a revision
// alone that two registered repos share), is no match: the inventory then
// omits the registry fields rather than guess.
func (r registry) match(f signal.ModelFacts) (string, bool) {
	if !isCommit(f.SourceRevision) {
		return "", false
	}
	found := ""
	for _, d := range r {
		if d.Revision != f.SourceRevision || (f.SourceRepoID != "" && d.Artifact != f.SourceRepoID) {
			continue
		}
		if found != "" && found != d.Artifact {
			return "", false
		}
		found = d.Artifact
	}
	return found, found != ""
}

// withFacts fills what the model behind a binding knows of its runtime
// (signal.FactsOf) and, where its source matches, its registered
// checkpoint (reg); unknown values stay omitted.
func withFacts(b Binding, model any, reg registry) Binding {
	f, ok := signal.FactsOf(model)
	if !ok {
		return b
	}
	b.ForwardMaxTokens = f.ForwardMaxTokens
	if f.ResourceID != "" {
		b.Metadata = map[string]string{"resource_id": f.ResourceID}
	}
	if repo, ok := reg.match(f); ok {
		if b.Metadata == nil {
			b.Metadata = map[string]string{}
		}
		b.Registry = &RegistrySource{RepoID: repo}
		b.Metadata["registry_match"] = "source_revision"
	}
	if f.Windowed {
		b.DocumentMaxTokens, b.WindowSize, b.WindowOverlap = f.DocumentMaxTokens, f.WindowSize, f.WindowOverlap
	}
	return b
}

// BindingList answers GET /api/v1/diagnostics/models.
type BindingList struct {
	Recipe   string    `json:"recipe"`
	Bindings []Binding `json:"bindings"`
}

type resolvedBinding struct {
	Binding
	classifier signal.Classifier
	embedder   signal.Embedder
}

// bindingsOf lists the bindings a recipe's signals use in gen.
func (s *Server) bindingsOf(gen *engine.Generation, rc *recipes.Recipe) ([]resolvedBinding, error) {
	models, err := s.modelsOf(gen)
	if err != nil {
		return nil, err
	}
	mk := func(name, kind, method string, tasks []string, sigs []string) Binding {
		return Binding{Name: name, Recipe: rc.Name, Kind: kind, Tasks: tasks, Method: method, Signals: sigs,
			Provider: "junction", Device: "cpu", Precision: "fp64", ArtifactRevision: "embedded:" + method,
			InputMaxTokens: InputMaxTokens, MaxSequenceLength: InputMaxTokens, MaxBatchSize: maxBatch(gen), Prepared: true}
	}
	var out []resolvedBinding
	names := func(n int, at func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	reg := registryOf(gen.Document())
	sg := rc.Signals
	if len(sg.Domains) > 0 {
		b := mk("domain", "classifier", models.Domain.Method(), []string{"labels", "label-scores"}, names(len(sg.Domains), func(i int) string { return sg.Domains[i].Name }))
		b.Labels = signal.DomainCategories()
		out = append(out, resolvedBinding{Binding: withFacts(b, models.Domain, reg), classifier: models.Domain})
	}
	if len(sg.Jailbreak) > 0 {
		b := mk("jailbreak", "classifier", models.Jailbreak.Method(), []string{"labels", "label-scores"}, names(len(sg.Jailbreak), func(i int) string { return sg.Jailbreak[i].Name }))
		b.Labels = []string{"benign", "jailbreak"}
		out = append(out, resolvedBinding{Binding: withFacts(b, models.Jailbreak, reg), classifier: models.Jailbreak})
	}
	if len(sg.Embeddings)+len(sg.Complexity) > 0 {
		sigs := names(len(sg.Embeddings), func(i int) string { return sg.Embeddings[i].Name })
		sigs = append(sigs, names(len(sg.Complexity), func(i int) string { return sg.Complexity[i].Name })...)
		b := mk("embedding", "embedder", models.Embedder.Method(), []string{"embeddings", "rerank"}, sigs)
		out = append(out, resolvedBinding{Binding: withFacts(b, models.Embedder, reg), embedder: models.Embedder})
	}
	if len(sg.PII) > 0 {
		b := mk("pii", "token_classifier", "pattern+heuristic", []string{"tokens"}, names(len(sg.PII), func(i int) string { return sg.PII[i].Name }))
		b.Precision, b.ArtifactRevision, b.Labels = "n/a", "builtin:pattern", pii.Types()
		out = append(out, resolvedBinding{Binding: b})
	}
	return out, nil
}

func (s *Server) listBindings(w http.ResponseWriter, r *http.Request) {
	gen := s.cfg.Runtime().Current()
	rc, err := recipeIn(gen, r.URL.Query().Get("recipe"))
	if err != nil {
		writeError(w, err)
		return
	}
	bs, err := s.bindingsOf(gen, rc)
	if err != nil {
		writeError(w, err)
		return
	}
	out := BindingList{Recipe: rc.Name, Bindings: []Binding{}}
	for _, b := range bs {
		out.Bindings = append(out.Bindings, b.Binding)
	}
	writeJSON(w, http.StatusOK, out)
}

// ModelCallRequest is a typed model call: recipe and binding always; text
// for labels, label-scores and tokens; texts for embeddings; query and
// documents for rerank.
type ModelCallRequest struct {
	Recipe    string   `json:"recipe" oas:"required,minLength=1"`
	Binding   string   `json:"binding" oas:"required,minLength=1"`
	Text      string   `json:"text,omitempty"`
	Texts     []string `json:"texts,omitempty"`
	Query     string   `json:"query,omitempty"`
	Documents []string `json:"documents,omitempty"`
	// Threshold is the operating point of label-scores; the recipe's signal
	// threshold (else 0.5) when absent.
	Threshold *float64 `json:"threshold,omitempty"`
}

// LabelScore is a label with its score.
type LabelScore struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
	// Passed is set by label-scores: score at or over the operating point.
	Passed *bool `json:"passed,omitempty"`
}

// TokenSpan is an entity span with byte offsets into the original UTF-8 text.
type TokenSpan struct {
	Label      string  `json:"label"`
	Start      int     `json:"start"`
	End        int     `json:"end"`
	Text       string  `json:"text"`
	Confidence float64 `json:"confidence"`
}

// ModelCallResponse carries the result with the binding's identity and limits.
type ModelCallResponse struct {
	Task           string       `json:"task"`
	Binding        Binding      `json:"binding"`
	Labels         []LabelScore `json:"labels,omitempty"`
	OperatingPoint *float64     `json:"operating_point,omitempty"`
	Tokens         []TokenSpan  `json:"tokens,omitempty"`
	Embeddings     [][]float32  `json:"embeddings,omitempty"`
	Dimensions     int          `json:"dimensions,omitempty"`
	Scores         []float64    `json:"scores,omitempty"`
	ElapsedMS      float64      `json:"elapsed_ms"`
}

func (s *Server) modelCall(task string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req ModelCallRequest
		if err := decodeJSON(r, &req); err != nil {
			writeError(w, err)
			return
		}
		if req.Recipe == "" || req.Binding == "" {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "typed model calls need both recipe and binding (GET /api/v1/diagnostics/models?recipe=NAME lists bindings)"))
			return
		}
		// The generation is held for the whole call, even if a reload
		// activates another one meanwhile.
		gen := s.cfg.Runtime().Current()
		start := time.Now()
		res, err := s.runModelCall(r, gen, task, &req)
		s.stats.observe("models/"+task, time.Since(start), err)
		if err != nil {
			writeError(w, err)
			return
		}
		res.ElapsedMS = ms(time.Since(start))
		writeJSON(w, http.StatusOK, res)
	}
}

func (s *Server) runModelCall(r *http.Request, gen *engine.Generation, task string, req *ModelCallRequest) (*ModelCallResponse, error) {
	rc, err := recipeIn(gen, req.Recipe)
	if err != nil {
		return nil, err
	}
	bs, err := s.bindingsOf(gen, rc)
	if err != nil {
		return nil, err
	}
	var b *resolvedBinding
	var names []string
	for i := range bs {
		names = append(names, bs[i].Name)
		if bs[i].Name == req.Binding {
			b = &bs[i]
		}
	}
	if b == nil {
		return nil, newErr(http.StatusNotFound, CodeUnknownBinding, "binding %q is not prepared for recipe %q (its bindings: %v); no fallback model is loaded", req.Binding, rc.Name, names)
	}
	if !slices.Contains(b.Tasks, task) {
		return nil, newErr(http.StatusUnprocessableEntity, CodeUnsupportedTask, "binding %q (%s) does not serve %s; it serves %v", b.Name, b.Kind, task, b.Tasks)
	}
	ctx, cancel := context.WithTimeout(r.Context(), modelDeadline)
	defer cancel()
	out := &ModelCallResponse{Task: task, Binding: b.Binding}
	switch task {
	case "labels", "label-scores":
		if err := checkText(r, "text", req.Text); err != nil {
			return nil, err
		}
		ls, err := b.classifier.Classify(ctx, []string{req.Text})
		if err != nil {
			return nil, modelErr(b.Name, err)
		}
		op := 0.5
		if req.Threshold != nil {
			op = *req.Threshold
		} else if b.Name == "jailbreak" && len(rc.Signals.Jailbreak) > 0 && rc.Signals.Jailbreak[0].Threshold > 0 {
			op = rc.Signals.Jailbreak[0].Threshold
		}
		for _, l := range ls[0] {
			x := LabelScore{Label: l.Label, Score: l.Score}
			if task == "label-scores" {
				p := l.Score >= op
				x.Passed = &p
			}
			out.Labels = append(out.Labels, x)
		}
		if task == "label-scores" {
			out.OperatingPoint = &op
		}
	case "tokens":
		if err := checkText(r, "text", req.Text); err != nil {
			return nil, err
		}
		out.Tokens = []TokenSpan{}
		for _, e := range pii.Detect(req.Text, true) {
			out.Tokens = append(out.Tokens, TokenSpan{Label: e.Type, Start: e.Start, End: e.End, Text: req.Text[e.Start:e.End], Confidence: e.Confidence})
		}
	case "embeddings":
		texts := req.Texts
		if req.Text != "" {
			texts = append([]string{req.Text}, texts...)
		}
		if len(texts) == 0 {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "give text or texts")
		}
		if err := batchLimit(gen, len(texts)); err != nil {
			return nil, err
		}
		if err := checkText(r, "texts", texts...); err != nil {
			return nil, err
		}
		vs, err := b.embedder.Embed(ctx, texts)
		if err != nil {
			return nil, modelErr(b.Name, err)
		}
		out.Embeddings = vs
		if len(vs) > 0 {
			out.Dimensions = len(vs[0])
		}
	case "rerank":
		if len(req.Documents) == 0 {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "rerank needs query and a non-empty documents list")
		}
		if err := batchLimit(gen, len(req.Documents)); err != nil {
			return nil, err
		}
		if err := checkText(r, "query and documents", append([]string{req.Query}, req.Documents...)...); err != nil {
			return nil, err
		}
		scores, err := similarities(ctx, b.embedder, req.Query, req.Documents)
		if err != nil {
			return nil, modelErr(b.Name, err)
		}
		out.Scores = scores
	}
	return out, nil
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		if i >= len(b) {
			break
		}
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

func similarities(ctx context.Context, e signal.Embedder, query string, docs []string) ([]float64, error) {
	vs, err := e.Embed(ctx, append([]string{query}, docs...))
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(docs))
	for i := range docs {
		out[i] = cosine(vs[0], vs[i+1])
	}
	return out, nil
}

// NLIRequest is a premise/hypothesis pair.
type NLIRequest struct {
	Premise    string `json:"premise" oas:"required,minLength=1"`
	Hypothesis string `json:"hypothesis" oas:"required,minLength=1"`
	Recipe     string `json:"recipe,omitempty"`
}

// EmbeddingsRequest asks for text embeddings.
type EmbeddingsRequest struct {
	Text   string   `json:"text,omitempty" oas:"anyof=input,minLength=1"`
	Texts  []string `json:"texts,omitempty" oas:"anyof=input,minItems=1"`
	Image  string   `json:"image,omitempty"`
	Recipe string   `json:"recipe,omitempty"`
}

// EmbeddingsResponse carries vectors with the binding's method.
type EmbeddingsResponse struct {
	Embeddings [][]float32 `json:"embeddings"`
	Dimensions int         `json:"dimensions"`
	Method     string      `json:"method"`
	ElapsedMS  float64     `json:"elapsed_ms"`
}

func (s *Server) embedderFor(r *http.Request, recipe string) (signal.Embedder, *engine.Generation, error) {
	gen := s.cfg.Runtime().Current()
	if _, err := recipeIn(gen, recipe); err != nil {
		return nil, nil, err
	}
	m, err := s.modelsOf(gen)
	if err != nil {
		return nil, nil, err
	}
	return m.Embedder, gen, nil
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req EmbeddingsRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Image != "" {
		writeError(w, newErr(http.StatusServiceUnavailable, CodeModelNotLoaded, "no image embedding model is bound; only text embeddings are available"))
		return
	}
	texts := req.Texts
	if req.Text != "" {
		texts = append([]string{req.Text}, texts...)
	}
	if len(texts) == 0 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "give text or texts"))
		return
	}
	e, gen, err := s.embedderFor(r, req.Recipe)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := batchLimit(gen, len(texts)); err != nil {
		writeError(w, err)
		return
	}
	if err := checkText(r, "texts", texts...); err != nil {
		writeError(w, err)
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), modelDeadline)
	defer cancel()
	vs, err := e.Embed(ctx, texts)
	s.stats.observe("embeddings", time.Since(start), err)
	if err != nil {
		writeError(w, modelErr("embedding", err))
		return
	}
	out := EmbeddingsResponse{Embeddings: vs, Method: e.Method(), ElapsedMS: ms(time.Since(start))}
	if len(vs) > 0 {
		out.Dimensions = len(vs[0])
	}
	writeJSON(w, http.StatusOK, out)
}

// SimilarityRequest compares two texts.
type SimilarityRequest struct {
	Text1  string `json:"text1" oas:"required,minLength=1"`
	Text2  string `json:"text2" oas:"required,minLength=1"`
	Recipe string `json:"recipe,omitempty"`
}

// SimilarityResponse is their cosine similarity.
type SimilarityResponse struct {
	Similarity float64 `json:"similarity"`
	Method     string  `json:"method"`
	ElapsedMS  float64 `json:"elapsed_ms"`
}

func (s *Server) similarity(w http.ResponseWriter, r *http.Request) {
	var req SimilarityRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkText(r, "text1 and text2", req.Text1, req.Text2); err != nil {
		writeError(w, err)
		return
	}
	e, _, err := s.embedderFor(r, req.Recipe)
	if err != nil {
		writeError(w, err)
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), modelDeadline)
	defer cancel()
	sc, err := similarities(ctx, e, req.Text1, []string{req.Text2})
	s.stats.observe("similarity", time.Since(start), err)
	if err != nil {
		writeError(w, modelErr("similarity", err))
		return
	}
	writeJSON(w, http.StatusOK, SimilarityResponse{Similarity: sc[0], Method: e.Method(), ElapsedMS: ms(time.Since(start))})
}

// SimilarityBatchRequest compares a query with candidates.
type SimilarityBatchRequest struct {
	Query      string   `json:"query" oas:"required,minLength=1"`
	Candidates []string `json:"candidates" oas:"required,minItems=1"`
	TopK       int      `json:"top_k,omitempty"`
	Recipe     string   `json:"recipe,omitempty"`
}

// SimilarityMatch is one candidate's score.
type SimilarityMatch struct {
	Index      int     `json:"index"`
	Text       string  `json:"text"`
	Similarity float64 `json:"similarity"`
}

// SimilarityBatchResponse lists scores in input order, and the top_k best.
type SimilarityBatchResponse struct {
	Scores    []float64         `json:"scores"`
	Top       []SimilarityMatch `json:"top"`
	Method    string            `json:"method"`
	ElapsedMS float64           `json:"elapsed_ms"`
}

func (s *Server) similarityBatch(w http.ResponseWriter, r *http.Request) {
	var req SimilarityBatchRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Candidates) == 0 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "candidates must be a non-empty list"))
		return
	}
	e, gen, err := s.embedderFor(r, req.Recipe)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := batchLimit(gen, len(req.Candidates)); err != nil {
		writeError(w, err)
		return
	}
	if err := checkText(r, "query and candidates", append([]string{req.Query}, req.Candidates...)...); err != nil {
		writeError(w, err)
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), modelDeadline)
	defer cancel()
	sc, err := similarities(ctx, e, req.Query, req.Candidates)
	s.stats.observe("similarity_batch", time.Since(start), err)
	if err != nil {
		writeError(w, modelErr("similarity", err))
		return
	}
	out := SimilarityBatchResponse{Scores: sc, Top: []SimilarityMatch{}, Method: e.Method()}
	for i, v := range sc {
		out.Top = append(out.Top, SimilarityMatch{Index: i, Text: req.Candidates[i], Similarity: v})
	}
	slices.SortStableFunc(out.Top, func(a, b SimilarityMatch) int {
		switch {
		case a.Similarity > b.Similarity:
			return -1
		case a.Similarity < b.Similarity:
			return 1
		}
		return 0
	})
	if req.TopK > 0 && req.TopK < len(out.Top) {
		out.Top = out.Top[:req.TopK]
	}
	out.ElapsedMS = ms(time.Since(start))
	writeJSON(w, http.StatusOK, out)
}

// Inventory lists the bindings of every recipe of the serving generation.
type Inventory struct {
	ConfigHash string     `json:"config_hash"`
	Bindings   []Binding  `json:"bindings"`
	System     SystemInfo `json:"system"`
}

func (s *Server) inventory(w http.ResponseWriter, keep func(Binding) bool) {
	gen := s.cfg.Runtime().Current()
	out := Inventory{ConfigHash: gen.Hash(), Bindings: []Binding{}, System: systemInfo()}
	for i := range gen.Document().Recipes {
		bs, err := s.bindingsOf(gen, &gen.Document().Recipes[i])
		if err != nil {
			writeError(w, err)
			return
		}
		for _, b := range bs {
			if keep(b.Binding) {
				out.Bindings = append(out.Bindings, b.Binding)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) inventoryModels(w http.ResponseWriter, r *http.Request) {
	s.inventory(w, func(Binding) bool { return true })
}

func (s *Server) inventoryEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.inventory(w, func(b Binding) bool { return b.Kind == "embedder" })
}

// ModelListResponse is the OpenAI model list.
type ModelListResponse struct {
	Object string                 `json:"object"`
	Data   []dataplane.ModelEntry `json:"data"`
}

// modelList answers GET /v1/models on the management listener: the gateway's
// list plus the routing alias auto, which document 001 says this listing
// includes (the gateway lists MoM alone so a model picker shows one entry).
func (s *Server) modelList(w http.ResponseWriter, r *http.Request) {
	a := dataplane.ModelList(s.cfg.Runtime().Current(), s.started, nil)
	var out ModelListResponse
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &out) != nil || len(out.Data) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		_, _ = w.Write(a.Body)
		return
	}
	auto := out.Data[0]
	auto.ID = engine.ModelAuto
	out.Data = append([]dataplane.ModelEntry{out.Data[0], auto}, out.Data[1:]...)
	writeJSON(w, http.StatusOK, out)
}
