package mgmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/recipes"
)

// DefaultHistoryLimit is how many configuration versions are kept (the
// spec's last 10; serve's --config-history-limit changes it).
const DefaultHistoryLimit = 10

// Activation states (activation_status).
const (
	StatusActive  = "active"
	StatusPending = "pending"
	StatusFailed  = "failed"
	StatusUnknown = "unknown"
)

// CompileFunc builds a generation from a validated document. The serve
// command passes one that shares models, health and plugin runtime across
// generations, so an activation rebuilds only what the document changed.
type CompileFunc func(ctx context.Context, doc *recipes.Document, hash string) (*engine.Generation, error)

// ConfigOptions configure the configuration lifecycle.
type ConfigOptions struct {
	// Path is the configuration file given to serve; mutations rewrite it
	// atomically and keep history in Path + ".history/". Empty keeps the
	// document (Builtin) and its history in memory only.
	Path string
	// Builtin is the source document when Path is empty.
	Builtin []byte
	// HistoryLimit is how many versions to keep; 0 means DefaultHistoryLimit.
	HistoryLimit int
	Compile      CompileFunc
	// OnActivate runs after a generation starts serving (upstream pools adopt
	// its providers, for instance).
	OnActivate func(*engine.Generation)
	// Audit receives config.activate, config.reject and config.supersede.
	Audit *Audit
	// Logf reports what an operator must know at start (a fallback to the
	// last activated version). Nil discards.
	Logf func(format string, args ...any)
	// Logger receives one record per hand edit of the file CheckFile sees: applied, rejected (with the
	// reasons, secret values withheld), superseded or unchanged, with the old and new hashes and versions.
	// Nil discards.
	Logger *slog.Logger
}

// Activation describes one activation attempt.
type Activation struct {
	Attempt      int64    `json:"attempt"`
	DocumentHash string   `json:"document_hash"`
	Source       string   `json:"source"`
	Stage        string   `json:"stage"`
	Result       string   `json:"result"`
	StartedAt    string   `json:"started_at"`
	FinishedAt   string   `json:"finished_at,omitempty"`
	Reasons      []Reason `json:"reasons,omitempty"`
}

// Config is the configuration lifecycle: the persisted document, its
// history, and the activation of generations into the runtime. Mutations are
// serialised; each one validates, persists, then activates, and a failed
// activation leaves the previous generation serving.
type Config struct {
	opts ConfigOptions
	rt   *engine.Runtime
	auth atomic.Pointer[authenticator]

	mu   sync.Mutex     // serialises mutations: If-Match check to persist
	act  sync.Mutex     // serialises activations
	bg   sync.WaitGroup // activations running after their request answered
	hist *history
	yaml bool // write the file back as YAML

	st sync.RWMutex // guards the fields below
	// the persisted document
	source     []byte
	sourceHash string
	doc        *recipes.Document
	version    int64 // its history version
	attempt    int64
	genHash    string
	status     string
	activation *Activation
	rejection  *Activation
	cfgVersion int64  // serving config_version
	activeVer  int64  // serving history version
	activeHash string // generated hash of the serving document
	// fileDigest is the SHA-256 of the file's bytes as last read or written: a change of bytes that leaves the
	// document as it is (a comment) is logged as unchanged once, and the router's own rewrite is not an edit.
	fileDigest string
	// where the management API listens (GuardListener)
	bindAddr    string
	allowRemote bool
}

// OpenConfig loads the persisted document and activates it. When it does not
// compile, the last version that was active (from the history) serves
// instead and the rejection is reported, so a restart comes back on the last
// activated version.
func OpenConfig(ctx context.Context, opts ConfigOptions) (*Config, error) {
	if opts.HistoryLimit <= 0 {
		opts.HistoryLimit = DefaultHistoryLimit
	}
	if opts.Compile == nil {
		return nil, errors.New("mgmt: ConfigOptions.Compile is required")
	}
	if opts.Audit == nil {
		opts.Audit = newAudit(0)
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Config{opts: opts, status: StatusUnknown}
	var raw []byte
	dir := ""
	if opts.Path != "" {
		b, err := os.ReadFile(opts.Path)
		if err != nil {
			return nil, err
		}
		raw = b
		c.fileDigest = rawDigest(b)
		dir = opts.Path + ".history"
		c.yaml = !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{"))
	} else {
		raw = opts.Builtin
	}
	h, err := openHistory(dir, opts.HistoryLimit)
	if err != nil {
		return nil, err
	}
	c.hist = h
	doc, canon, perr := recipes.ParseSource(raw)
	if perr != nil && opts.Path != "" {
		perr = fmt.Errorf("%s:\n%w", opts.Path, perr)
	}
	var entry HistoryEntry
	if perr == nil {
		hash := recipes.HashBytes(canon)
		if es := h.list(1); len(es) > 0 && es[0].Hash == hash {
			entry = es[0]
		} else {
			entry = HistoryEntry{Version: time.Now().UnixMicro(), Timestamp: now(), Source: "file", Filename: opts.Path, Hash: hash, Status: StatusPending}
			if entry, err = h.add(entry, canon); err != nil {
				return nil, err
			}
		}
		c.setPersisted(canon, hash, doc, entry.Version)
		c.attempt = 1
		act := &Activation{Attempt: 1, DocumentHash: hash, Source: "file", StartedAt: now()}
		gen, auth, stage, aerr := c.prepare(ctx, doc, hash)
		if aerr == nil {
			cv := entry.ConfigVersion
			if cv == 0 {
				cv = h.maxConfigVersion() + 1
			}
			c.rt = engine.NewRuntime(gen)
			c.finishActivation(act, entry.Version, cv, gen, auth, who{})
			return c, nil
		}
		c.reject(act, entry.Version, stage, aerr, who{})
		perr = aerr
	}
	// The persisted document does not load: serve the last activated version.
	for _, e := range h.list(0) {
		if !e.Active && e.Status != StatusActive {
			continue
		}
		b, err := h.document(e.Version)
		if err != nil {
			continue
		}
		d, _, err := recipes.ParseSource(b)
		if err != nil {
			continue
		}
		gen, auth, _, err := c.prepare(ctx, d, e.Hash)
		if err != nil {
			continue
		}
		opts.Logf("the configuration %s does not load (%v); serving the last activated version %d (config_version %d) instead", opts.Path, perr, e.Version, e.ConfigVersion)
		if c.doc == nil { // the file itself did not parse: the recorded version is what is persisted
			c.setPersisted(b, e.Hash, d, e.Version)
			c.attempt = 1
			act := &Activation{Attempt: 1, DocumentHash: hashOrEmpty(raw), Source: "file", StartedAt: now()}
			c.reject(act, 0, "parse", perr, who{})
		}
		c.rt = engine.NewRuntime(gen)
		c.auth.Store(auth)
		c.cfgVersion, c.activeVer, c.activeHash = e.ConfigVersion, e.Version, recipes.Hash(d)
		_ = h.markActive(e.Version, e.ConfigVersion)
		if opts.OnActivate != nil {
			opts.OnActivate(gen)
		}
		return c, nil
	}
	return nil, perr
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func (c *Config) setPersisted(canon []byte, hash string, doc *recipes.Document, version int64) {
	c.st.Lock()
	defer c.st.Unlock()
	c.source, c.sourceHash, c.doc, c.version = canon, hash, doc, version
	c.genHash = recipes.Hash(doc)
}

// Runtime is the runtime the data plane serves from.
func (c *Config) Runtime() *engine.Runtime { return c.rt }

// Audit is the audit log activations are recorded in.
func (c *Config) Audit() *Audit { return c.opts.Audit }

func (c *Config) authenticator() *authenticator { return c.auth.Load() }

// ETag is the persisted document's entity tag: its quoted source hash.
func (c *Config) ETag() string {
	c.st.RLock()
	defer c.st.RUnlock()
	return etagOf(c.sourceHash)
}

func etagOf(hash string) string { return `"` + hash + `"` }

// prepare runs the compile and warm stages.
func (c *Config) prepare(ctx context.Context, doc *recipes.Document, hash string) (*engine.Generation, *authenticator, string, error) {
	gen, err := c.opts.Compile(ctx, doc, hash)
	if err != nil {
		return nil, nil, "compile", err
	}
	auth, err := newAuthenticator(doc)
	if err != nil {
		return nil, nil, "warm", err
	}
	return gen, auth, "", nil
}

// who is the management request behind a change, for the audit log.
type who struct {
	principal, role, requestID string
}

func (c *Config) finishActivation(act *Activation, version, cv int64, gen *engine.Generation, auth *authenticator, w who) {
	if c.rt.Current() != gen {
		c.rt.Activate(gen)
	}
	c.auth.Store(auth)
	activeHash := recipes.Hash(gen.Document())
	c.st.Lock()
	act.Stage, act.Result, act.FinishedAt = "activate", "activated", now()
	c.cfgVersion, c.activeVer, c.activeHash = cv, version, activeHash
	if c.attempt == act.Attempt {
		c.status = StatusActive
	}
	c.activation = act
	c.st.Unlock()
	_ = c.hist.markActive(version, cv)
	if c.opts.OnActivate != nil {
		c.opts.OnActivate(gen)
	}
	c.opts.Audit.Record(AuditEntry{Action: "config.activate", Principal: w.principal, Role: w.role, RequestID: w.requestID,
		Config: &AuditConfig{Attempt: act.Attempt, Result: "activated", Source: act.Source, Version: cv, DocumentHash: act.DocumentHash}})
}

func (c *Config) reject(act *Activation, version int64, stage string, err error, w who) {
	reasons := redactReasons(reasonsOf(stage, err))
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r.Code
	}
	c.st.Lock()
	act.Stage, act.Result, act.FinishedAt, act.Reasons = stage, "rejected", now(), reasons
	if c.attempt == act.Attempt {
		c.status = StatusFailed
	}
	c.activation, c.rejection = act, act
	c.st.Unlock()
	_ = c.hist.update(version, func(e *HistoryEntry) { e.Status = StatusFailed })
	c.opts.Audit.Record(AuditEntry{Action: "config.reject", Principal: w.principal, Role: w.role, RequestID: w.requestID,
		Config: &AuditConfig{Attempt: act.Attempt, Result: "rejected", Source: act.Source, DocumentHash: act.DocumentHash, Stage: stage, ReasonCodes: codes}})
}

// redactReasons bounds failure detail: messages are kept (they name paths and
// what to change, never secret values) but cut to a sane length.
func redactReasons(rs []Reason) []Reason {
	for i := range rs {
		if len(rs[i].Message) > 512 {
			rs[i].Message = rs[i].Message[:512] + "…"
		}
	}
	return rs
}

// HashStatus is GET /api/v1/config/hash.
type HashStatus struct {
	SourceConfigHash     string      `json:"source_config_hash"`
	GeneratedRuntimeHash string      `json:"generated_runtime_hash"`
	ActiveRuntimeHash    string      `json:"active_runtime_hash"`
	ActivationStatus     string      `json:"activation_status"`
	Activation           *Activation `json:"activation,omitempty"`
	ConfigVersion        int64       `json:"config_version"`
	ActiveVersion        int64       `json:"active_version"`
	LastRejection        *Activation `json:"last_rejection,omitempty"`
	ETag                 string      `json:"etag"`
	// Persisted is false when serve runs without a configuration file: changes
	// then live in memory only and are lost on restart.
	Persisted bool `json:"persisted"`
}

// Hashes reports the persisted, generated and active identities.
func (c *Config) Hashes() HashStatus {
	c.st.RLock()
	defer c.st.RUnlock()
	return HashStatus{
		SourceConfigHash:     c.sourceHash,
		GeneratedRuntimeHash: c.genHash,
		ActiveRuntimeHash:    c.activeHash,
		ActivationStatus:     c.status,
		Activation:           copyActivation(c.activation),
		ConfigVersion:        c.cfgVersion,
		ActiveVersion:        c.activeVer,
		LastRejection:        copyActivation(c.rejection),
		ETag:                 etagOf(c.sourceHash),
		Persisted:            c.opts.Path != "",
	}
}

// ConfigVersion is the serving config_version.
func (c *Config) ConfigVersion() int64 {
	c.st.RLock()
	defer c.st.RUnlock()
	return c.cfgVersion
}

// copyActivation is a snapshot an answer can encode while the activation
// goes on (its fields change under Config.st).
func copyActivation(a *Activation) *Activation {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// persisted returns the persisted document's canonical JSON, parsed form and ETag.
func (c *Config) persisted() ([]byte, *recipes.Document, string) {
	c.st.RLock()
	defer c.st.RUnlock()
	return c.source, c.doc, etagOf(c.sourceHash)
}

// Versions lists the history, newest first.
func (c *Config) Versions(n int) []HistoryEntry { return c.hist.list(n) }

// GuardListener tells the lifecycle where the management API listens, so
// that a change turning authentication off while it listens on a
// non-loopback address is refused (allowRemote: the operator accepted that).
func (c *Config) GuardListener(addr string, allowRemote bool) {
	c.st.Lock()
	defer c.st.Unlock()
	c.bindAddr, c.allowRemote = addr, allowRemote
}

func (c *Config) checkBind(doc *recipes.Document) error {
	c.st.RLock()
	addr, allow := c.bindAddr, c.allowRemote
	c.st.RUnlock()
	if addr == "" {
		return nil
	}
	if err := ListenAddr(addr, doc.Global.Services.ManagementAPI.Auth.Mode, allow); err != nil {
		return newErr(http.StatusConflict, CodeInvalidConfig, "the change would leave the management API unauthenticated on a non-loopback address").withReasons([]Reason{{
			Stage: "validate", Code: "insecure_management_bind", Path: "/global/services/management_api/auth/mode", Message: err.Error()}})
	}
	return nil
}

// rollbackTarget finds the history entry a rollback body names.
func (c *Config) rollbackTarget(version any, configVersion *int64) (HistoryEntry, []byte, error) {
	var s string
	switch v := version.(type) {
	case nil:
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		s = v
	default:
		return HistoryEntry{}, nil, newErr(http.StatusBadRequest, CodeInvalidInput, "version must be a number or a timestamp string")
	}
	entries := c.hist.list(0)
	for _, e := range entries {
		match := false
		switch {
		case configVersion != nil:
			match = e.ConfigVersion != 0 && e.ConfigVersion == *configVersion
		case version != nil:
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				match = e.Version == n
			} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				et, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
				match = et.Equal(t)
			}
		}
		if !match {
			continue
		}
		b, err := c.hist.document(e.Version)
		if err != nil {
			return e, nil, newErr(http.StatusConflict, CodeInvalidInput, "version %d has no recorded document and cannot be restored", e.Version)
		}
		return e, b, nil
	}
	return HistoryEntry{}, nil, newErr(http.StatusNotFound, CodeNotFound, "no configuration version matches; GET /api/v1/config/versions lists the restorable ones")
}
