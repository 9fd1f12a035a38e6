package junction

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/gateway"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/pluginsys"
	"github.com/junction-router/junction/recipes"
)

// openConfig loads the persisted configuration (path, or source)
// through the management lifecycle, so that serve starts on the last
// activated version. Generations share the model bindings (loaded once) and
// the plugin runtime; the upstream pools adopt each activated document.
// guard refuses documents serve cannot apply (changed model deployments);
// activated is told of each document that starts serving (after the
// upstream pools adopt it).
func openConfig(ctx context.Context, path string, source []byte, historyLimit int, ups *gateway.Upstreams, plugins *pluginsys.System, models signal.Models, guard func(*recipes.Document) error, activated func(*recipes.Document), log *slog.Logger) (*mgmt.Config, error) {
	// Every generation shares one set of models (the default ONNX models, or
	// the lexical fallbacks built here once), so a reload loads none again.
	if models.Domain == nil {
		domain, err := signal.LexicalDomain()
		if err != nil {
			return nil, err
		}
		models.Domain = domain
	}
	if models.Jailbreak == nil {
		jailbreak, err := signal.LexicalJailbreak()
		if err != nil {
			return nil, err
		}
		models.Jailbreak = jailbreak
	}
	if models.Embedder == nil {
		models.Embedder = signal.HashedEmbedder()
	}
	// The language detector is kept while it knows every language the
	// document names, so a reload does not reload lingua's models.
	var lang *signal.LanguageDetector
	var langMu sync.Mutex
	detector := func(doc *recipes.Document) (*signal.LanguageDetector, error) {
		var codes []string
		for _, r := range doc.Recipes {
			for _, l := range r.Signals.Language {
				codes = append(codes, l.Languages...)
			}
		}
		if len(codes) == 0 {
			return nil, nil
		}
		langMu.Lock()
		defer langMu.Unlock()
		for _, c := range codes {
			if lang == nil || !lang.Knows(c) {
				d, err := signal.NewLanguageDetector(codes...)
				if err != nil {
					return nil, err
				}
				lang = d
				break
			}
		}
		return lang, nil
	}
	compile := func(ctx context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		if err := guard(doc); err != nil {
			return nil, err
		}
		det, err := detector(doc)
		if err != nil {
			return nil, err
		}
		// The modules of the plugin types doc adds are loaded now, so that
		// the engine checks their configurations against their schemas.
		if err := plugins.Prepare(ctx, doc); err != nil {
			return nil, err
		}
		return engine.Compile(doc, hash, engine.Options{Health: ups.Health(), Plugins: plugins, Models: models, Language: det})
	}
	return mgmt.OpenConfig(ctx, mgmt.ConfigOptions{
		Path: path, Builtin: source, HistoryLimit: historyLimit, Compile: compile,
		OnActivate: func(gen *engine.Generation) { ups.Retain(gen.Document()); activated(gen.Document()) },
		Logf:       func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
	})
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
