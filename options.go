package junction

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/recipes"
)

// Values of Options.SignalModels.
const (
	// SignalModelsONNX runs the default domain, jailbreak and embedding
	// models through ONNX Runtime, and the lexical fallbacks when it is
	// missing.
	SignalModelsONNX = deploy.ModelsONNX
	// SignalModelsLexical runs the lexical fallbacks only.
	SignalModelsLexical = deploy.ModelsLexical
)

// Options configure a Server. The zero value serves the built-in demo
// configuration on the addresses it names (gateway 127.0.0.1:8801, ext_proc
// 127.0.0.1:50051, management 127.0.0.1:8080), as `junction serve` does.
type Options struct {
	// ConfigPath is the configuration file (YAML or JSON). Changes through
	// the management API rewrite it and keep history beside it. Leave it
	// empty to serve Document, or the built-in configuration.
	ConfigPath string
	// Document is a configuration already loaded, served when ConfigPath is
	// empty; changes are kept in memory only.
	Document *recipes.Document
	// Model shapes the model deployment named "default" as the model
	// argument and flags of `junction serve MODEL` do.
	Model ModelOptions

	// ListenerAddrs overrides the host:port of the configuration's gateway
	// listeners, by listener name (127.0.0.1:0 picks a free port; see
	// GatewayAddr).
	ListenerAddrs map[string]string
	// DisableGateway serves no gateway listener (Envoy is the public entry).
	DisableGateway bool
	// DisableExtproc serves no Envoy ext_proc hook.
	DisableExtproc bool
	// ExtprocAddr overrides global.extproc's host:port.
	ExtprocAddr string
	// ExtprocRecipe is the recipe ext_proc routes with; the configuration's
	// default recipe when empty.
	ExtprocRecipe string
	// ExtprocTLS serves ext_proc over TLS when CertFile is set.
	ExtprocTLS TLSFiles
	// ManagementAddr is the management API's host:port:
	// global.services.management_api when empty, "off" to serve none.
	ManagementAddr string
	// ManagementAllowRemote lets the management API listen beyond loopback
	// without bearer authentication.
	ManagementAllowRemote bool
	// MetricsAddr overrides global.services.observability.metrics' host:port.
	MetricsAddr string
	// ConfigHistoryLimit is how many configuration versions are kept; 0
	// keeps the default (mgmt's DefaultHistoryLimit).
	ConfigHistoryLimit int
	// ConfigWatch is how often ConfigPath is checked for hand edits (applied
	// like an API change); 0 does not watch.
	ConfigWatch time.Duration

	// SignalModels is SignalModelsONNX (when empty) or SignalModelsLexical.
	SignalModels string
	// PluginDir holds third-party plugin modules (*.wasm) to load.
	PluginDir string
	// DataDir is the directory of stored data (files, vector stores,
	// memories in an embedded SQLite database), created 0700 on first use:
	// global.storage.dir when empty, else recipes.DefaultStorageDir
	// (./junction-data, relative to the working directory). It is read at
	// start-up only.
	DataDir string
	// PluginCacheDir keeps compiled plugin modules across restarts: the
	// user cache directory's junction/plugins when empty, "off" for memory
	// only.
	PluginCacheDir string

	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// WorkerStderr receives the managed model workers' own output; nil
	// sends it to this process's standard error.
	WorkerStderr io.Writer
	// Registry receives the metrics, and /metrics serves what it gathers;
	// nil makes one with the Go and process collectors.
	Registry *prometheus.Registry
	// Version is reported by the management API's /health.
	Version string

	// modelGrace is how long a replaced generation keeps its models (0:
	// defaultModelGrace); tests shorten it.
	modelGrace time.Duration
}

// TLSFiles are the PEM files of a TLS listener.
type TLSFiles struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, requires client certificates signed by these
	// CAs (mutual TLS).
	ClientCAFile string
}

// check says what to fix in o.
func (o *Options) check() error {
	var errs []error
	if o.ConfigPath != "" && o.Document != nil {
		errs = append(errs, errors.New("Options.ConfigPath and Options.Document are both set; give one"))
	}
	if o.DisableGateway && o.DisableExtproc {
		errs = append(errs, errors.New("Options.DisableGateway and Options.DisableExtproc leave nothing to serve; enable one"))
	}
	if o.ConfigHistoryLimit < 0 {
		errs = append(errs, fmt.Errorf("Options.ConfigHistoryLimit %d: give at least 1, or 0 for the default", o.ConfigHistoryLimit))
	}
	if o.ConfigWatch < 0 {
		errs = append(errs, fmt.Errorf("Options.ConfigWatch %s: give a positive interval, or 0 not to watch", o.ConfigWatch))
	}
	switch o.SignalModels {
	case "", SignalModelsONNX, SignalModelsLexical:
	default:
		errs = append(errs, fmt.Errorf("--signal-models %q: use %s or %s", o.SignalModels, SignalModelsONNX, SignalModelsLexical))
	}
	return errors.Join(errs...)
}
