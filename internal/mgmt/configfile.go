package mgmt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
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
}

// CheckFile applies the configuration file if its content differs from the
// persisted document: an operator edited it. A pending API activation is
// superseded by it. It reports whether a change was seen (applied or
// rejected), and logs what it saw (logEdit).
func (c *Config) CheckFile(ctx context.Context) bool {
	if c.opts.Path == "" {
		return false
	}
	raw, err := os.ReadFile(c.opts.Path)
	if err != nil {
		return false
	}
	canon, err := recipes.CanonicalSource(raw)
	digest := rawDigest(raw)
	before := c.Hashes()
	c.st.Lock()
	same := err == nil && recipes.HashBytes(canon) == c.sourceHash
	lastRejected := c.rejection != nil && c.rejection.Source == "file" && c.rejection.DocumentHash != "" && c.rejection.DocumentHash == hashOrEmpty(raw)
	newBytes := digest != c.fileDigest
	c.fileDigest = digest
	prevDoc := c.doc
	c.st.Unlock()
	if !newBytes {
		return false // the bytes last seen, or those the router itself is writing after an API change
	}
	if same || lastRejected {
		if same {
			c.opts.Logger.Info("configuration file edited; the document is unchanged (a comment or formatting edit), nothing to apply",
				"file", c.opts.Path, "result", "unchanged", "hash", before.SourceConfigHash, "config_version", before.ConfigVersion)
		}
		return false
	}
	res, err := c.apply(ctx, &mutation{source: "file", noPrecondition: true, build: func([]byte, *recipes.Document) ([]byte, error) {
		if canon == nil {
			return raw, nil // ParseSource reports the syntax error with its line
		}
		return canon, nil
	}})
	c.logEdit(raw, before, prevDoc, res, err)
	return true
}

// logEdit reports the outcome of a hand edit of the file: one record saying what changed (the old and new
// source hashes, config versions and changed sections) and the result: applied, rejected with the reasons
// (the running version keeps serving), or superseded. Secret values the document holds (listener api_keys,
// backend extra_headers) are withheld from the reasons; nothing from a request is ever here.
func (c *Config) logEdit(raw []byte, before HashStatus, prevDoc *recipes.Document, res *MutationResult, err error) {
	log := c.opts.Logger.With("file", c.opts.Path, "old_hash", before.SourceConfigHash, "old_config_version", before.ConfigVersion)
	if err != nil {
		var ae *apiError
		reasons := []Reason{{Stage: "parse", Code: "unreadable", Message: err.Error()}}
		if errors.As(err, &ae) && len(ae.body.Error.Reasons) > 0 {
			reasons = ae.body.Error.Reasons
		}
		secrets := secretValues(raw, prevDoc)
		parts := make([]string, len(reasons))
		for i, r := range reasons {
			parts[i] = withholdSecrets(fmt.Sprintf("%s %s %s: %s", r.Stage, r.Path, r.Code, r.Message), secrets)
		}
		after := c.Hashes()
		log.Warn("configuration file edit rejected; the running version keeps serving (fix the file, or roll back)",
			"result", "rejected", "new_hash", hashOrEmpty(raw), "config_version", after.ConfigVersion,
			"stage", reasons[0].Stage, "reasons", strings.Join(parts, "; "))
		return
	}
	var changed []string
	if _, doc, _ := c.persisted(); prevDoc != nil && doc != nil {
		changed = changedSections(prevDoc, doc)
	}
	switch {
	case res.Unchanged:
		log.Info("configuration file edited; the document is unchanged, nothing to apply", "result", "unchanged", "new_hash", res.SourceConfigHash)
	case res.ActivationStatus == StatusActive:
		log.Info("configuration file edit applied", "result", "applied", "new_hash", res.SourceConfigHash,
			"config_version", res.ConfigVersion, "history_version", res.Version, "changed", strings.Join(changed, ","))
	default:
		log.Info("configuration file edit persisted; a newer change superseded its activation", "result", "superseded",
			"new_hash", res.SourceConfigHash, "history_version", res.Version, "changed", strings.Join(changed, ","))
	}
}

// secretValues lists the secret values of the edited file and of the document it replaces (listener api_keys,
// backend extra_headers values: what the API redacts), so a reason quoting one never reaches the log.
func secretValues(raw []byte, prev *recipes.Document) []string {
	var out []string
	collect := func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		ls, _ := m["listeners"].([]any)
		for _, l := range ls {
			lm, _ := l.(map[string]any)
			keys, _ := lm["api_keys"].([]any)
			for _, k := range keys {
				if s, ok := k.(string); ok && s != "" {
					out = append(out, s)
				}
			}
		}
		p, _ := m["providers"].(map[string]any)
		ms, _ := p["models"].([]any)
		for _, mdl := range ms {
			mm, _ := mdl.(map[string]any)
			refs, _ := mm["backend_refs"].([]any)
			for _, r := range refs {
				rm, _ := r.(map[string]any)
				hs, _ := rm["extra_headers"].(map[string]any)
				for _, h := range hs {
					if s, ok := h.(string); ok && s != "" {
						out = append(out, s)
					}
				}
			}
		}
	}
	var v any
	if sigyaml.Unmarshal(raw, &v) == nil {
		collect(v)
	}
	if prev != nil {
		if b, err := json.Marshal(prev); err == nil && json.Unmarshal(b, &v) == nil {
			collect(v)
		}
	}
	return out
}

// withholdSecrets replaces each secret value in s.
func withholdSecrets(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}

// rawDigest identifies the file's bytes (not its document: comments count).
func rawDigest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
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
	// Recorded before the file changes, so that the watcher, reading the new bytes at any moment, knows them
	// for the router's own rewrite and not a hand edit.
	c.st.Lock()
	c.fileDigest = rawDigest(out)
	c.st.Unlock()
	return writeFileAtomic(c.opts.Path, out)
}
