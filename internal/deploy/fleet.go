package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// Fleet runs the deployment Sets of the configurations serve compiles, so
// that a change of global.model_catalog (deployments or bindings) applies
// live: the previous configuration serves until the new deployments are
// ready (spec 000: "reload with new models").
//
// The Set serve started with stays until serve stops (the native API,
// stored data and the on-demand models were built over it). A configuration
// whose catalog differs gets a Set of its own, started when it first
// compiles; the compile returns once every deployment of it is ready (or
// fails with the reason, and the previous configuration keeps serving). A
// Set other than the first is stopped once no compiled generation holds it.
// Configurations with the same catalog share one Set. Checks that only
// validate (mgmt.CheckOnly) start nothing: they use a running Set when
// there is one, else the in-process models, after checking the catalog.
type Fleet struct {
	o        Options
	first    *Set
	firstKey string
	apply    func(*recipes.Document) (*recipes.Document, error)

	mu      sync.Mutex
	sets    map[string]*fleetSet
	startup *mgmt.Startup
	serving *Set
}

type fleetSet struct {
	set  *Set
	refs int
	done chan struct{} // closed once started and ready, or failed (err)
	err  error
}

// NewFleet returns a fleet around first, the Set serve started for
// started's catalog (nil when it has no deployments). apply (nil: none)
// turns a document into the one whose deployments run, as it did started
// (serve's model options add a deployment to every version).
func NewFleet(first *Set, started *recipes.Document, o Options, apply func(*recipes.Document) (*recipes.Document, error)) *Fleet {
	if o.Metrics == nil && first != nil {
		o.Metrics = first.met
	}
	if apply == nil {
		apply = func(d *recipes.Document) (*recipes.Document, error) { return d, nil }
	}
	return &Fleet{o: o, first: first, firstKey: string(catalogKey(catalogOf(started))), apply: apply, sets: map[string]*fleetSet{}, serving: first}
}

// Acquire returns the Set that serves doc's catalog and a release for the
// compiled generation's hold on it (call it once, when the generation is
// dropped). A new catalog's Set is started here and Acquire returns once
// all its deployments are ready; ctx bounds the wait.
func (f *Fleet) Acquire(ctx context.Context, doc *recipes.Document) (*Set, func(), error) {
	noop := func() {}
	if f == nil {
		return nil, noop, nil
	}
	doc, err := f.apply(doc)
	if err != nil {
		return nil, noop, err
	}
	mc := catalogOf(doc)
	key := string(catalogKey(mc))
	if key == f.firstKey {
		return f.first, noop, nil
	}
	if mc == nil || len(mc.Deployments) == 0 || !doc.Global.ModelRuntimeEnabled() {
		return nil, noop, nil
	}
	f.mu.Lock()
	fs := f.sets[key]
	if fs == nil && mgmt.CheckOnly(ctx) {
		f.mu.Unlock()
		return nil, noop, CheckCatalog(doc)
	}
	starting := fs == nil
	if starting {
		fs = &fleetSet{done: make(chan struct{})}
		f.sets[key] = fs
		if f.o.Metrics == nil {
			f.o.Metrics = metrics.NewModelRuntime(f.o.Registerer)
		}
	}
	fs.refs++
	o := f.o
	f.mu.Unlock()
	release := sync.OnceFunc(func() { f.release(key, fs) })
	if starting {
		go f.start(doc, o, fs)
	}
	select {
	case <-fs.done:
	case <-ctx.Done():
		release()
		return nil, noop, fmt.Errorf("waiting for the new model deployments to be ready: %w", ctx.Err())
	}
	if fs.err != nil {
		release()
		return nil, noop, fs.err
	}
	return fs.set, release, nil
}

// start runs a new catalog's Set to readiness, independent of the compile
// that asked for it: a second compile of the same catalog waits for the
// same start.
func (f *Fleet) start(doc *recipes.Document, o Options, fs *fleetSet) {
	defer close(fs.done)
	set, err := Start(doc, o)
	if err == nil {
		set.log.Info("starting the model deployments of a changed configuration; the previous one serves until they are ready", "deployments", len(set.deps))
		// Set.Wait is bounded by the ready timeout and ends early when a
		// deployment settles as failed.
		err = set.Wait(context.Background())
	}
	if err != nil {
		set.Close()
		fs.err = fmt.Errorf("the changed global.model_catalog did not start: %w", err)
		return
	}
	fs.set = set
}

func (f *Fleet) release(key string, fs *fleetSet) {
	f.mu.Lock()
	fs.refs--
	if fs.refs > 0 || f.sets[key] != fs {
		f.mu.Unlock()
		return
	}
	delete(f.sets, key)
	f.mu.Unlock()
	go func() {
		<-fs.done
		if fs.set != nil {
			fs.set.log.Info("stopping model deployments no configuration uses", "deployments", len(fs.set.deps))
			fs.set.Close()
		}
	}()
}

// Report makes st show the serving configuration's deployments.
func (f *Fleet) Report(st *mgmt.Startup) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.startup = st
	serving := f.serving
	f.mu.Unlock()
	if serving != nil {
		serving.Report(st)
	} else if st != nil {
		st.SetDeployments(nil)
	}
}

// Activated records that a generation compiled over set (Acquire's) serves:
// /startup-status lists set's deployments from now on.
func (f *Fleet) Activated(set *Set) {
	if f == nil {
		return
	}
	f.mu.Lock()
	old, st := f.serving, f.startup
	f.serving = set
	f.mu.Unlock()
	if old == set || st == nil {
		return
	}
	if old != nil {
		old.Report(nil)
	}
	f.Report(st)
}

// Pool is the client pool of the serving configuration's deployment named
// name, or nil when it has none of that name.
func (f *Fleet) Pool(name string) *client.Pool {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	s := f.serving
	f.mu.Unlock()
	return s.Pool(name)
}

// Close stops the Sets started for changed catalogs (not the first, which
// serve closes).
func (f *Fleet) Close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	sets := f.sets
	f.sets = map[string]*fleetSet{}
	f.mu.Unlock()
	for _, fs := range sets {
		<-fs.done
		fs.set.Close()
	}
}

// CheckCatalog checks what starting doc's deployments would check first,
// without starting them: every managed deployment's artifact and profile,
// and that each binding names a declared deployment.
func CheckCatalog(doc *recipes.Document) error {
	mc := catalogOf(doc)
	if mc == nil {
		return nil
	}
	var errs []error
	names := map[string]bool{}
	for _, d := range mc.Deployments {
		names[d.Name] = true
		managed := false
		for _, r := range d.EffectiveReplicas() {
			managed = managed || r.Endpoint == ""
		}
		if managed {
			if _, _, err := workerArgs(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, nb := range mc.Bindings.Each() {
		if !names[nb.Binding.Deployment] {
			errs = append(errs, fmt.Errorf("global.model_catalog.bindings.%s: deployment %q is not declared", nb.Kind, nb.Binding.Deployment))
		}
	}
	return errors.Join(errs...)
}
