package mgmt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/junction-router/junction/recipes"
)

// The configuration file on disk: watched for hand edits (which become
// mutations like any other) and rewritten atomically after an API mutation.

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
