package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/gateway"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/pluginsys"
	"github.com/junction-router/junction/recipes"
)

// managementFlags are serve's management API options.
type managementFlags struct {
	addr         *string
	allowRemote  *bool
	historyLimit *int
	watch        *time.Duration
}

func addManagementFlags(fs *flag.FlagSet) managementFlags {
	return managementFlags{
		addr: fs.String("management", "", "management API address (host:port); global.services.management_api when empty (127.0.0.1:8080 by default); off to disable"),
		allowRemote: fs.Bool("management-allow-remote", false,
			"let the management API listen on a non-loopback address without bearer authentication (only behind a private network or tunnel)"),
		historyLimit: fs.Int("config-history-limit", mgmt.DefaultHistoryLimit, "configuration versions kept beside the configuration file"),
		watch:        fs.Duration("config-watch", 2*time.Second, "how often to look for hand edits of the configuration file (applied like an API change); 0 disables"),
	}
}

// openConfig loads the persisted configuration (path, or the built-in one)
// through the management lifecycle, so that serve starts on the last
// activated version. Generations share the model bindings (loaded once) and
// the plugin runtime; the upstream pools adopt each activated document.
// guard refuses documents serve cannot apply (changed model deployments).
func openConfig(ctx context.Context, path string, mf managementFlags, ups *gateway.Upstreams, plugins *pluginsys.System, models signal.Models, guard func(*recipes.Document) error, log *slog.Logger) (*mgmt.Config, error) {
	if *mf.historyLimit < 1 {
		return nil, fmt.Errorf("--config-history-limit must be at least 1 (got %d)", *mf.historyLimit)
	}
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
		Path: path, Builtin: recipes.BuiltinYAML(), HistoryLimit: *mf.historyLimit, Compile: compile,
		OnActivate: func(gen *engine.Generation) { ups.Retain(gen.Document()) },
		Logf:       func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
	})
}

// managementAddr is where the management API listens, or "" when it is off.
// The lifecycle learns it, so that no later change can turn authentication
// off while the API listens beyond loopback.
func managementAddr(mf managementFlags, conf *mgmt.Config) (string, error) {
	doc := conf.Runtime().Current().Document()
	addr := *mf.addr
	if addr == "off" {
		return "", nil
	}
	if addr == "" {
		m := doc.Global.Services.ManagementAPI
		addr = net.JoinHostPort(m.Address, strconv.Itoa(m.Port))
	}
	if err := mgmt.ListenAddr(addr, doc.Global.Services.ManagementAPI.Auth.Mode, *mf.allowRemote); err != nil {
		return "", err
	}
	conf.GuardListener(addr, *mf.allowRemote)
	return addr, nil
}
