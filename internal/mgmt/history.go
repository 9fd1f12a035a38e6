package mgmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// HistoryEntry is one persisted configuration version (GET
// /api/v1/config/versions lists them newest first).
type HistoryEntry struct {
	// Version identifies the entry: its timestamp in Unix microseconds.
	Version   int64  `json:"version"`
	Timestamp string `json:"timestamp"`
	// Source says what wrote it: file (the file given to serve), api (a PUT,
	// PATCH or recipe mutation) or rollback.
	Source   string `json:"source"`
	Filename string `json:"filename,omitempty"`
	// ConfigVersion is the activation number it received; 0 when it never
	// became active (rejected or superseded).
	ConfigVersion int64  `json:"config_version"`
	Hash          string `json:"hash"`
	Active        bool   `json:"active"`
	// Status is the activation outcome: pending, active, failed or superseded.
	Status     string `json:"status"`
	RollbackOf *int64 `json:"rollback_of,omitempty"`
}

// history keeps the last limit versions with their documents, in a folder
// beside the configuration file (<file>.history/) or, without a file, in
// memory.
type history struct {
	// mu guards entries and docs: mutations add under Config.mu while
	// activations (under Config.act) mark their outcome.
	mu  sync.Mutex
	dir string // "" keeps everything in memory
	// lazy: the folder does not exist yet. Merely starting serve must not
	// write beside the operator's file, so the history stays in memory until
	// the first change (materialize) creates the folder.
	lazy    bool
	limit   int
	entries []HistoryEntry // newest first
	docs    map[int64][]byte
}

const historyIndex = "index.json"

func openHistory(dir string, limit int) (*history, error) {
	h := &history{dir: dir, limit: limit, docs: map[int64][]byte{}}
	if dir == "" {
		return h, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, historyIndex))
	if errors.Is(err, fs.ErrNotExist) {
		h.lazy = true
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configuration history: %w", err)
	}
	if err := json.Unmarshal(b, &h.entries); err != nil {
		return nil, fmt.Errorf("configuration history %s is damaged (%v); move it away to start a new history", filepath.Join(dir, historyIndex), err)
	}
	return h, nil
}

func (h *history) docPath(v int64) string {
	return filepath.Join(h.dir, strconv.FormatInt(v, 10)+".json")
}

// document returns a recorded version's canonical JSON.
func (h *history) document(v int64) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir == "" || h.lazy {
		if b, ok := h.docs[v]; ok {
			return b, nil
		}
		return nil, fs.ErrNotExist
	}
	return os.ReadFile(h.docPath(v))
}

// add records a new newest entry with its document and drops the oldest
// entries past the limit.
func (h *history) add(e HistoryEntry, doc []byte) (HistoryEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.entries) > 0 && e.Version <= h.entries[0].Version {
		e.Version = h.entries[0].Version + 1 // unique even within one microsecond
	}
	if h.dir == "" || h.lazy {
		h.docs[e.Version] = doc
	} else if err := writeFileAtomic(h.docPath(e.Version), doc); err != nil {
		return e, err
	}
	h.entries = append([]HistoryEntry{e}, h.entries...)
	for len(h.entries) > h.limit {
		old := h.entries[len(h.entries)-1]
		if old.Active {
			// The serving version stays restorable; drop the next oldest.
			if len(h.entries) < 2 {
				break
			}
			old = h.entries[len(h.entries)-2]
			h.entries = append(h.entries[:len(h.entries)-2], h.entries[len(h.entries)-1])
		} else {
			h.entries = h.entries[:len(h.entries)-1]
		}
		if h.dir == "" || h.lazy {
			delete(h.docs, old.Version)
		} else {
			_ = os.Remove(h.docPath(old.Version))
		}
	}
	return e, h.save()
}

// update changes the entry with version v.
func (h *history) update(v int64, fn func(*HistoryEntry)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.entries {
		if h.entries[i].Version == v {
			fn(&h.entries[i])
			return h.save()
		}
	}
	return nil
}

// markActive makes v the one active entry.
func (h *history) markActive(v, configVersion int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.entries {
		e := &h.entries[i]
		e.Active = e.Version == v
		if e.Active {
			e.ConfigVersion = configVersion
			e.Status = "active"
		}
	}
	return h.save()
}

// materialize creates the history folder and writes what was kept in
// memory so far; a no-op once done or without a folder.
func (h *history) materialize() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir == "" || !h.lazy {
		return nil
	}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return fmt.Errorf("configuration history folder %s: %w", h.dir, err)
	}
	for v, doc := range h.docs {
		if err := writeFileAtomic(h.docPath(v), doc); err != nil {
			return err
		}
	}
	h.lazy = false
	h.docs = map[int64][]byte{}
	return h.save()
}

func (h *history) save() error {
	if h.dir == "" || h.lazy {
		return nil
	}
	b, err := json.MarshalIndent(h.entries, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(h.dir, historyIndex), b)
}

func (h *history) list(n int) []HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n <= 0 || n > len(h.entries) {
		n = len(h.entries)
	}
	return append([]HistoryEntry{}, h.entries[:n]...)
}

func (h *history) maxConfigVersion() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var m int64
	for _, e := range h.entries {
		m = max(m, e.ConfigVersion)
	}
	return m
}

// writeFileAtomic writes b to path so that a reader (or a crash) sees the old
// content or the new one, never a mix: a temporary file in the same folder,
// synced, renamed over path, and the folder synced.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
