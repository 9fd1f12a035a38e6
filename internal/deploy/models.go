package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib"
	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/plugins/responsecache"
	"github.com/junction-router/junction/recipes"
)

// Values of LocalModels' mode (serve's --signal-models).
const (
	ModelsONNX    = "onnx"
	ModelsLexical = "lexical"
)

// Names of what LocalModels loads besides the default models, as the
// router_local_model_* metrics and Loaded name them.
const (
	ModelONNXRuntime = "onnxruntime"
	ModelLingua      = "lingua"
)

// Need is what one configuration needs loaded in process: the models of
// the model-backed signal kinds its decisions read (and its plugins embed
// with), and the languages its language signals name.
type Need struct {
	Domain, Jailbreak, Embedder bool
	// Languages are the ISO 639-1 codes of the used language signals; none:
	// no language detector.
	Languages []string
}

// NeedOf is what doc needs: a kind counts when one of its signals is used
// (engine.UsedSignals: a decision names it, it blocks, or a used complexity
// signal composes it); embedding and complexity signals share the embedder,
// and so do the plugins that embed (response_cache with a semantic mode,
// tools). A plugin that calls a model host function unforeseen here gets the
// model on its first call (OnDemand).
func NeedOf(doc *recipes.Document) Need {
	if doc == nil {
		return Need{}
	}
	kinds := engine.UsedKinds(doc)
	n := Need{
		Domain:    kinds[recipes.KindDomain],
		Jailbreak: kinds[recipes.KindJailbreak],
		Embedder:  kinds[recipes.KindEmbedding] || kinds[recipes.KindComplexity],
		Languages: engine.UsedLanguages(doc),
	}
	for _, r := range doc.Recipes {
		for _, d := range r.Decisions {
			for _, p := range d.Plugins {
				switch p.Type {
				case responsecache.Type:
					if c, err := responsecache.ParseConfig(p.Configuration); err == nil && c.Similar() {
						n.Embedder = true
					}
				case "tools":
					n.Embedder = true
				}
			}
		}
	}
	return n
}

// Loader loads the in-process models (ONNX Runtime and the default
// domain, jailbreak and embedding models of internal/inference/defaultmodels,
// and lingua's language detector) when a configuration first needs them,
// shares them across configuration generations, and releases each when no
// generation holds a Lease on it any more. A kind bound to a deployment is
// never loaded here; with mode lexical, or when ONNX Runtime or a model
// cannot be loaded, the kind uses its lexical fallback (method
// lexical-bayes, hashed-ngrams) after one warning: the router works without
// models. It is safe for concurrent use.
type Loader struct {
	mode  string
	bound signal.Models
	log   *slog.Logger
	met   *metrics.LocalModels

	mu       sync.Mutex
	rt       *inference.Runtime
	dir      string // the default models' directory, once written
	failed   error  // ONNX Runtime could not be opened: every kind falls back
	held     map[string]*heldModel
	lang     *heldLang // the newest detector, reused while it knows the languages asked for
	langs    int       // detectors alive
	fallback signal.Models
	sticky   map[string]bool // models OnDemand loaded, held until Close
}

type heldModel struct {
	m    *defaultmodels.Model
	refs int
	// emb is m.Embedder behind the model's memo (embedding models only):
	// what every user of the model gets, so they share it.
	emb signal.Embedder
}

func (l *Loader) newHeld(m *defaultmodels.Model) *heldModel {
	h := &heldModel{m: m}
	if m.Embedder != nil {
		h.emb = newEmbedMemo(m.Embedder, l.met)
	}
	return h
}

type heldLang struct {
	d    *signal.LanguageDetector
	refs int
}

// NewLoader returns a loader for mode (ModelsONNX or ModelsLexical;
// empty is ModelsONNX) that loads nothing yet. bound are the kinds
// deployments serve (Set.Bound). reg receives the router_local_model_*
// metrics (nil: none).
func NewLoader(mode string, bound signal.Models, log *slog.Logger, reg prometheus.Registerer) (*Loader, error) {
	switch mode {
	case "":
		mode = ModelsONNX
	case ModelsONNX, ModelsLexical:
	default:
		return nil, fmt.Errorf("--signal-models %q: use %s or %s", mode, ModelsONNX, ModelsLexical)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Loader{mode: mode, bound: bound, log: log, met: metrics.NewLocalModels(reg),
		held: map[string]*heldModel{}, sticky: map[string]bool{}}, nil
}

// Lease is one configuration generation's hold on the models it was
// compiled with. Release gives them back; the last holder's release closes
// a model (calls in flight finish first).
type Lease struct {
	// Models are the signal models to compile with: bound kinds, loaded
	// default models, or the shared lexical fallbacks.
	Models signal.Models
	// Language is the shared detector (nil when no language is needed).
	Language *signal.LanguageDetector

	l     *Loader
	also  func() // run by Release (a Fleet's hold on the generation's deployments)
	names []string
	lang  *heldLang
	once  sync.Once
}

// Acquire loads what need names and is not loaded yet (the models in
// parallel) and returns a lease on it. An error is a language the detector
// does not know; a model that cannot be loaded falls back with a warning.
func (l *Loader) Acquire(ctx context.Context, need Need) (*Lease, error) {
	return l.AcquireBound(ctx, need, l.bound)
}

// AcquireBound is Acquire for a configuration whose signal kinds are bound
// to other deployments than those serve started with (a Fleet's Set): bound
// replaces the loader's own; the kinds it leaves nil load in-process.
func (l *Loader) AcquireBound(ctx context.Context, need Need, bound signal.Models) (*Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := &Lease{l: l, Models: bound}
	var want []string
	if need.Domain && bound.Domain == nil {
		want = append(want, defaultmodels.DomainName)
	}
	if need.Jailbreak && bound.Jailbreak == nil {
		want = append(want, defaultmodels.JailbreakName)
	}
	if need.Embedder && bound.Embedder == nil {
		want = append(want, defaultmodels.EmbedderName)
	}
	// lingua's detector builds while the ONNX models load: start-up waits
	// for the slower of the two, not their sum.
	var lang func() (*heldLang, bool, error)
	if len(need.Languages) > 0 {
		lang = l.detectorLocked(need.Languages)
	}
	// Two or three default models load as one joint model, whose one run
	// per text answers for each (defaultmodels.JointGraph); should it not
	// load, they load separately.
	jointLoaded := false
	if j := defaultmodels.JointName(want); j != "" && l.mode != ModelsLexical {
		if jointLoaded = l.loadLocked(ctx, []string{j}); jointLoaded || l.held[j] != nil {
			want = []string{j}
		}
	}
	loaded := l.loadLocked(ctx, want) || jointLoaded
	for _, name := range want {
		h := l.held[name]
		if h == nil {
			continue // fell back
		}
		h.refs++
		ls.names = append(ls.names, name)
	}
	var langErr error
	if lang != nil {
		h, built, err := lang()
		if err == nil {
			h.refs++
			ls.lang, ls.Language = h, h.d
			loaded = loaded || built
		}
		langErr = err
	}
	if err := errors.Join(langErr, l.fillLocked(ls, need)); err != nil {
		ls.releaseLocked()
		return nil, err
	}
	if loaded {
		// Loading leaves decompressed files and protobuf messages behind
		// (reading lingua's model files leaves tens of MB): give those pages back soon rather
		// than carry them until the heap grows into them. In the
		// background: a full collection after a load takes a while,
		// and the activation need not wait for it.
		go func() {
			debug.FreeOSMemory()
			trimCHeap()
		}()
	}
	return ls, nil
}

// Prefetch starts loading what need names in the background (serve calls
// it with the configuration file's needs before it opens stored data and
// the plugin host, so that those overlap the loading), and returns a
// function (idempotent) that waits for it and lets go of the lease: the first
// configuration compiled meanwhile takes its own lease on the same models.
func (l *Loader) Prefetch(ctx context.Context, need Need) (done func()) {
	ch := make(chan *Lease, 1)
	go func() {
		ls, err := l.Acquire(ctx, need)
		if err != nil {
			ls = nil // the compile reports it
		}
		ch <- ls
	}()
	var once sync.Once
	return func() { once.Do(func() { (<-ch).Release() }) }
}

// loadLocked loads the models of want not held yet, in parallel; it
// reports whether it loaded any.
func (l *Loader) loadLocked(ctx context.Context, want []string) bool {
	var missing []string
	for _, name := range want {
		if l.held[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 || l.mode == ModelsLexical || !l.runtimeLocked() {
		return false
	}
	if l.dir == "" {
		dir, err := defaultmodels.CacheDir("")
		if err != nil {
			l.log.Warn("the default ONNX models could not be written to their cache directory, so the signals that need them use the lexical fallbacks (method lexical-bayes, hashed-ngrams)", "error", err)
			l.releaseRuntimeLocked()
			return false
		}
		l.dir = dir
	}
	start := time.Now()
	out := make([]*defaultmodels.Model, len(missing))
	errs := make([]error, len(missing))
	var wg sync.WaitGroup
	for i, name := range missing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One thread per session: the models are a few gathers and a
			// small matrix product, and the router runs many requests at once.
			out[i], errs[i] = defaultmodels.OpenModel(ctx, l.rt, l.dir, name, 1)
		}()
	}
	wg.Wait()
	ok := false
	for i, name := range missing {
		if errs[i] != nil {
			l.log.Warn("a default ONNX model could not be loaded, so the signals that need it use the lexical fallback (method lexical-bayes, hashed-ngrams)", "model", name, "error", errs[i])
			continue
		}
		l.held[name] = l.newHeld(out[i])
		l.met.Loaded(name, true)
		ok = true
	}
	if !ok {
		l.releaseRuntimeLocked()
		return false
	}
	l.log.Info("signal models loaded", "models", strings.Join(missing, ","), "onnxruntime", l.rt.Version(),
		"elapsed", time.Since(start).Round(time.Millisecond))
	return true
}

// runtimeLocked opens ONNX Runtime when it is not open; false when it
// cannot be (warned once).
func (l *Loader) runtimeLocked() bool {
	if l.rt != nil {
		return true
	}
	if l.failed != nil {
		return false
	}
	rt, err := inference.Open(inference.Options{Device: "cpu", Threads: 1})
	if err != nil {
		l.failed = err
		l.log.Warn("ONNX Runtime is not available, so the domain, jailbreak and embedding signals use the lexical fallbacks (method lexical-bayes, hashed-ngrams); run `"+ortlib.FetchCommand+"` in the Junction repository (or set "+ortlib.EnvLibrary+") to use the default ONNX models",
			"error", err)
		return false
	}
	l.rt = rt
	l.met.Loaded(ModelONNXRuntime, true)
	return true
}

// releaseRuntimeLocked closes ONNX Runtime once no model is held.
func (l *Loader) releaseRuntimeLocked() {
	if l.rt == nil || len(l.held) > 0 {
		return
	}
	_ = l.rt.Close()
	l.rt = nil
	l.met.Loaded(ModelONNXRuntime, false)
}

// fillLocked sets ls.Models' kinds that are neither bound nor loaded to the
// lexical fallbacks, built once and shared.
func (l *Loader) fillLocked(ls *Lease, need Need) error {
	held := func(name string) *heldModel { return l.answeringLocked(name, ls.names) }
	model := func(name string) signal.Classifier {
		if h := held(name); h != nil {
			return classifierOf(h.m, name)
		}
		return nil
	}
	if ls.Models.Domain == nil && need.Domain {
		if m := model(defaultmodels.DomainName); m != nil {
			ls.Models.Domain = m
		} else if err := l.fallbackLocked(); err != nil {
			return err
		} else {
			ls.Models.Domain = l.fallback.Domain
		}
	}
	if ls.Models.Jailbreak == nil && need.Jailbreak {
		if m := model(defaultmodels.JailbreakName); m != nil {
			ls.Models.Jailbreak = m
		} else if err := l.fallbackLocked(); err != nil {
			return err
		} else {
			ls.Models.Jailbreak = l.fallback.Jailbreak
		}
	}
	if ls.Models.Embedder == nil && need.Embedder {
		if h := held(defaultmodels.EmbedderName); h != nil {
			ls.Models.Embedder = h.emb
		} else if err := l.fallbackLocked(); err != nil {
			return err
		} else {
			ls.Models.Embedder = l.fallback.Embedder
		}
	}
	return nil
}

// answeringLocked is the held model among names (all held models when
// names is nil) that answers for the default model name: that model, or a
// joint model that includes it; nil when none does.
func (l *Loader) answeringLocked(name string, names []string) *heldModel {
	if names == nil {
		for n := range l.held {
			names = append(names, n)
		}
		slices.Sort(names) // a fixed order: any of them gives the same answers
	}
	for _, n := range names {
		if h := l.held[n]; h != nil && (n == name || slices.Contains(defaultmodels.JointModels(n), name)) {
			return h
		}
	}
	return nil
}

// classifierOf is m's classifier for the default model name.
func classifierOf(m *defaultmodels.Model, name string) signal.Classifier {
	if name == defaultmodels.JailbreakName {
		return m.Jailbreak
	}
	return m.Domain
}

func (l *Loader) fallbackLocked() error {
	if l.fallback.Domain != nil {
		return nil
	}
	domain, err := signal.LexicalDomain()
	if err != nil {
		return err
	}
	jailbreak, err := signal.LexicalJailbreak()
	if err != nil {
		return err
	}
	l.fallback = signal.Models{Domain: domain, Jailbreak: jailbreak, Embedder: signal.HashedEmbedder()}
	return nil
}

// detectorLocked returns the newest detector when it knows every code,
// else starts building one for codes (the older one lives on while leases
// hold it); the function it returns waits for it.
func (l *Loader) detectorLocked(codes []string) func() (h *heldLang, built bool, err error) {
	if h := l.lang; h != nil && !slices.ContainsFunc(codes, func(c string) bool { return !h.d.Knows(c) }) {
		return func() (*heldLang, bool, error) { return h, false, nil }
	}
	type result struct {
		d   *signal.LanguageDetector
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		d, err := signal.NewLanguageDetector(codes...)
		done <- result{d, err}
	}()
	return func() (*heldLang, bool, error) {
		r := <-done
		if r.err != nil {
			return nil, false, r.err
		}
		l.lang = &heldLang{d: r.d}
		l.langs++
		l.met.Loaded(ModelLingua, true)
		l.log.Info("language detector loaded", "languages", strings.Join(r.d.Languages(), ","), "elapsed", time.Since(start).Round(time.Millisecond))
		return l.lang, true, nil
	}
}

// OnRelease makes Release also run f (once): the generation's hold on
// what else it was compiled over (a Fleet's deployments).
func (ls *Lease) OnRelease(f func()) { ls.also = f }

// Release gives the lease's models back; the last lease of a model closes
// it, and the last model closes ONNX Runtime. Later calls do nothing.
func (ls *Lease) Release() {
	if ls == nil {
		return
	}
	ls.once.Do(func() {
		if ls.also != nil {
			defer ls.also()
		}
		ls.l.mu.Lock()
		freed := ls.releaseLocked()
		ls.l.mu.Unlock()
		if freed {
			// Give the released models' pages back now: the Go heap's
			// (lingua) and the C heap's (ONNX Runtime).
			debug.FreeOSMemory()
			trimCHeap()
		}
	})
}

func (ls *Lease) releaseLocked() (freed bool) {
	l := ls.l
	for _, name := range ls.names {
		h := l.held[name]
		if h == nil {
			continue
		}
		if h.refs--; h.refs > 0 || l.sticky[name] {
			continue
		}
		_ = h.m.Close()
		delete(l.held, name)
		l.met.Loaded(name, false)
		l.log.Info("signal model released: no configuration uses it", "model", name)
		freed = true
	}
	ls.names = nil
	l.releaseRuntimeLocked()
	if h := ls.lang; h != nil {
		ls.lang = nil
		if h.refs--; h.refs == 0 {
			if l.lang == h {
				l.lang = nil
			}
			if l.langs--; l.langs == 0 {
				l.met.Loaded(ModelLingua, false)
				l.log.Info("language detector released: no configuration uses it")
			}
			freed = true
		}
	}
	return freed
}

// Loaded reports what is loaded now, each with the number of leases on it
// (a model OnDemand loaded counts one more): the default models by name,
// ModelONNXRuntime and ModelLingua (its count: detectors alive).
func (l *Loader) Loaded() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for name, h := range l.held {
		out[name] = h.refs
		if l.sticky[name] {
			out[name]++
		}
	}
	if l.rt != nil {
		out[ModelONNXRuntime] = len(l.held)
	}
	if l.langs > 0 {
		out[ModelLingua] = l.langs
	}
	return out
}

// Close releases every model and ONNX Runtime (at serve's end, after the
// listeners closed).
func (l *Loader) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, h := range l.held {
		_ = h.m.Close()
		delete(l.held, name)
		l.met.Loaded(name, false)
	}
	l.sticky = map[string]bool{}
	l.releaseRuntimeLocked()
	if l.langs > 0 {
		l.met.Loaded(ModelLingua, false)
	}
	l.lang, l.langs = nil, 0
}

// OnDemand are models for the users that are not configuration generations
// (the plugin host's embed and classify functions, the embedding of stored
// data): a call uses the model a generation holds, else loads it and holds
// it until Close.
// Their Method is known without loading (what the model will be: the
// default model when ONNX Runtime can be found, else the fallback), so
// stored data can name its embedding model at start without loading it.
func (l *Loader) OnDemand() signal.Models {
	m := l.bound
	onnx := l.mode == ModelsONNX
	if onnx {
		_, err := ortlib.Find("")
		onnx = err == nil
	}
	if m.Domain == nil {
		m.Domain = &demandClassifier{l: l, name: defaultmodels.DomainName, onnx: onnx}
	}
	if m.Jailbreak == nil {
		m.Jailbreak = &demandClassifier{l: l, name: defaultmodels.JailbreakName, onnx: onnx}
	}
	if m.Embedder == nil {
		m.Embedder = &demandEmbedder{l: l, onnx: onnx}
	}
	return m
}

// errNotLoaded: a model OnDemand promised (its Method said onnx) could not
// be loaded; answering with the fallback would mix two models' outputs.
var errNotLoaded = errors.New("the default ONNX model could not be loaded (see the warning logged at load); restart serve with --signal-models lexical to use the lexical fallbacks")

// demand loads name for an OnDemand user and holds it until Close.
func (l *Loader) demand(ctx context.Context, name string) (*heldModel, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.answeringLocked(name, nil); h != nil {
		// A generation holds it (or a joint model that answers for it): use
		// it without holding it beyond them.
		return h, nil
	}
	if l.loadLocked(ctx, []string{name}) {
		l.sticky[name] = true
		return l.held[name], nil
	}
	return nil, errNotLoaded
}

func (l *Loader) demandFallback() (signal.Models, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.fallbackLocked(); err != nil {
		return signal.Models{}, err
	}
	return l.fallback, nil
}

type demandClassifier struct {
	l    *Loader
	name string
	onnx bool
}

func (c *demandClassifier) Method() string {
	if !c.onnx {
		return signal.MethodLexicalBayes
	}
	return "onnx:" + c.name
}

func (c *demandClassifier) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	if !c.onnx {
		fb, err := c.l.demandFallback()
		if err != nil {
			return nil, err
		}
		if c.name == defaultmodels.DomainName {
			return fb.Domain.Classify(ctx, texts)
		}
		return fb.Jailbreak.Classify(ctx, texts)
	}
	h, err := c.l.demand(ctx, c.name)
	if err != nil {
		return nil, err
	}
	return classifierOf(h.m, c.name).Classify(ctx, texts)
}

type demandEmbedder struct {
	l    *Loader
	onnx bool
}

func (e *demandEmbedder) Method() string {
	if !e.onnx {
		return signal.MethodHashedNgrams
	}
	return defaultmodels.MethodEmbedder
}

// Dimensions is the vectors' width, known without loading the model.
func (e *demandEmbedder) Dimensions() int {
	if !e.onnx {
		return lexical.DefaultDimensions
	}
	return defaultmodels.Dim
}

func (e *demandEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if !e.onnx {
		fb, err := e.l.demandFallback()
		if err != nil {
			return nil, err
		}
		return fb.Embedder.Embed(ctx, texts)
	}
	// The held model's memo, which the generations' signals share: a
	// request's text their embedding signal embedded is answered from it.
	h, err := e.l.demand(ctx, defaultmodels.EmbedderName)
	if err != nil {
		return nil, err
	}
	return h.emb.Embed(ctx, texts)
}

// LocalModels loads the three default models at once (mode as NewLoader's),
// for the callers that route without configuration generations (`junction
// route`, the quality measurements); close releases them. serve loads
// through a Loader instead, only what its configurations use.
func LocalModels(ctx context.Context, mode string, log *slog.Logger) (models signal.Models, close func(), err error) {
	l, err := NewLoader(mode, signal.Models{}, log, nil)
	if err != nil {
		return models, func() {}, err
	}
	ls, err := l.Acquire(ctx, Need{Domain: true, Jailbreak: true, Embedder: true})
	if err != nil {
		return models, func() {}, err
	}
	// A kind that fell back is left nil, as before: the signals build their
	// own fallbacks.
	l.mu.Lock()
	models = signal.Models{}
	if h := l.answeringLocked(defaultmodels.DomainName, nil); h != nil {
		models.Domain = h.m.Domain
	}
	if h := l.answeringLocked(defaultmodels.JailbreakName, nil); h != nil {
		models.Jailbreak = h.m.Jailbreak
	}
	if h := l.answeringLocked(defaultmodels.EmbedderName, nil); h != nil {
		models.Embedder = h.emb
	}
	l.mu.Unlock()
	return models, func() { ls.Release(); l.Close() }, nil
}
