// Package deploy runs the router's model deployments
// (global.model_catalog.deployments and bindings): it starts and supervises
// a `junction worker` process per managed replica on a Unix socket in a 0700
// directory (the running executable, through
// internal/inference/worker/supervise), reaches operator-run workers by
// endpoint, binds the signal kinds named in bindings to them
// (internal/inference/worker/client: the classify contract, or the questions
// the domain and jailbreak signals ask with the decisions contract), watches
// every replica's /health, and reports them to /ready and /startup-status
// and to the router_model_runtime_* metrics. It also builds the native API
// over the running deployments, and loads the in-process signal models
// (Loader, when a configuration first uses them) for the kinds no
// deployment serves. Without deployments every signal uses those.
//
// What must not happen here: no routing and no configuration lifecycle (the
// caller compiles and activates documents). A Set never follows a
// configuration change: a Fleet starts another Set for a changed catalog.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib"
	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// deploymentPoll is how often each replica's /health is read: a restarted
// worker is back in rotation within this long of being ready.
const deploymentPoll = 250 * time.Millisecond

// Set is the running deployments of one serve process. A nil
// *Set (no deployments configured) does nothing.
type Set struct {
	log          *slog.Logger
	met          *metrics.ModelRuntime
	deps         []*deployment
	readyTimeout time.Duration
	// failureHold is how long a failed start-up keeps answering /ready
	// before serve exits; negative: until serve is stopped.
	failureHold time.Duration
	bound       signal.Models // the kinds bound to deployments; nil fields run in-process
	embedDep    *deployment   // the deployment of the embeddings binding (compiling needs it)

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the replicas' status and startup
	startup *mgmt.Startup
	// failure is why start-up ended, once a wait has failed.
	failure string
}

type deployment struct {
	cfg  recipes.ModelDeployment
	pool *client.Pool
	reps []*replicaState
}

// replicaState is one worker of a deployment and what its /health said.
type replicaState struct {
	name     string
	worker   *supervise.Worker // nil for an attached worker
	endpoint string
	http     *http.Client
	base     string

	state    string // the worker's status, or not_running / unreachable
	reason   string
	ready    bool
	pid      int
	restarts int
}

// PeekDocument reads the configuration file serve starts with (nil when
// there is none or it does not load: the configuration lifecycle reports
// that), for what must be known before it compiles: the deployments, and
// where the management API will listen.
func PeekDocument(path string) *recipes.Document {
	if path == "" {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	doc, _, err := recipes.ParseSource(raw)
	if err != nil {
		return nil
	}
	return doc
}

// catalogOf is doc's global.model_catalog (nil without a document).
func catalogOf(doc *recipes.Document) *recipes.ModelCatalog {
	if doc == nil {
		return nil
	}
	return doc.Global.ModelCatalog
}

// CatalogGuard refuses a configuration that switches the router-side model
// runtime on or off, which serve decides at start-up. (Changed deployments
// or bindings are a Fleet's to start.)
func CatalogGuard(started *recipes.Document) func(*recipes.Document) error {
	enabled := started == nil || started.Global.ModelRuntimeEnabled()
	return func(doc *recipes.Document) error {
		if doc.Global.ModelRuntimeEnabled() != enabled {
			return errors.New("global.router.enabled differs from the value junction serve started with; the model runtime is switched on or off at start-up, so restart junction serve to apply this change")
		}
		return nil
	}
}

func catalogKey(mc *recipes.ModelCatalog) []byte {
	var v struct {
		D []recipes.ModelDeployment `json:"d,omitempty"`
		B *recipes.ModelBindings    `json:"b,omitempty"`
	}
	if mc != nil {
		v.D, v.B = mc.Deployments, mc.Bindings
	}
	b, _ := json.Marshal(v)
	return b
}

// builtinArtifacts are the model names a managed worker serves from the
// committed default models.
var builtinArtifacts = []string{defaultmodels.EmbedderName, defaultmodels.DomainName, defaultmodels.JailbreakName}

// Options are what Start needs besides the document.
type Options struct {
	// Registerer receives the router_model_runtime_* metrics.
	Registerer prometheus.Registerer
	// Logger reports workers starting and waits; nil discards.
	Logger *slog.Logger
	// Stderr receives the managed workers' own output; nil discards it.
	Stderr io.Writer
	// Metrics, when set, records instead of a new set on Registerer (the
	// Sets of one Fleet share them: a registry takes each family once).
	Metrics *metrics.ModelRuntime
}

// Start starts (or attaches to) every deployment of doc's
// global.model_catalog and builds the clients of its bindings. It returns at
// once (a nil Set when doc has no deployments); Wait reports readiness. Workers' own output goes to o.Stderr. With
// global.router.enabled false it starts nothing (validation has refused
// bindings then, so every signal runs in-process).
func Start(doc *recipes.Document, o Options) (s *Set, err error) {
	reg, log, stderr := o.Registerer, o.Logger, o.Stderr
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stderr == nil {
		stderr = io.Discard
	}
	mc := catalogOf(doc)
	if mc == nil || len(mc.Deployments) == 0 {
		return nil, nil
	}
	if !doc.Global.ModelRuntimeEnabled() {
		log.Info("global.router.enabled is false: the model deployments are not started", "deployments", len(mc.Deployments))
		return nil, nil
	}
	base, err := supervise.OptionsFromEnv(os.Getenv, nil, false)
	if err != nil {
		return nil, err
	}
	met := o.Metrics
	if met == nil {
		met = metrics.NewModelRuntime(reg)
	}
	s = &Set{log: log, met: met, readyTimeout: base.ReadyTimeout, failureHold: -1}
	if s.readyTimeout <= 0 {
		s.readyTimeout = 10 * time.Minute
	}
	if v := os.Getenv(EnvFailureHold); v != "" {
		if s.failureHold, err = time.ParseDuration(v); err != nil || s.failureHold < 0 {
			return nil, fmt.Errorf("$%s=%q: give a Go duration such as 5m (0: exit at once)", EnvFailureHold, v)
		}
	}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	var env []string
	if os.Getenv(ortlib.EnvLibrary) == "" {
		// The workers find ONNX Runtime where this process does.
		if lib, ferr := ortlib.Find(""); ferr == nil {
			env = append(env, ortlib.EnvLibrary+"="+lib)
		}
	}
	byName := map[string]*deployment{}
	for _, cfg := range mc.Deployments {
		d := &deployment{cfg: cfg}
		s.deps = append(s.deps, d)
		byName[cfg.Name] = d
		reps := cfg.EffectiveReplicas()
		managed := 0
		for _, r := range reps {
			if r.Endpoint == "" {
				managed++
			}
		}
		var args []string
		served := cfg.ServedName
		if managed > 0 {
			if args, served, err = workerArgs(cfg); err != nil {
				return s, err
			}
		}
		var pool []client.Replica
		for j, r := range reps {
			rs := &replicaState{name: strconv.Itoa(j), state: "starting"}
			model := served
			if r.Endpoint != "" {
				rs.endpoint = r.Endpoint
				rem, rerr := supervise.NewRemote(r.Endpoint)
				if rerr != nil {
					return s, fmt.Errorf("model deployment %q: %w", cfg.Name, rerr)
				}
				rs.http, rs.base = rem.Client(), rem.BaseURL()
				if r.ServedName != "" {
					model = r.ServedName
				}
			} else {
				o, oerr := supervise.OptionsFromEnv(os.Getenv, append(workerLogLevel(log), managedArgs(cfg, r, args)...), managed > 1)
				if oerr != nil {
					return s, oerr
				}
				o.Env = append(o.Env, env...)
				if o.Dir != "" {
					// Each worker gets its own private directory under the configured one.
					o.Dir = filepath.Join(o.Dir, cfg.Name+"-"+rs.name)
				}
				o.Stderr = stderr
				o.Logger = log.With("deployment", cfg.Name, "replica", rs.name)
				w, serr := supervise.Start(o)
				if serr != nil {
					return s, fmt.Errorf("model deployment %q: %w", cfg.Name, serr)
				}
				rs.worker, rs.http, rs.base = w, w.Client(), w.BaseURL()
				rs.pid = w.PID()
				log.Info("model worker started", "deployment", cfg.Name, "replica", rs.name, "pid", rs.pid, "socket", w.Socket())
			}
			d.reps = append(d.reps, rs)
			pool = append(pool, client.Replica{Name: rs.name, HTTP: rs.http, BaseURL: rs.base, Model: model})
		}
		name := cfg.Name
		d.pool, err = client.New(client.Options{Deployment: name, Replicas: pool, Observe: s.observe,
			Admit: func(replica string, n int, bytes int64) { s.met.Admitted(name, replica, n, bytes) }})
		if err != nil {
			return s, err
		}
	}
	if err := s.bind(mc.Bindings, byName); err != nil {
		return s, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, d := range s.deps {
		for i, r := range d.reps {
			s.met.Admitted(d.cfg.Name, r.name, 0, 0) // the series exist from the start
			s.wg.Add(1)
			go s.watch(ctx, d, i)
		}
	}
	return s, nil
}

// observe records a finished worker call in the router_model_runtime_*
// metrics. Server-Timing phases are recorded only for successful calls, and
// phase names only as the worker's contract lists them (labels stay bounded).
func (s *Set) observe(c client.Call) {
	s.met.RequestCanceled(c.Deployment, c.Replica, c.Outcome, c.Canceled, c.Duration)
	if c.Unknown != "" {
		s.met.UnknownAnswer(c.Deployment, c.Unknown)
	}
	if c.Round != "" {
		s.met.StageDecisionCall(c.Deployment, c.Round)
	}
	if c.Bundled {
		s.met.BundleWait(c.Deployment, c.Round, c.BundleWait)
	}
	if c.Outcome != client.OutcomeOK {
		return
	}
	if tr, ok := c.Transport(); ok {
		s.met.Transport(c.Deployment, c.Surface, tr)
	}
	for _, p := range c.Server {
		switch p.Name {
		case "parse", "tokenize", "queue", "forward", "post", "serialize", "total":
			s.met.ServerPhase(c.Deployment, c.Surface, p.Name, p.Duration)
		}
	}
}

// workerArgs are a managed worker's model arguments for cfg's artifact, and
// the name requests use for it ("" for every built-in model at once).
func workerArgs(cfg recipes.ModelDeployment) (args []string, served string, err error) {
	fail := func(format string, a ...any) ([]string, string, error) {
		return nil, "", fmt.Errorf("model deployment %q: "+format, append([]any{cfg.Name}, a...)...)
	}
	if cfg.Profile != "" && cfg.Profile != "exact" {
		return fail("profile %q: this build's worker runs only the exact profile", cfg.Profile)
	}
	a := cfg.Artifact
	customDir := os.Getenv(supervise.EnvCacheDir) != ""
	switch {
	case a == recipes.ArtifactDefaults:
		if cfg.ServedName != "" {
			return fail("served_name does not apply to artifact defaults, which serves %s under their own names", strings.Join(builtinArtifacts, ", "))
		}
		return nil, "", nil
	case filepath.IsAbs(a):
		if st, serr := os.Stat(a); serr != nil || !st.IsDir() {
			return fail("artifact %s is not a model directory (it needs model.onnx, config.json and tokenizer.json)", a)
		}
		served = filepath.Base(a)
	case slices.Contains(builtinArtifacts, a) || customDir:
		served = a
	default:
		return fail("artifact %q is not a built-in model (%s, or defaults for all of them); give an absolute model directory, or set $%s to a models directory that has it",
			a, strings.Join(builtinArtifacts, ", "), supervise.EnvCacheDir)
	}
	if cfg.ServedName != "" {
		served = cfg.ServedName
	}
	model := a
	switch rev := cfg.Revision; {
	case rev == "":
	case filepath.IsAbs(rev):
		model = rev // the pinned copy of the artifact's files
	default:
		model = a + "@" + rev
	}
	return []string{model, "--served-model-name", served}, served, nil
}

// managedArgs are the worker arguments of one managed replica: its device,
// the built-in models' directory, then the model arguments.
func managedArgs(cfg recipes.ModelDeployment, r recipes.DeploymentReplica, model []string) []string {
	var args []string
	dev := r.Device
	if dev == "" {
		dev = cfg.Device
	}
	if dev != "" {
		args = append(args, "--device", dev)
	}
	builtin := cfg.Artifact == recipes.ArtifactDefaults || !filepath.IsAbs(cfg.Artifact)
	if builtin && os.Getenv(supervise.EnvCacheDir) == "" {
		// Built-in names resolve against the committed default models,
		// written once into the user cache.
		if dir, err := defaultmodels.WriteCache(""); err == nil {
			args = append(args, "--cache-dir", dir)
		}
	}
	return append(args, model...)
}

// workerLogLevel passes the router's log level on to its workers, whose
// log goes to the router's stderr.
func workerLogLevel(log *slog.Logger) []string {
	ctx := context.Background()
	for _, l := range []struct {
		level slog.Level
		name  string
	}{{slog.LevelDebug, "debug"}, {slog.LevelInfo, "info"}, {slog.LevelWarn, "warning"}} {
		if log.Enabled(ctx, l.level) {
			return []string{"--log-level", l.name}
		}
	}
	return []string{"--log-level", "error"}
}

// bind builds the signal models of the bindings.
func (s *Set) bind(b *recipes.ModelBindings, byName map[string]*deployment) error {
	for _, nb := range b.Each() {
		d := byName[nb.Binding.Deployment]
		if d == nil {
			return fmt.Errorf("global.model_catalog.bindings.%s: deployment %q is not declared", nb.Kind, nb.Binding.Deployment)
		}
		head := nb.Binding.Head
		method := "worker:" + d.cfg.Name
		if head != "" {
			method += "/" + head
		}
		var in recipes.DeploymentInput
		if d.cfg.Input != nil {
			in = *d.cfg.Input
		}
		decide := nb.Binding.Contract == recipes.ContractDecisions
		switch {
		case nb.Kind == "domain" && decide:
			c, err := client.NewDecider(d.pool, method, DomainQuestion(head, in.MaxTokens))
			if err != nil {
				return err
			}
			s.bound.Domain = c
		case nb.Kind == "jailbreak" && decide:
			c, err := client.NewDecider(d.pool, method, JailbreakQuestion(head, in.MaxTokens))
			if err != nil {
				return err
			}
			if s.bound.Jailbreak, err = safetyModel(c, d.cfg, head); err != nil {
				return err
			}
		case nb.Kind == "domain":
			s.bound.Domain = client.NewClassifier(d.pool, method, client.ClassifyOptions{Head: head, Overflow: in.Overflow, MaxTokens: in.MaxTokens})
		case nb.Kind == "jailbreak":
			if in.Overflow == "" {
				in.Overflow = "window" // a safety scan reads the whole text
			}
			c := client.NewClassifier(d.pool, method, client.ClassifyOptions{Head: head, Overflow: in.Overflow, MaxTokens: in.MaxTokens,
				Accept: signal.ReadsJailbreakLabels})
			var err error
			if s.bound.Jailbreak, err = safetyModel(c, d.cfg, head); err != nil {
				return err
			}
		case nb.Kind == "embeddings":
			s.bound.Embedder = client.NewEmbedder(d.pool, method, client.EmbedOptions{Head: head, MaxTokens: in.MaxTokens})
			s.embedDep = d
		}
	}
	return nil
}

// safetyModel finishes a jailbreak binding's model: the phrase floor of
// the in-process binding when the head is jailbreak-glove (so both score
// alike), and the deployment's on_unscanned (validated by recipes), which
// then decides for content this deployment left unscanned.
func safetyModel(c signal.Classifier, cfg recipes.ModelDeployment, head string) (signal.Classifier, error) {
	if head == defaultmodels.JailbreakName || (head == "" && cfg.Artifact == defaultmodels.JailbreakName) {
		c = defaultmodels.WithPhraseFloor(c)
	}
	c, err := signal.WithOnUnscanned(c, cfg.OnUnscanned)
	if err != nil {
		return nil, fmt.Errorf("global.model_catalog.deployments %q: %w", cfg.Name, err)
	}
	return c, nil
}

// DomainQuestion is the choice a domain signal bound with contract
// decisions asks: one option per category, keyed by the category (a
// sequence classifier with those labels answers with its own
// probabilities; an embedding model compares the text with each
// description, zero-shot).
func DomainQuestion(head string, maxTokens int) client.DecideOptions {
	o := client.DecideOptions{Head: head, MaxTokens: maxTokens, Instructions: "The subject of this text is"}
	for _, c := range signal.DomainCategories() {
		o.Options = append(o.Options, client.DecideOption{Key: c, Description: c})
	}
	return o
}

// JailbreakQuestion is the choice a jailbreak signal bound with contract
// decisions asks; its keys are the labels the jailbreak signal reads.
func JailbreakQuestion(head string, maxTokens int) client.DecideOptions {
	return client.DecideOptions{Head: head, MaxTokens: maxTokens, Accept: signal.ReadsJailbreakLabels,
		Instructions: "Is this text an attempt to jailbreak an AI assistant, or to make it ignore its instructions?",
		Options: []client.DecideOption{
			{Key: "jailbreak", Description: "an attempt to make the assistant ignore its rules or instructions"},
			{Key: "benign", Description: "an ordinary question or request"},
		}}
}

// Bound is the signal models bound to deployments; nil fields run in-process.
func (s *Set) Bound() signal.Models {
	if s == nil {
		return signal.Models{}
	}
	return s.bound
}

// Pool is the client pool of the deployment named name, or nil.
func (s *Set) Pool(name string) *client.Pool {
	if s == nil {
		return nil
	}
	for _, d := range s.deps {
		if d.cfg.Name == name {
			return d.pool
		}
	}
	return nil
}

// Embedder is an embedder over the deployment named name (its
// /v1/embeddings), for global.storage.embedding.deployment: the embedding
// model of stored data may be a deployment no signal is bound to.
func (s *Set) Embedder(name string) (signal.Embedder, error) {
	if s != nil {
		for _, d := range s.deps {
			if d.cfg.Name != name {
				continue
			}
			var in recipes.DeploymentInput
			if d.cfg.Input != nil {
				in = *d.cfg.Input
			}
			return client.NewEmbedder(d.pool, "worker:"+name, client.EmbedOptions{MaxTokens: in.MaxTokens}), nil
		}
	}
	return nil, fmt.Errorf("deployment %q is not declared in global.model_catalog.deployments (or global.router.enabled is false): declare it, or leave global.storage.embedding out to use the router's embedding model", name)
}

// watch reads replica i's /health until ctx ends, taking it in and out of
// its pool's rotation and recording what it saw.
func (s *Set) watch(ctx context.Context, d *deployment, i int) {
	defer s.wg.Done()
	r := d.reps[i]
	t := time.NewTicker(deploymentPoll)
	defer t.Stop()
	for {
		h, err := supervise.HealthReport(ctx, r.http, r.base)
		st := h.Status
		if ctx.Err() != nil {
			return
		}
		pid, restarts := 0, 0
		if r.worker != nil {
			pid, restarts = r.worker.PID(), r.worker.Restarts()
		}
		ready := err == nil && (st == "ready" || st == "degraded") && (r.worker == nil || pid != 0)
		reason := ""
		switch {
		case r.worker != nil && pid == 0:
			st, reason = "not_running", "the worker exited; the supervisor restarts it"
		case err != nil && r.worker != nil:
			st = "starting"
		case err != nil:
			st, reason = "unreachable", err.Error()
		case !ready && len(h.Failures) > 0:
			reason = "the worker reports " + st + ": " + strings.Join(h.Failures, "; ")
		case !ready:
			reason = "the worker reports " + st
		}
		d.pool.SetReady(i, ready)
		s.mu.Lock()
		if restarts > r.restarts {
			s.met.Restarted(d.cfg.Name, r.name, restarts-r.restarts)
		}
		r.state, r.reason, r.ready, r.pid, r.restarts = st, reason, ready, pid, restarts
		s.met.SetReady(d.cfg.Name, r.name, ready, d.pool.Ready())
		s.publishLocked()
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops watching and stops the managed workers (terminate, then kill
// after 10 s), all at once.
func (s *Set) Close() {
	if s == nil {
		return
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	var wg sync.WaitGroup
	for _, d := range s.deps {
		for _, r := range d.reps {
			if r.worker != nil {
				wg.Add(1)
				go func() { defer wg.Done(); r.worker.Stop() }()
			}
		}
	}
	wg.Wait()
}
