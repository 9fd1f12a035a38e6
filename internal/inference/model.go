package inference

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// ModelOptions configure one loaded model.
type ModelOptions struct {
	// Name is the served name (default: the directory's base name).
	Name string
	// Device overrides Options.Device for this model.
	Device string
	// Threads overrides Options.Threads for this model's session.
	Threads int
	// MaxTokens caps the model's max input tokens (the deployment's input.max_tokens); 0 keeps the model's.
	MaxTokens int
	// Overflow is the default for calls that give none (the deployment's input.overflow); default truncate.
	Overflow Overflow
	// ScanBudget is the most tokens one input may have under overflow window (a call's max_tokens is capped
	// by it); default 32 × the model's max input tokens.
	ScanBudget int
	// MaxBatch is the most rows in one forward pass; default 32.
	MaxBatch int
	// MaxBatchTokens is the most padded tokens (rows × longest row) in one forward pass; default 65536.
	MaxBatchTokens int
	// Concurrency is how many forward passes may run at once on the shared session; default 1 (ONNX Runtime
	// already uses Threads cores inside one pass).
	Concurrency int
	// Task forces the task instead of detecting it.
	Task Task
}

// Info describes a loaded model.
type Info struct {
	Name         string `json:"name"`
	Dir          string `json:"dir"`
	Task         Task   `json:"task"`
	Architecture string `json:"architecture,omitempty"` // config.json architectures[0]
	ModelType    string `json:"model_type,omitempty"`
	// Labels in id order (sequence and token classification).
	Labels     []string `json:"labels,omitempty"`
	MultiLabel bool     `json:"multi_label,omitempty"` // independent sigmoid scores (problem_type multi_label_classification)
	// Activation turns the graph's output into scores: softmax, sigmoid, or none when the graph already
	// outputs probabilities (config.json junction.activation; default softmax, sigmoid for multi-label and
	// one-logit rerank).
	Activation string `json:"activation,omitempty"`
	// MaxTokens is the token budget cap in effect: the model's max input tokens, lowered by
	// ModelOptions.MaxTokens. ModelMaxTokens is the model's own.
	MaxTokens      int      `json:"max_tokens"`
	ModelMaxTokens int      `json:"model_max_tokens"`
	ScanBudget     int      `json:"scan_budget"`
	Overflow       Overflow `json:"overflow"`
	// Embeddings: full width, the Matryoshka widths the model declares, pooling, normalisation, layers.
	Dimensions           int     `json:"dimensions,omitempty"`
	MatryoshkaDimensions []int   `json:"matryoshka_dimensions,omitempty"`
	Pooling              Pooling `json:"pooling,omitempty"`
	Normalize            bool    `json:"normalize,omitempty"`
	Layers               []int   `json:"layers,omitempty"`
	// Tokenizer is WordPiece, BPE, WordLevel or Unigram; MaxTokenChars is the largest character span of one token.
	Tokenizer     string   `json:"tokenizer"`
	MaxTokenChars int      `json:"max_token_chars"`
	Inputs        []string `json:"inputs"`
	Output        string   `json:"output"`
	// Device actually used ("cpu", "cuda:0"); DeviceNote says why auto chose CPU.
	Device     string `json:"device"`
	DeviceNote string `json:"device_note,omitempty"`
	Threads    int    `json:"threads"`
	ORTVersion string `json:"onnxruntime_version"`
	// Digest is "sha256:" and the hex SHA-256 of model.onnx (identifies the vector space of an embedder).
	Digest string `json:"digest"`
	// SourceRepoID and SourceRevision are the checkpoint a derived local
	// graph declares it was built from (the package's optional SourceFile),
	// empty where it declares none. A sidecar rather than config.json: a
	// package's revision may be the digest of its own files.
	SourceRepoID   string `json:"source_repo_id,omitempty"`
	SourceRevision string `json:"source_revision,omitempty"`
}

// SourceFile is a model package's optional declaration of the checkpoint it
// derives from: {"repo_id": "...", "revision": "<40 hex digits>"}, either
// field optional.
const SourceFile = "source.json"

// Source is the content of SourceFile.
type Source struct {
	RepoID   string `json:"repo_id,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// readSource reads dir's SourceFile; a package without one declares no source.
func readSource(dir string) (Source, error) {
	var s Source
	raw, err := os.ReadFile(filepath.Join(dir, SourceFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, invalid("%s: %v (write {\"repo_id\": ..., \"revision\": ...} or remove it)", filepath.Join(dir, SourceFile), err)
	}
	return s, nil
}

// Model is a loaded model: one ONNX Runtime session shared by all callers, its tokenizer and task head.
// Its methods are safe for concurrent use.
type Model struct {
	info     Info
	tok      *tokenizer.Tokenizer
	toks     *sharedTokenizer // tok, shared with the runtime's other models that load the same file
	rt       *Runtime
	opts     ModelOptions
	sem      chan struct{}
	inputs   []graphInput
	outputs  []string       // session outputs: [0] is the task output, then declared layer outputs
	layerOut map[int]int    // layer → index into outputs
	fixedT   int            // the graph's fixed sequence length, 0 when dynamic
	labelIdx map[string]int // label → index
	// rowOuts holds output tensors for one-row passes ([1, k] each, k
	// oneRowWidths), reused from pass to pass instead of ONNX Runtime
	// allocating outputs that the wrapper then reads back through a dozen cgo
	// calls: nil unless every output's width is fixed (TaskHeads). At most
	// Concurrency sets, one per pass in flight.
	oneRowWidths []int64
	rowOuts      chan []ort.Value

	mu      sync.RWMutex
	session *ort.DynamicAdvancedSession
	closed  bool
}

type graphInput struct {
	name  string
	int32 bool
}

type hfConfig struct {
	Architectures         []string          `json:"architectures"`
	ModelType             string            `json:"model_type"`
	ID2Label              map[string]string `json:"id2label"`
	ProblemType           string            `json:"problem_type"`
	MaxPositionEmbeddings int               `json:"max_position_embeddings"`
	HiddenSize            int               `json:"hidden_size"`
	Junction              struct {
		Task                 Task              `json:"task"`
		Pooling              Pooling           `json:"pooling"`
		Normalize            *bool             `json:"normalize"`
		MatryoshkaDimensions []int             `json:"matryoshka_dimensions"`
		MaxTokens            int               `json:"max_tokens"`
		Output               string            `json:"output"`
		Layers               map[string]string `json:"layers"`
		Activation           string            `json:"activation"`
	} `json:"junction"`
}

// Load opens a model directory: model.onnx (or onnx/model.onnx), config.json and tokenizer.json, plus
// tokenizer_config.json and sentence-transformers' modules.json and 1_Pooling/config.json when present. The
// session is created once here and runs a self-check (one forward pass) before Load returns.
func (r *Runtime) Load(ctx context.Context, dir string, o ModelOptions) (*Model, error) {
	if err := r.checkOpen(ctx); err != nil {
		return nil, err
	}
	m, err := r.load(dir, o)
	if err != nil {
		return nil, fmt.Errorf("loading model %s: %w", dir, err)
	}
	if err := r.register(m); err != nil {
		m.Close()
		return nil, err
	}
	if err := m.selfCheck(ctx); err != nil {
		m.Close()
		return nil, fmt.Errorf("loading model %s: %w: self-check failed: %w", dir, ErrDamagedPackage, err)
	}
	return m, nil
}

func (r *Runtime) load(dir string, o ModelOptions) (*Model, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (a model is a directory with model.onnx, config.json and tokenizer.json)", dir)
	}
	onnxPath := filepath.Join(dir, "model.onnx")
	if _, err := os.Stat(onnxPath); err != nil {
		alt := filepath.Join(dir, "onnx", "model.onnx")
		if _, err2 := os.Stat(alt); err2 != nil {
			return nil, fmt.Errorf("no model.onnx in %s (nor onnx/model.onnx)", dir)
		}
		onnxPath = alt
	}
	var cfg hfConfig
	if data, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%w: config.json: %v", ErrDamagedPackage, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	shared, err := r.tokenizer(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	tok := shared.tok
	loaded := false
	defer func() {
		if !loaded {
			r.releaseTokenizer(shared)
		}
	}()
	if o.Task == "" {
		o.Task = cfg.Junction.Task
	}
	switch o.Task {
	case "", TaskSequenceClassification, TaskTokenClassification, TaskEmbedding, TaskRerank, TaskHeads:
	default:
		return nil, invalid("task %q is not one of %s, %s, %s, %s, %s", o.Task, TaskSequenceClassification, TaskTokenClassification, TaskEmbedding, TaskRerank, TaskHeads)
	}
	if o.Overflow == "" {
		o.Overflow = OverflowTruncate
	}
	if err := checkOverflow(o.Overflow); err != nil {
		return nil, err
	}
	dev, err := parseDevice(firstNonEmpty(o.Device, r.device.String()))
	if err != nil {
		return nil, err
	}
	threads := o.Threads
	if threads <= 0 {
		threads = r.threads
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 32
	}
	if o.MaxBatchTokens <= 0 {
		o.MaxBatchTokens = 65536
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}

	ins, outs, err := ort.GetInputOutputInfo(onnxPath)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the graph's inputs and outputs of %s: %w", ErrDamagedPackage, onnxPath, err)
	}
	m := &Model{tok: tok, toks: shared, rt: r, sem: make(chan struct{}, o.Concurrency), layerOut: map[int]int{}, labelIdx: map[string]int{}}
	info := &m.info
	info.Dir = dir
	info.Name = firstNonEmpty(o.Name, filepath.Base(filepath.Clean(dir)))
	info.ModelType = cfg.ModelType
	if len(cfg.Architectures) > 0 {
		info.Architecture = cfg.Architectures[0]
	}
	info.Tokenizer = tok.Model()
	info.MaxTokenChars = tok.MaxTokenChars()
	info.ORTVersion = r.version
	info.Threads = threads

	hasIDs := false
	for _, in := range ins {
		switch in.Name {
		case "input_ids", "attention_mask", "token_type_ids", "position_ids":
		default:
			return nil, fmt.Errorf("graph input %q is not one this runtime feeds (input_ids, attention_mask, token_type_ids, position_ids)", in.Name)
		}
		if in.DataType != ort.TensorElementDataTypeInt64 && in.DataType != ort.TensorElementDataTypeInt32 {
			return nil, fmt.Errorf("graph input %q has element type %v; int64 or int32 expected", in.Name, in.DataType)
		}
		if in.Name == "input_ids" {
			hasIDs = true
			if len(in.Dimensions) == 2 && in.Dimensions[1] > 0 {
				m.fixedT = int(in.Dimensions[1])
			}
		}
		m.inputs = append(m.inputs, graphInput{name: in.Name, int32: in.DataType == ort.TensorElementDataTypeInt32})
		info.Inputs = append(info.Inputs, in.Name)
	}
	if !hasIDs {
		return nil, errors.New("the graph has no input_ids input")
	}

	// The task and the output to read.
	byName := map[string]ort.InputOutputInfo{}
	for _, out := range outs {
		byName[out.Name] = out
	}
	labels := labelsOf(cfg.ID2Label)
	task := o.Task
	if task == "" {
		task = detectTask(cfg, labels, outs)
	}
	if task == "" {
		return nil, fmt.Errorf("cannot tell the task: config.json architectures %v and graph outputs %v match none; set junction.task in config.json or ModelOptions.Task", cfg.Architectures, outputNames(outs))
	}
	info.Task = task
	if task == TaskHeads {
		// Every output is a head, read together by Heads.
		fixed := true
		for _, out := range outs {
			if out.DataType != ort.TensorElementDataTypeFloat || len(out.Dimensions) != 2 {
				return nil, fmt.Errorf("task %s reads every graph output as float32 [batch, k]; %q has element type %v and shape %v", task, out.Name, out.DataType, out.Dimensions)
			}
			m.outputs = append(m.outputs, out.Name)
			m.oneRowWidths = append(m.oneRowWidths, out.Dimensions[1])
			fixed = fixed && out.Dimensions[1] > 0
		}
		if fixed {
			m.rowOuts = make(chan []ort.Value, o.Concurrency)
		} else {
			m.oneRowWidths = nil
		}
		if len(m.outputs) == 0 {
			return nil, errors.New("the graph has no outputs")
		}
		info.Output = strings.Join(m.outputs, ",")
		return r.finishLoad(m, o, cfg, dev, threads, onnxPath, shared, &loaded)
	}
	output := cfg.Junction.Output
	if output == "" {
		output = pickOutput(task, byName, outs)
	}
	outInfo, ok := byName[output]
	if !ok {
		return nil, fmt.Errorf("graph output %q not found (outputs: %v)", output, outputNames(outs))
	}
	if outInfo.DataType != ort.TensorElementDataTypeFloat {
		return nil, fmt.Errorf("graph output %q has element type %v; float32 expected", output, outInfo.DataType)
	}
	info.Output = output
	m.outputs = []string{output}
	rank := len(outInfo.Dimensions)
	last := int64(-1)
	if rank > 0 {
		last = outInfo.Dimensions[rank-1]
	}
	switch task {
	case TaskSequenceClassification, TaskTokenClassification:
		want := 2
		if task == TaskTokenClassification {
			want = 3
		}
		if rank != want {
			return nil, fmt.Errorf("task %s reads output %q of rank %d; rank %d expected", task, output, rank, want)
		}
		if len(labels) == 0 && last > 0 {
			for i := 0; i < int(last); i++ {
				labels = append(labels, "LABEL_"+strconv.Itoa(i))
			}
		}
		if len(labels) == 0 {
			return nil, errors.New("config.json has no id2label and the graph's label dimension is dynamic")
		}
		if last > 0 && int(last) != len(labels) {
			return nil, fmt.Errorf("config.json id2label has %d labels but output %q has %d", len(labels), output, last)
		}
		info.Labels = labels
		info.MultiLabel = cfg.ProblemType == "multi_label_classification"
		info.Activation = "softmax"
		if info.MultiLabel {
			info.Activation = "sigmoid"
		}
		for i, l := range labels {
			m.labelIdx[l] = i
		}
	case TaskRerank:
		if rank != 2 || (last > 0 && last != 1 && last != 2) {
			return nil, fmt.Errorf("rerank reads output %q as [batch, 1] or [batch, 2]; it has shape %v", output, outInfo.Dimensions)
		}
		info.Activation = "sigmoid"
		if last == 2 {
			info.Activation = "softmax"
		}
	case TaskEmbedding:
		switch rank {
		case 2:
			info.Pooling = PoolingNone
		case 3:
			info.Pooling = PoolingMean
		default:
			return nil, fmt.Errorf("embedding output %q has rank %d; [batch, dim] or [batch, tokens, dim] expected", output, rank)
		}
		if p := poolingOf(dir, cfg); p != "" && rank == 3 {
			info.Pooling = p
		}
		switch info.Pooling {
		case PoolingMean, PoolingCLS, PoolingLast, PoolingNone:
		default:
			return nil, fmt.Errorf("pooling %q is not one of mean, cls, last, none", info.Pooling)
		}
		if rank == 3 && info.Pooling == PoolingNone {
			return nil, fmt.Errorf("output %q is per token; pooling none needs a [batch, dim] output", output)
		}
		info.Normalize = normalizeOf(dir, cfg)
		if last > 0 {
			info.Dimensions = int(last)
		} else {
			info.Dimensions = cfg.HiddenSize
		}
		info.MatryoshkaDimensions = append([]int(nil), cfg.Junction.MatryoshkaDimensions...)
		sort.Ints(info.MatryoshkaDimensions)
		for layerKey, name := range cfg.Junction.Layers {
			layer, err := strconv.Atoi(layerKey)
			if err != nil || layer <= 0 {
				return nil, fmt.Errorf("config.json junction.layers key %q: a layer number > 0 expected", layerKey)
			}
			lo, ok := byName[name]
			if !ok || len(lo.Dimensions) != rank {
				return nil, fmt.Errorf("config.json junction.layers[%q] names output %q, which the graph lacks or has another rank", layerKey, name)
			}
			m.layerOut[layer] = len(m.outputs)
			m.outputs = append(m.outputs, name)
			info.Layers = append(info.Layers, layer)
		}
		sort.Ints(info.Layers)
	}

	switch a := cfg.Junction.Activation; a {
	case "":
	case "softmax", "sigmoid", "none":
		if info.Task == TaskEmbedding {
			return nil, fmt.Errorf("config.json junction.activation applies to classification and rerank, not %s", info.Task)
		}
		info.Activation = a
		if info.Task == TaskSequenceClassification || info.Task == TaskTokenClassification {
			info.MultiLabel = a == "sigmoid" || (a == "none" && info.MultiLabel)
		}
	default:
		return nil, fmt.Errorf("config.json junction.activation %q is not one of softmax, sigmoid, none", a)
	}

	return r.finishLoad(m, o, cfg, dev, threads, onnxPath, shared, &loaded)
}

// finishLoad sets the token budget and creates the session.
func (r *Runtime) finishLoad(m *Model, o ModelOptions, cfg hfConfig, dev device, threads int, onnxPath string, shared *sharedTokenizer, loaded *bool) (*Model, error) {
	info := &m.info
	dir, tok := info.Dir, shared.tok
	// Token budget.
	info.ModelMaxTokens = maxTokensOf(dir, cfg, m.fixedT)
	info.MaxTokens = info.ModelMaxTokens
	if o.MaxTokens > 0 && o.MaxTokens < info.MaxTokens {
		info.MaxTokens = o.MaxTokens
	}
	if info.MaxTokens <= tok.NumSpecial(true)+1 {
		return nil, fmt.Errorf("max tokens %d leaves no room for text beside %d special tokens", info.MaxTokens, tok.NumSpecial(true))
	}
	if o.ScanBudget <= 0 {
		o.ScanBudget = 32 * info.ModelMaxTokens
	}
	info.ScanBudget = o.ScanBudget
	info.Overflow = o.Overflow
	m.opts = o

	digest, err := fileDigest(onnxPath)
	if err != nil {
		return nil, err
	}
	info.Digest = digest
	src, err := readSource(dir)
	if err != nil {
		return nil, err
	}
	info.SourceRepoID, info.SourceRevision = src.RepoID, src.Revision

	// The session: once per model, shared by every call.
	so, used, note, err := r.sessionOptions(dev, threads)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(m.inputs))
	for i, in := range m.inputs {
		names[i] = in.name
	}
	sess, err := ort.NewDynamicAdvancedSession(onnxPath, names, m.outputs, so)
	so.Destroy()
	if err != nil && used != "cpu" && dev.kind == "auto" {
		// The provider was added but the session could not start on the GPU: auto falls back to CPU.
		cpuSO, _, _, err2 := r.sessionOptions(device{kind: "cpu"}, threads)
		if err2 != nil {
			return nil, err2
		}
		note = "auto chose cpu: the CUDA session failed: " + firstLine(err.Error())
		used = "cpu"
		sess, err = ort.NewDynamicAdvancedSession(onnxPath, names, m.outputs, cpuSO)
		cpuSO.Destroy()
	}
	if err != nil {
		return nil, fmt.Errorf("creating the ONNX Runtime session: %w", err)
	}
	m.session = sess
	info.Device, info.DeviceNote = used, note
	*loaded = true
	return m, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func checkOverflow(o Overflow) error {
	switch o {
	case OverflowReject, OverflowTruncate, OverflowWindow:
		return nil
	}
	return invalid("overflow %q is not one of reject, truncate, window", o)
}

func outputNames(outs []ort.InputOutputInfo) []string {
	n := make([]string, len(outs))
	for i, o := range outs {
		n[i] = o.Name
	}
	return n
}

// labelsOf orders id2label by id.
func labelsOf(id2label map[string]string) []string {
	if len(id2label) == 0 {
		return nil
	}
	ids := make([]int, 0, len(id2label))
	byID := map[int]string{}
	for k, v := range id2label {
		id, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		ids = append(ids, id)
		byID[id] = v
	}
	sort.Ints(ids)
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		if id != i { // ids must be 0..n-1
			return nil
		}
		out = append(out, byID[id])
	}
	return out
}

func detectTask(cfg hfConfig, labels []string, outs []ort.InputOutputInfo) Task {
	for _, a := range cfg.Architectures {
		switch {
		case strings.HasSuffix(a, "ForTokenClassification"):
			return TaskTokenClassification
		case strings.HasSuffix(a, "ForSequenceClassification"):
			if len(labels) == 1 {
				return TaskRerank
			}
			return TaskSequenceClassification
		case strings.HasSuffix(a, "Model") || strings.HasSuffix(a, "ForFeatureExtraction") || strings.HasSuffix(a, "ForSentenceEmbedding"):
			return TaskEmbedding
		}
	}
	for _, o := range outs {
		switch o.Name {
		case "logits":
			if len(o.Dimensions) == 3 {
				return TaskTokenClassification
			}
			if len(o.Dimensions) == 2 && (o.Dimensions[1] == 1 || len(labels) == 1) {
				return TaskRerank
			}
			return TaskSequenceClassification
		case "sentence_embedding", "last_hidden_state", "token_embeddings", "embeddings", "pooler_output":
			return TaskEmbedding
		}
	}
	return ""
}

func pickOutput(task Task, byName map[string]ort.InputOutputInfo, outs []ort.InputOutputInfo) string {
	prefs := []string{"logits"}
	if task == TaskEmbedding {
		prefs = []string{"sentence_embedding", "embeddings", "last_hidden_state", "token_embeddings"}
	}
	for _, p := range prefs {
		if _, ok := byName[p]; ok {
			return p
		}
	}
	return outs[0].Name
}

// poolingOf reads the pooling from config.json's junction block or sentence-transformers' 1_Pooling.
func poolingOf(dir string, cfg hfConfig) Pooling {
	if cfg.Junction.Pooling != "" {
		return cfg.Junction.Pooling
	}
	data, err := os.ReadFile(filepath.Join(dir, "1_Pooling", "config.json"))
	if err != nil {
		return ""
	}
	var p struct {
		CLS       bool `json:"pooling_mode_cls_token"`
		Mean      bool `json:"pooling_mode_mean_tokens"`
		LastToken bool `json:"pooling_mode_lasttoken"`
	}
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	switch {
	case p.CLS:
		return PoolingCLS
	case p.LastToken:
		return PoolingLast
	case p.Mean:
		return PoolingMean
	}
	return ""
}

// normalizeOf: config.json's junction.normalize, else whether sentence-transformers' modules.json lists a
// Normalize module, else true (Junction compares embeddings by cosine).
func normalizeOf(dir string, cfg hfConfig) bool {
	if cfg.Junction.Normalize != nil {
		return *cfg.Junction.Normalize
	}
	data, err := os.ReadFile(filepath.Join(dir, "modules.json"))
	if err != nil {
		return true
	}
	var mods []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(data, &mods) != nil {
		return true
	}
	for _, m := range mods {
		if strings.HasSuffix(m.Type, "Normalize") {
			return true
		}
	}
	return false
}

// maxTokensOf: junction.max_tokens, tokenizer_config.json model_max_length, the position embeddings (less
// RoBERTa's two offset positions), the graph's fixed length, else 512.
func maxTokensOf(dir string, cfg hfConfig, fixedT int) int {
	n := 0
	switch {
	case cfg.Junction.MaxTokens > 0:
		n = cfg.Junction.MaxTokens
	default:
		if data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
			var tc struct {
				ModelMaxLength float64 `json:"model_max_length"`
			}
			if json.Unmarshal(data, &tc) == nil && tc.ModelMaxLength > 0 && tc.ModelMaxLength < 1e7 {
				n = int(tc.ModelMaxLength)
			}
		}
		if n == 0 && cfg.MaxPositionEmbeddings > 0 {
			n = cfg.MaxPositionEmbeddings
			if strings.Contains(cfg.ModelType, "roberta") || cfg.ModelType == "camembert" {
				n -= 2
			}
		}
	}
	if n == 0 {
		n = 512
	}
	if fixedT > 0 && fixedT < n {
		n = fixedT
	}
	return n
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Info describes the model.
func (m *Model) Info() Info {
	i := m.info
	i.Labels = append([]string(nil), m.info.Labels...)
	i.MatryoshkaDimensions = append([]int(nil), m.info.MatryoshkaDimensions...)
	i.Layers = append([]int(nil), m.info.Layers...)
	i.Inputs = append([]string(nil), m.info.Inputs...)
	return i
}

// Tokenizer is the model's tokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Tokenize encodes a whole text with the model's special tokens, without truncation.
func (m *Model) Tokenize(text string) tokenizer.Encoding { return m.tok.Encode(text) }

// CountTokens counts the tokens of text with special tokens, reading at most limit tokens (limit ≤ 0: the
// whole text). lowerBound is true when the text has more than limit tokens and n is only a lower bound.
func (m *Model) CountTokens(text string, limit int) (n int, lowerBound bool) {
	special := m.tok.NumSpecial(false)
	if limit <= 0 {
		toks, _ := m.toks.Tokens(text, -1)
		return len(toks) + special, false
	}
	content := limit - special
	if content < 0 {
		content = 0
	}
	toks, complete := m.toks.Tokens(text, content)
	return len(toks) + special, !complete
}

// Close destroys the session; calls in flight finish first, later calls fail with ErrClosed.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for len(m.rowOuts) > 0 {
		destroyValues(<-m.rowOuts)
	}
	m.rt.unregister(m)
	m.rt.releaseTokenizer(m.toks)
	if m.session != nil {
		return m.session.Destroy()
	}
	return nil
}

func (m *Model) selfCheck(ctx context.Context) error {
	switch m.info.Task {
	case TaskSequenceClassification, TaskTokenClassification:
		_, err := m.Classify(ctx, Texts("self check"), ClassifyOptions{})
		return err
	case TaskEmbedding:
		resp, err := m.Embed(ctx, []string{"self check"}, EmbedOptions{})
		if err != nil {
			return err
		}
		if got := len(resp.Results[0].Embedding); m.info.Dimensions > 0 && got != m.info.Dimensions {
			return fmt.Errorf("the embedding has %d values; the graph declares %d", got, m.info.Dimensions)
		}
		if m.info.Dimensions == 0 {
			m.info.Dimensions = len(resp.Results[0].Embedding)
		}
		return nil
	case TaskRerank:
		_, err := m.Rerank(ctx, "self", []string{"check"}, RerankOptions{})
		return err
	case TaskHeads:
		_, err := m.Heads(ctx, []string{"self check"}, InputOptions{})
		return err
	}
	return nil
}
