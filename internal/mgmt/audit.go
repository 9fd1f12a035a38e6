package mgmt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"
)

// AuditRingSize is how many entries the audit log keeps (the spec's latest
// 10,000); older ones fall off and a reader paging from before them is told
// the page is truncated.
const AuditRingSize = 10000

// AuditEntry is one audit record. It holds the route and who called it, never
// a request body, a plugin payload or a token.
type AuditEntry struct {
	Sequence  int64  `json:"sequence"`
	Timestamp string `json:"timestamp"`
	Action    string `json:"action"`
	// Method, Route and Status describe the management request; configuration
	// activation entries carry none of them.
	Method    string `json:"method,omitempty"`
	Route     string `json:"route,omitempty"`
	Status    int    `json:"status,omitempty"`
	Principal string `json:"principal,omitempty"`
	Role      string `json:"role,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Config is set on config.activate, config.reject and config.supersede.
	Config *AuditConfig `json:"config,omitempty"`
	// PrevHash and Hash chain the entries: Hash is the SHA-256 of PrevHash and
	// the entry's other fields, so an edited or removed entry breaks the chain.
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// AuditConfig describes a configuration activation attempt.
type AuditConfig struct {
	Attempt      int64    `json:"attempt"`
	Result       string   `json:"result"`
	Source       string   `json:"source"`
	Version      int64    `json:"version"`
	DocumentHash string   `json:"document_hash"`
	Stage        string   `json:"stage,omitempty"`
	ReasonCodes  []string `json:"reason_codes,omitempty"`
}

// Audit is the in-memory hash-chained ring. Restart resets it.
type Audit struct {
	mu      sync.Mutex
	ring    []AuditEntry
	start   int // index of the oldest entry in ring
	n       int
	next    int64
	last    string
	size    int
	nowFunc func() time.Time
}

func newAudit(size int) *Audit {
	if size <= 0 {
		size = AuditRingSize
	}
	return &Audit{ring: make([]AuditEntry, size), size: size, next: 1, nowFunc: time.Now}
}

// Record appends e (its sequence, time and hashes are filled in).
func (a *Audit) Record(e AuditEntry) AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	e.Sequence = a.next
	a.next++
	e.Timestamp = a.nowFunc().UTC().Format(time.RFC3339Nano)
	e.PrevHash = a.last
	e.Hash = ""
	b, _ := json.Marshal(e)
	sum := sha256.Sum256(append([]byte(a.last), b...))
	e.Hash = "sha256:" + hex.EncodeToString(sum[:])
	a.last = e.Hash
	if a.n < a.size {
		a.ring[(a.start+a.n)%a.size] = e
		a.n++
	} else {
		a.ring[a.start] = e
		a.start = (a.start + 1) % a.size
	}
	return e
}

// AuditPage is one page of GET /api/v1/observability/audit.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// NextSequence is the after_sequence that continues this listing.
	NextSequence   int64 `json:"next_sequence"`
	HasMore        bool  `json:"has_more"`
	Truncated      bool  `json:"truncated"`
	OldestSequence int64 `json:"oldest_sequence"`
}

// List returns up to limit entries with a sequence above after, filtered by
// action when it is not empty.
func (a *Audit) List(action string, after int64, limit int) AuditPage {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := AuditPage{Entries: []AuditEntry{}, NextSequence: after}
	if a.n == 0 {
		return p
	}
	p.OldestSequence = a.ring[a.start].Sequence
	// Entries after `after` but before the oldest kept one fell off the ring.
	p.Truncated = after+1 < p.OldestSequence
	for i := 0; i < a.n; i++ {
		e := a.ring[(a.start+i)%a.size]
		if e.Sequence <= after || (action != "" && e.Action != action) {
			continue
		}
		if len(p.Entries) == limit {
			p.HasMore = true
			break
		}
		p.Entries = append(p.Entries, e)
		p.NextSequence = e.Sequence
	}
	return p
}

// Verify recomputes the chain of the kept entries; it reports the first
// sequence whose hash does not match, or 0.
func (a *Audit) Verify() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; i < a.n; i++ {
		e := a.ring[(a.start+i)%a.size]
		want := e.Hash
		e.Hash = ""
		b, _ := json.Marshal(e)
		sum := sha256.Sum256(append([]byte(e.PrevHash), b...))
		if "sha256:"+hex.EncodeToString(sum[:]) != want {
			return e.Sequence
		}
		if i > 0 && a.ring[(a.start+i-1)%a.size].Hash != e.PrevHash {
			return e.Sequence
		}
	}
	return 0
}
