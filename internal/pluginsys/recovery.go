package pluginsys

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/recipes"
)

// Context recovery: when context_compression drops older turns or shortens
// tool outputs on a live request, the host keeps the original messages the
// forwarded request no longer carries as a recovery record, so that they
// can be found and invalidated later (POST
// /api/v1/storage/context-recovery/invalidate). The plugin reports how many
// messages it dropped; the host, which holds the request before and after
// the stage, works out which (no change to the plugin or its ABI).
//
// Records are kept in a response-cache backend of their own (the same
// bounded, TTL'd store and filters as the response cache, but not counted,
// flushed or invalidated with it), in the namespace
// context_recovery/recipe=<r>/decision=<d>/model=<m>, under the key
// cr_<32 hex digits>.

// RecoveryNamespace is the prefix of every recovery record's namespace.
const RecoveryNamespace = "context_recovery"

// RecoveryTTL is how long a recovery record is kept (the specification
// names no setting for it).
const RecoveryTTL = 24 * time.Hour

// The recovery store's bounds (least recently used records go first): a
// record holds whole messages, so it is kept well below the response
// cache's default bounds.
const (
	RecoveryMaxRecords = 10_000
	RecoveryMaxBytes   = 64 << 20
)

// RecoveryRecord is what a recovery record holds.
type RecoveryRecord struct {
	ID       string    `json:"id"`
	Recipe   string    `json:"recipe,omitempty"`
	Decision string    `json:"decision,omitempty"`
	Model    string    `json:"model,omitempty"`
	Created  time.Time `json:"created"`
	// Messages are the original messages (as the client sent them) that
	// the forwarded request no longer carries as they were: the dropped
	// ones and the originals of shortened tool outputs.
	Messages []json.RawMessage `json:"messages"`
}

// Recovery is the store of recovery records.
func (p *System) Recovery() respcache.Backend { return p.recovery }

// compresses reports whether refs run context_compression.
func compresses(refs []recipes.PluginRef) bool {
	for _, r := range refs {
		if r.Type == "context_compression" {
			return true
		}
	}
	return false
}

// keepRecovery stores what context_compression took out of the request
// (before are the request's messages as they came to the stage) and
// returns the record; false when there was nothing to keep.
func (p *System) keepRecovery(ctx context.Context, req *plugin.Request, before json.RawMessage, reports []plugin.Report) (RecoveryRecord, bool) {
	dropped := false
	for _, r := range reports {
		if r.Type == "context_compression" && r.Status == plugin.StatusApplied {
			dropped = true
		}
	}
	if !dropped || before == nil || req.Chat == nil {
		return RecoveryRecord{}, false
	}
	var in, out []json.RawMessage
	if json.Unmarshal(before, &in) != nil {
		return RecoveryRecord{}, false
	}
	_ = json.Unmarshal(req.Chat.Fields["messages"], &out)
	kept := make(map[string]int, len(out))
	for _, m := range out {
		kept[string(m)]++
	}
	var gone []json.RawMessage
	for _, m := range in {
		if kept[string(m)] > 0 {
			kept[string(m)]--
			continue
		}
		gone = append(gone, m)
	}
	if len(gone) == 0 {
		return RecoveryRecord{}, false
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	rec := RecoveryRecord{ID: "cr_" + hex.EncodeToString(id[:]), Recipe: req.Recipe, Decision: req.Decision, Model: req.Model, Created: time.Now().UTC(), Messages: gone}
	b, err := json.Marshal(rec)
	if err != nil {
		return RecoveryRecord{}, false
	}
	if err := p.recovery.Store(context.WithoutCancel(ctx), recoveryNamespace(req), rec.ID, b, RecoveryTTL, nil); err != nil {
		p.log.Warn("keeping a context recovery record failed", "error", err)
		return RecoveryRecord{}, false
	}
	return rec, true
}

// recoveryNamespace is where req's records are kept.
func recoveryNamespace(req *plugin.Request) string {
	return RecoveryNamespace + "/recipe=" + req.Recipe + "/decision=" + req.Decision + "/model=" + req.Model
}
