package junction

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/gateway"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/pluginsys"
	"github.com/junction-router/junction/recipes"
)

// openConfig loads the persisted configuration (path, or source)
// through the management lifecycle, so that serve starts on the last
// activated version. Each generation holds a lease on the in-process models
// and language detector its signals use, taken when it compiles (so a
// change that first needs a model loads it then, and its activation answers
// once it is loaded) and given back grace after a newer generation replaced
// it (requests still routing on it finish first); a model no generation
// holds is closed. Generations share the plugin runtime; the upstream pools
// adopt each activated document. guard refuses documents serve cannot apply
// (the model runtime switched on or off); activated is told of each document
// that starts serving (after the upstream pools adopt it). A document whose
// model deployments or bindings differ from the serving ones compiles over
// the fleet's Set for them, started and ready before the compile returns,
// so the previous configuration serves until then; the generation holds
// that Set like its models.
func openConfig(ctx context.Context, path string, source []byte, historyLimit int, ups *gateway.Upstreams, plugins *pluginsys.System, local *deploy.Loader, fleet *deploy.Fleet, grace time.Duration, guard func(*recipes.Document) error, activated func(*recipes.Document), log *slog.Logger) (*mgmt.Config, error) {
	if grace <= 0 {
		grace = defaultModelGrace
	}
	leases := &generationLeases{grace: grace, pending: map[*engine.Generation]*deploy.Lease{}}
	var sets sync.Map // *engine.Generation → *deploy.Set it was compiled over
	compile := func(ctx context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		if err := guard(doc); err != nil {
			return nil, err
		}
		set, releaseSet, err := fleet.Acquire(ctx, doc)
		if err != nil {
			return nil, err
		}
		lease, err := local.AcquireBound(ctx, deploy.NeedOf(doc), set.Bound())
		if err != nil {
			releaseSet()
			return nil, err
		}
		var compiled *engine.Generation
		lease.OnRelease(func() {
			if compiled != nil {
				sets.Delete(compiled)
			}
			releaseSet()
		})
		// The modules of the plugin types doc adds are loaded now, so that
		// the engine checks their configurations against their schemas.
		if err := plugins.Prepare(ctx, doc); err != nil {
			lease.Release()
			return nil, err
		}
		gen, err := engine.Compile(doc, hash, engine.Options{Health: ups.Health(), Plugins: plugins, Models: lease.Models, Language: lease.Language})
		if err != nil {
			lease.Release()
			return nil, err
		}
		compiled = gen
		sets.Store(gen, set)
		leases.compiled(gen, lease)
		return gen, nil
	}
	return mgmt.OpenConfig(ctx, mgmt.ConfigOptions{
		Path: path, Builtin: source, HistoryLimit: historyLimit, Compile: compile,
		OnActivate: func(gen *engine.Generation) {
			ups.Retain(gen.Document())
			if set, ok := sets.Load(gen); ok {
				fleet.Activated(set.(*deploy.Set))
			}
			activated(gen.Document())
			leases.activated(gen)
		},
		Logf:   func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
		Logger: log,
	})
}

// defaultModelGrace is how long a replaced generation keeps its models: a
// request routes on the generation it started with, and routing (its
// signal budget) is over well within this.
const defaultModelGrace = 15 * time.Second

// pendingLimit is how long a generation that was compiled but not activated
// (a validation, a preview, an activation that failed after compiling)
// keeps its models.
const pendingLimit = time.Minute

// generationLeases tracks which generation holds which model lease: the
// serving one, those compiled and not (yet) activated, and the replaced
// ones until their grace ends.
type generationLeases struct {
	grace   time.Duration
	mu      sync.Mutex
	active  *engine.Generation
	lease   *deploy.Lease
	pending map[*engine.Generation]*deploy.Lease
}

func (g *generationLeases) compiled(gen *engine.Generation, l *deploy.Lease) {
	g.mu.Lock()
	g.pending[gen] = l
	g.mu.Unlock()
	time.AfterFunc(pendingLimit, func() {
		g.mu.Lock()
		l, ok := g.pending[gen]
		delete(g.pending, gen)
		g.mu.Unlock()
		if ok {
			l.Release()
		}
	})
}

func (g *generationLeases) activated(gen *engine.Generation) {
	g.mu.Lock()
	l, ok := g.pending[gen]
	if !ok || gen == g.active {
		g.mu.Unlock()
		return
	}
	delete(g.pending, gen)
	old := g.lease
	g.active, g.lease = gen, l
	g.mu.Unlock()
	if old != nil {
		time.AfterFunc(g.grace, old.Release)
	}
}

// managementAddr is where the management API listens, or "" when it is off.
// The lifecycle learns it, so that no later change can turn authentication
// off while the API listens beyond loopback.
func managementAddr(addr string, allowRemote bool, conf *mgmt.Config) (string, error) {
	doc := conf.Runtime().Current().Document()
	if addr == "off" {
		return "", nil
	}
	if addr == "" {
		m := doc.Global.Services.ManagementAPI
		addr = net.JoinHostPort(m.Address, strconv.Itoa(m.Port))
	}
	if err := mgmt.ListenAddr(addr, doc.Global.Services.ManagementAPI.Auth.Mode, allowRemote); err != nil {
		return "", err
	}
	conf.GuardListener(addr, allowRemote)
	return addr, nil
}

// interimStatusAddr is where the management API will listen, when an
// interim start-up status may be served there before it does: on an address
// the management API itself would accept (the interim listener checks
// bearer tokens as it does).
func interimStatusAddr(addr string, allowRemote bool, doc *recipes.Document) string {
	if doc == nil || addr == "off" {
		return ""
	}
	m := doc.Global.Services.ManagementAPI
	if addr == "" {
		addr = net.JoinHostPort(m.Address, strconv.Itoa(m.Port))
	}
	if mgmt.ListenAddr(addr, m.Auth.Mode, allowRemote) != nil {
		return ""
	}
	return addr
}

func hasRecipe(rs []recipes.Recipe, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}

// describeMethods says which implementation backs each model-backed signal
// kind, so an operator sees at start-up when lexical fallbacks are in use.
func describeMethods(gen *engine.Generation) string {
	doc := gen.Document()
	var parts []string
	for _, r := range doc.Recipes {
		res, err := gen.Route(context.Background(), r.Name, &engine.Request{Model: engine.ModelMoM})
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, s := range res.Signals {
			k := s.Kind + "=" + s.Method
			if !seen[k] {
				seen[k] = true
				parts = append(parts, r.Name+"/"+k)
			}
		}
	}
	return strings.Join(parts, " ")
}
