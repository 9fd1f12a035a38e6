package mgmt

import (
	"context"
	"net/http"
	"time"

	"github.com/junction-router/junction/recipes"
)

// A configuration mutation (PUT, PATCH, rollback, a changed file) from the
// candidate document to its activation: preconditions, validation, the
// compile and the swap, and a newer mutation superseding an older one.

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
	// exclusive refuses the mutation (409 CONFIG_ACTIVATION_PENDING,
	// nothing written) while an activation is pending.
	exclusive bool
	// async answers once the candidate is persisted: the activation goes on
	// in the background and GET /api/v1/config/hash reports it.
	async bool
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
	if m.exclusive {
		c.st.RLock()
		pending := c.status == StatusPending
		c.st.RUnlock()
		if pending {
			c.mu.Unlock()
			return nil, newErr(http.StatusConflict, CodeActivationPending,
				"a configuration activation is pending; nothing was changed. Poll GET /api/v1/config/hash until activation_status is active or failed, then retry")
		}
	}
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
	if m.async {
		res.ActivationStatus, res.Activation = StatusPending, c.snapshot(act)
		ctx = context.WithoutCancel(ctx) // the activation outlives the request
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			_ = c.activate(ctx, act, entry.Version, doc, hash, m.who, &MutationResult{})
		}()
		return res, nil
	}
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

// WaitActivations waits until the activations started in the background
// (by knowledge-base mutations) have finished; shutdown calls it so that
// none is cut off halfway through writing the history.
func (c *Config) WaitActivations() { c.bg.Wait() }
