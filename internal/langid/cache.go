//go:build !nolingua

package langid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"unsafe"

	lingua "github.com/pemistahl/lingua-go"
)

// The table cache: building the tables reads and decodes lingua's zipped
// JSON-in-protobuf models (seconds of CPU for ten languages), while the
// tables themselves are a few flat arrays; a warm start reads them back from
// a file in the user cache directory.
//
// File layout (native little-endian; on a big-endian machine the cache is
// not used): magic, format version, key length and key, then per n-gram
// length 1..5 the slot and posting counts, then per length the arrays keys,
// start, count, lang, logp (as IEEE bits), and last a CRC-32C of everything
// before it. The key names the format version, lingua's module version, the
// sizes of the models read, and the sorted language set; lang in a file
// indexes that sorted set and is mapped to the caller's order on load.

const (
	cacheMagic   = "JNLANGID"
	cacheVersion = 1
	// CacheEnv overrides DefaultCacheDir: a directory, or "off" for no cache.
	CacheEnv = "JUNCTION_LANGID_CACHE"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options tune Load.
type Options struct {
	// CacheDir keeps built tables across runs; "" builds them every time.
	CacheDir string
	// Logger receives the warning when a cache file is unusable or cannot be
	// written (the detector is built all the same); nil is slog.Default().
	Logger *slog.Logger
}

// DefaultCacheDir is junction/langid in the user cache directory (as
// compiled plugins use junction/plugins), or $JUNCTION_LANGID_CACHE when set;
// "" (no cache) when that is "off" or the directory cannot be created.
func DefaultCacheDir() string {
	dir := os.Getenv(CacheEnv)
	if dir == "off" {
		return ""
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "junction", "langid")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	return dir
}

// Load is New with a table cache: it reads the tables of this language set
// from opts.CacheDir when a valid file is there, and otherwise builds them
// and writes the file (atomically, so concurrent processes see a whole file
// or none). A corrupt, truncated or stale file is rebuilt with a warning.
func Load(opts Options, languages ...lingua.Language) (*Detector, error) {
	d, err := newDetector(languages)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.CacheDir == "" || binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return d, d.build()
	}
	sorted := slices.Clone(d.langs)
	slices.Sort(sorted)
	key := d.cacheKey(sorted)
	path := filepath.Join(opts.CacheDir, fmt.Sprintf("tables-%08x.bin", crc32.Checksum([]byte(key), castagnoli)))
	err = d.readCache(path, key, sorted)
	if err == nil {
		return d, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		log.Warn("langid: the language-table cache file is unusable; rebuilding it", "file", path, "error", err)
	}
	d.tables = [maxNgram + 1]table{}
	// Build in sorted order so the file is independent of the caller's
	// order, then map to the caller's.
	s, err := newDetector(sorted)
	if err != nil {
		return nil, err
	}
	if err := s.build(); err != nil {
		return nil, err
	}
	if err := writeCache(opts.CacheDir, path, key, &s.tables); err != nil {
		log.Warn("langid: cannot write the language-table cache; the next start will rebuild the tables", "dir", opts.CacheDir, "error", err)
	}
	d.tables = s.tables
	perm := d.perm(sorted)
	for n := 1; n <= maxNgram; n++ {
		for i, l := range d.tables[n].lang {
			d.tables[n].lang[i] = perm[l]
		}
	}
	return d, nil
}

// perm maps an index into sorted to the same language's index in d.langs.
func (d *Detector) perm(sorted []lingua.Language) []uint8 {
	p := make([]uint8, len(sorted))
	for i, l := range sorted {
		p[i] = uint8(d.index[l])
	}
	return p
}

// cacheKey names everything the tables depend on. The model sizes catch a
// lingua that changed its models without its version (a replace directive).
func (d *Detector) cacheKey(sorted []lingua.Language) string {
	ver := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/pemistahl/lingua-go" {
				ver = m.Version
				if m.Replace != nil {
					ver += "=>" + m.Replace.Path + "@" + m.Replace.Version
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "v%d lingua %s hash fnv1a+fmix64", cacheVersion, ver)
	for _, l := range sorted {
		iso := strings.ToLower(l.IsoCode639_1().String())
		b.WriteString(" " + iso)
		for n := 1; n <= maxNgram; n++ {
			size := int64(-1)
			if fi, err := fs.Stat(linguaModels, modelName(iso, n)); err == nil {
				size = fi.Size()
			}
			fmt.Fprintf(&b, ":%d", size)
		}
	}
	return b.String()
}

func asBytes[T uint64 | uint32 | uint8 | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

func tableArrays(t *table) [][]byte {
	return [][]byte{asBytes(t.keys), asBytes(t.start), asBytes(t.count), asBytes(t.lang), asBytes(t.logp)}
}

func header(key string, tables *[maxNgram + 1]table) []byte {
	h := []byte(cacheMagic)
	h = binary.LittleEndian.AppendUint32(h, cacheVersion)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(key)))
	h = append(h, key...)
	for n := 1; n <= maxNgram; n++ {
		h = binary.LittleEndian.AppendUint64(h, uint64(len(tables[n].keys)))
		h = binary.LittleEndian.AppendUint64(h, uint64(len(tables[n].lang)))
	}
	return h
}

func writeCache(dir, path, key string, tables *[maxNgram + 1]table) (err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tables-*.tmp") // 0600
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	crc := crc32.New(castagnoli)
	w := io.MultiWriter(f, crc)
	if _, err := w.Write(header(key, tables)); err != nil {
		return err
	}
	for n := 1; n <= maxNgram; n++ {
		for _, a := range tableArrays(&tables[n]) {
			if _, err := w.Write(a); err != nil {
				return err
			}
		}
	}
	if _, err := f.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32())); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// readCache fills d.tables from path, reading each array straight into its
// slice, and fails unless the file is whole, of this key, and its checksum
// and structure hold.
func (d *Detector) readCache(path, key string, sorted []lingua.Language) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	crc := crc32.New(castagnoli)
	r := io.TeeReader(f, crc)
	want := header(key, &[maxNgram + 1]table{}) // sizes zero; compared up to them
	fixed := len(want) - maxNgram*16
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil {
		return fmt.Errorf("reading the header: %w", err)
	}
	if string(got[:fixed]) != string(want[:fixed]) {
		return fmt.Errorf("written by another version or for other languages")
	}
	total := int64(len(got)) + 4
	var ts [maxNgram + 1]table
	for n := 1; n <= maxNgram; n++ {
		slots := binary.LittleEndian.Uint64(got[fixed+(n-1)*16:])
		posts := binary.LittleEndian.Uint64(got[fixed+(n-1)*16+8:])
		if slots&(slots-1) != 0 || slots > 1<<32 || posts > 1<<32 {
			return fmt.Errorf("bad table sizes")
		}
		total += int64(slots)*13 + int64(posts)*9
		ts[n] = table{keys: make([]uint64, slots), start: make([]uint32, slots), count: make([]uint8, slots),
			lang: make([]uint8, posts), logp: make([]float64, posts)}
		if slots > 0 {
			ts[n].mask = slots - 1
		}
		if total > fi.Size() {
			return fmt.Errorf("truncated: %d bytes, the header needs at least %d", fi.Size(), total)
		}
	}
	if total != fi.Size() {
		return fmt.Errorf("%d bytes, the header says %d", fi.Size(), total)
	}
	for n := 1; n <= maxNgram; n++ {
		for _, a := range tableArrays(&ts[n]) {
			if _, err := io.ReadFull(r, a); err != nil {
				return fmt.Errorf("truncated: %w", err)
			}
		}
	}
	sum := crc.Sum32()
	var tail [4]byte
	if _, err := io.ReadFull(f, tail[:]); err != nil {
		return fmt.Errorf("truncated: %w", err)
	}
	if binary.LittleEndian.Uint32(tail[:]) != sum {
		return fmt.Errorf("checksum mismatch")
	}
	// The checksum catches damage; these bounds keep a file that passes it
	// by accident from making lookups index out of range.
	perm := d.perm(sorted)
	for n := 1; n <= maxNgram; n++ {
		t := &ts[n]
		empty := false
		for i, k := range t.keys {
			if k == 0 {
				empty = true
			} else if uint64(t.start[i])+uint64(t.count[i]) > uint64(len(t.lang)) {
				return fmt.Errorf("posting out of range")
			}
		}
		if len(t.keys) > 0 && !empty {
			return fmt.Errorf("a table without an empty slot") // lookups of absent n-grams would not end
		}
		for i, l := range t.lang {
			if int(l) >= len(perm) {
				return fmt.Errorf("language index out of range")
			}
			t.lang[i] = perm[l]
		}
	}
	d.tables = ts
	return nil
}
