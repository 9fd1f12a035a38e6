package mgmt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sigyaml "sigs.k8s.io/yaml"

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

	mu   sync.Mutex // serialises mutations: If-Match check to persist
	act  sync.Mutex // serialises activations
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
	c := &Config{opts: opts, status: StatusUnknown}
	var raw []byte
	dir := ""
	if opts.Path != "" {
		b, err := os.ReadFile(opts.Path)
		if err != nil {
			return nil, err
		}
		raw = b
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

// MutationResult answers a successful configuration mutation.
type MutationResult struct {
	ETag                 string      `json:"etag"`
	PreviousETag         string      `json:"previous_etag"`
	Version              int64       `json:"version"`
	ConfigVersion        int64       `json:"config_version"`
	SourceConfigHash     string      `json:"source_config_hash"`
	GeneratedRuntimeHash string      `json:"generated_runtime_hash"`
	ActivationStatus     string      `json:"activation_status"`
	Activation           *Activation `json:"activation,omitempty"`
	Persisted            bool        `json:"persisted"`
	// Unchanged is true when the candidate equals the persisted document:
	// nothing was written or activated.
	Unchanged  bool   `json:"unchanged,omitempty"`
	RollbackOf *int64 `json:"rollback_of,omitempty"`
}

// mutation is one change to apply.
type mutation struct {
	ifMatch    string
	hasIfMatch bool
	source     string // api or rollback
	// build derives the candidate document from the persisted one (canonical
	// JSON, before defaults). It may return an *apiError.
	build      func(cur []byte, curDoc *recipes.Document) ([]byte, error)
	rollbackOf *int64
	who        who
	// noPrecondition: the file watcher applies what an operator wrote to the
	// file; the file is its own precondition.
	noPrecondition bool
}

// checkIfMatch enforces the exact-ETag precondition.
func checkIfMatch(m *mutation, etag string) error {
	if !m.hasIfMatch {
		e := newErr(http.StatusPreconditionRequired, CodePreconditionRequired,
			"configuration changes need the If-Match header set to the current ETag %s (GET /api/v1/config returns it)", etag)
		e.body.Error.CurrentETag = etag
		return e
	}
	if m.ifMatch != etag {
		e := newErr(http.StatusPreconditionFailed, CodePreconditionFailed,
			"If-Match %s is not the current ETag %s: the configuration changed since it was read; read it again, reapply the change and retry", m.ifMatch, etag)
		e.body.Error.CurrentETag = etag
		return e
	}
	return nil
}

// candidate validates a built document: parse and schema (400) and the
// changes that need a restart (409).
func candidate(raw []byte, cur *recipes.Document) (*recipes.Document, []byte, error) {
	doc, canon, err := recipes.ParseSource(raw)
	if err != nil {
		stage := "validate"
		if ve, ok := recipes.AsValidationError(err); ok && len(ve.Problems) > 0 {
			stage = ve.Problems[0].Stage()
		}
		return nil, nil, newErr(http.StatusBadRequest, CodeInvalidConfig, "the candidate configuration is invalid; see reasons").withReasons(reasonsOf(stage, err))
	}
	if rs := restartReasons(cur, doc); len(rs) > 0 {
		return nil, nil, newErr(http.StatusConflict, CodeRestartRequired,
			"the change needs a restart of junction serve and was not persisted; see reasons").withReasons(rs)
	}
	return doc, canon, nil
}

// apply runs one mutation: precondition, candidate, persist, activate.
func (c *Config) apply(ctx context.Context, m *mutation) (*MutationResult, error) {
	c.mu.Lock()
	curSrc, curDoc, etag := c.persisted()
	if !m.noPrecondition {
		if err := checkIfMatch(m, etag); err != nil {
			c.mu.Unlock()
			return nil, err
		}
	}
	raw, err := m.build(curSrc, curDoc)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	// What needs a restart is judged against what is running, which differs
	// from the persisted document after a rejected activation.
	doc, canon, err := candidate(raw, c.rt.Current().Document())
	if err == nil {
		err = c.checkBind(doc)
	}
	if err != nil {
		c.mu.Unlock()
		if m.source == "file" {
			c.rejectFile(m, err)
		}
		return nil, err
	}
	hash := recipes.HashBytes(canon)
	if etagOf(hash) == etag && m.source != "rollback" {
		hs := c.Hashes()
		c.mu.Unlock()
		return &MutationResult{ETag: etag, PreviousETag: etag, Version: c.version, ConfigVersion: hs.ConfigVersion,
			SourceConfigHash: hash, GeneratedRuntimeHash: hs.GeneratedRuntimeHash, ActivationStatus: hs.ActivationStatus,
			Activation: hs.Activation, Persisted: hs.Persisted, Unchanged: true}, nil
	}
	if err := c.hist.materialize(); err != nil {
		c.mu.Unlock()
		return nil, newErr(http.StatusInternalServerError, CodeInternal, "could not create the configuration history: %v", err)
	}
	// A file edit is already persisted, as its author wrote it.
	if m.source != "file" {
		if err := c.writeFile(canon); err != nil {
			c.mu.Unlock()
			return nil, newErr(http.StatusInternalServerError, CodeInternal, "could not persist the configuration: %v", err)
		}
	}
	entry := HistoryEntry{Version: time.Now().UnixMicro(), Timestamp: now(), Source: m.source, Filename: c.opts.Path,
		Hash: hash, Status: StatusPending, RollbackOf: m.rollbackOf}
	if entry, err = c.hist.add(entry, canon); err != nil {
		c.mu.Unlock()
		return nil, newErr(http.StatusInternalServerError, CodeInternal, "could not record the configuration history: %v", err)
	}
	c.setPersisted(canon, hash, doc, entry.Version)
	c.st.Lock()
	c.attempt++
	attempt := c.attempt
	c.status = StatusPending
	act := &Activation{Attempt: attempt, DocumentHash: hash, Source: m.source, Stage: "compile", Result: "pending", StartedAt: now()}
	c.activation = act
	c.st.Unlock()
	c.mu.Unlock()

	res := &MutationResult{ETag: etagOf(hash), PreviousETag: etag, Version: entry.Version, SourceConfigHash: hash,
		GeneratedRuntimeHash: recipes.Hash(doc), Persisted: c.opts.Path != "", RollbackOf: m.rollbackOf}
	return res, c.activate(ctx, act, entry.Version, doc, hash, m.who, res)
}

// activate prepares and swaps in a persisted candidate, unless a newer one
// was persisted meanwhile (then this attempt is superseded).
func (c *Config) activate(ctx context.Context, act *Activation, version int64, doc *recipes.Document, hash string, w who, res *MutationResult) error {
	c.act.Lock()
	defer c.act.Unlock()
	if c.superseded(act, version, w) {
		res.ActivationStatus, res.Activation = StatusPending, c.snapshot(act)
		return nil
	}
	gen, auth, stage, err := c.prepare(ctx, doc, hash)
	if c.superseded(act, version, w) {
		res.ActivationStatus, res.Activation = StatusPending, c.snapshot(act)
		return nil
	}
	if err != nil {
		c.reject(act, version, stage, err, w)
		e := newErr(http.StatusServiceUnavailable, CodeActivationFailed,
			"the configuration was persisted but its activation failed at stage %s; the previous version keeps serving. Read the new ETag and fix or roll back rather than retrying", stage).withReasons(c.snapshot(act).Reasons)
		e.body.Status = "activation_failed"
		e.body.Error.CurrentETag = etagOf(hash)
		return e
	}
	c.st.RLock()
	cv := c.cfgVersion + 1
	c.st.RUnlock()
	if mcv := c.hist.maxConfigVersion() + 1; mcv > cv {
		cv = mcv
	}
	c.finishActivation(act, version, cv, gen, auth, w)
	res.ConfigVersion, res.ActivationStatus, res.Activation = cv, StatusActive, c.snapshot(act)
	return nil
}

func (c *Config) snapshot(a *Activation) *Activation {
	c.st.RLock()
	defer c.st.RUnlock()
	return copyActivation(a)
}

func (c *Config) superseded(act *Activation, version int64, w who) bool {
	c.st.Lock()
	newer := c.attempt > act.Attempt
	if newer {
		act.Result, act.FinishedAt = "superseded", now()
	}
	c.st.Unlock()
	if !newer {
		return false
	}
	_ = c.hist.update(version, func(e *HistoryEntry) { e.Status = "superseded" })
	c.opts.Audit.Record(AuditEntry{Action: "config.supersede", Principal: w.principal, Role: w.role, RequestID: w.requestID,
		Config: &AuditConfig{Attempt: act.Attempt, Result: "superseded", Source: act.Source, DocumentHash: act.DocumentHash}})
	return true
}

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

// rejectFile records a hand-edited file that cannot become a candidate
// (unreadable, invalid, or needing a restart): the running version stays,
// activation_status is failed and the audit log says config.reject.
func (c *Config) rejectFile(m *mutation, err error) {
	var ae *apiError
	reasons := []Reason{{Stage: "parse", Code: "unreadable", Message: err.Error()}}
	if errors.As(err, &ae) && len(ae.body.Error.Reasons) > 0 {
		reasons = ae.body.Error.Reasons
	}
	c.st.Lock()
	c.attempt++
	act := &Activation{Attempt: c.attempt, Source: "file", StartedAt: now(), Stage: reasons[0].Stage, Result: "rejected", FinishedAt: now(), Reasons: redactReasons(reasons)}
	if raw, rerr := os.ReadFile(c.opts.Path); rerr == nil {
		if h, herr := recipes.HashSource(raw); herr == nil {
			act.DocumentHash = h
		}
	}
	c.status, c.activation, c.rejection = StatusFailed, act, act
	c.st.Unlock()
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r.Code
	}
	c.opts.Audit.Record(AuditEntry{Action: "config.reject",
		Config: &AuditConfig{Attempt: act.Attempt, Result: "rejected", Source: "file", DocumentHash: act.DocumentHash, Stage: act.Stage, ReasonCodes: codes}})
	c.opts.Logf("the edited configuration file %s was not applied: %v", c.opts.Path, err)
}

// CheckFile applies the configuration file if its content differs from the
// persisted document: an operator edited it. A pending API activation is
// superseded by it. It reports whether a change was seen (applied or
// rejected).
func (c *Config) CheckFile(ctx context.Context) bool {
	if c.opts.Path == "" {
		return false
	}
	raw, err := os.ReadFile(c.opts.Path)
	if err != nil {
		return false
	}
	canon, err := recipes.CanonicalSource(raw)
	c.st.RLock()
	same := err == nil && recipes.HashBytes(canon) == c.sourceHash
	lastRejected := c.rejection != nil && c.rejection.Source == "file" && c.rejection.DocumentHash != "" && c.rejection.DocumentHash == hashOrEmpty(raw)
	c.st.RUnlock()
	if same || lastRejected {
		return false
	}
	_, err = c.apply(ctx, &mutation{source: "file", noPrecondition: true, build: func([]byte, *recipes.Document) ([]byte, error) {
		if canon == nil {
			return raw, nil // ParseSource reports the syntax error with its line
		}
		return canon, nil
	}})
	_ = err // the outcome is in Hashes() and the audit log
	return true
}

func hashOrEmpty(raw []byte) string {
	h, err := recipes.HashSource(raw)
	if err != nil {
		return ""
	}
	return h
}

// WatchFile calls CheckFile every interval until ctx ends, so that a file
// edited by hand (or rewritten by a deployment tool) is applied without a
// restart, with the same validation and activation as an API mutation.
func (c *Config) WatchFile(ctx context.Context, interval time.Duration) {
	if c.opts.Path == "" || interval <= 0 {
		return
	}
	var lastMod time.Time
	var lastSize int64 = -1
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := os.Stat(c.opts.Path)
		if err != nil || (st.ModTime().Equal(lastMod) && st.Size() == lastSize) {
			continue
		}
		lastMod, lastSize = st.ModTime(), st.Size()
		c.CheckFile(ctx)
	}
}

// writeFile persists the document in the file's own format.
func (c *Config) writeFile(canon []byte) error {
	if c.opts.Path == "" {
		return nil
	}
	out := canon
	if c.yaml {
		y, err := sigyaml.JSONToYAML(canon)
		if err != nil {
			return err
		}
		out = append([]byte("# Written by the Junction management API; edits through PUT/PATCH /api/v1/config keep it current.\n"), y...)
	} else {
		var buf bytes.Buffer
		if err := json.Indent(&buf, canon, "", "  "); err == nil {
			out = buf.Bytes()
		}
	}
	return writeFileAtomic(c.opts.Path, out)
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
