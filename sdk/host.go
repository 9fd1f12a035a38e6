package sdk

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/junction-router/junction/hostapi/abi"
)

// Errors of the host functions, one per status code that is not a success.
var (
	// ErrNotFound: a cache miss.
	ErrNotFound = errors.New("not found")
	// ErrDenied: not allowed in this request's mode (a backend call in
	// preview, a cache write in probe).
	ErrDenied = errors.New("not allowed in this mode")
	// ErrUnavailable: the host has no backend for this call.
	ErrUnavailable = errors.New("unavailable on this host")
	// ErrBackend: the backend failed or ran out of time.
	ErrBackend = errors.New("backend error")
	// ErrLimit: a limit of the binding was reached.
	ErrLimit = errors.New("limit reached")
	// ErrInvalid: the host refused the arguments.
	ErrInvalid = errors.New("invalid argument")
)

func statusErr(fn string, st abi.Status) error {
	var err error
	switch st {
	case abi.StatusOK:
		return nil
	case abi.StatusNotFound:
		err = ErrNotFound
	case abi.StatusDenied:
		err = ErrDenied
	case abi.StatusUnavailable:
		err = ErrUnavailable
	case abi.StatusBackendError:
		err = ErrBackend
	case abi.StatusLimit:
		err = ErrLimit
	case abi.StatusInvalidArgument:
		err = ErrInvalid
	default:
		return fmt.Errorf("junction.%s: unexpected status %s", fn, st)
	}
	return fmt.Errorf("junction.%s: %w", fn, err)
}

type hostFunc func(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

// scratch receives host answers; an answer that does not fit is fetched
// with the result import into a buffer of its size.
var scratch = make([]byte, 16<<10)

// call runs a host function. The answer aliases scratch unless it was
// larger; callers decode it before the next call.
func call(name string, fn hostFunc, arg []byte) ([]byte, error) {
	var outLen uint32
	st := abi.Status(fn(addr(arg), uint32(len(arg)), addr(scratch), uint32(len(scratch)), uint32(uintptr(unsafe.Pointer(&outLen)))))
	runtime.KeepAlive(arg)
	if st == abi.StatusBufferTooSmall {
		big := make([]byte, outLen)
		st = abi.Status(hostResult(0, 0, addr(big), uint32(len(big)), uint32(uintptr(unsafe.Pointer(&outLen)))))
		if st != abi.StatusOK {
			return nil, statusErr(name, st)
		}
		return big[:outLen], nil
	}
	if err := statusErr(name, st); err != nil {
		return nil, err
	}
	if outLen > uint32(len(scratch)) {
		return nil, fmt.Errorf("junction.%s: the host reported an answer larger than the buffer", name)
	}
	return scratch[:outLen], nil
}

// Host serves host functions in the router's process, for a plugin run
// natively (HandleHost): name is the import's name (abi.Import*), in its
// argument record, and the answer is the record the host function writes.
// A module never has one: its calls go through its imports.
type Host interface {
	Call(name string, in []byte) ([]byte, abi.Status)
}

// VectorHost is a Host that also takes and gives embeddings as Go values
// for the two host functions that carry one on a semantic lookup (embed and
// cache_lookup), under the same budget, limits and mode gate as Call: run
// natively, a plugin then writes and reads no record of a 4 KiB vector only
// for the router to copy it. The router's native host (hostapi.HostCalls)
// is one; a module's calls always go through records.
type VectorHost interface {
	Host
	// EmbedVector answers as Call(abi.ImportEmbed, …) does, with the vector
	// itself (the plugin's to keep).
	EmbedVector(text string) ([]float32, abi.Status)
	// CacheLookupVector answers as Call(abi.ImportCacheLookup, …) does,
	// with the entry itself (its Value may be the host's: copy it).
	CacheLookupVector(a *abi.CacheLookupArgs) (abi.CacheEntry, abi.Status)
}

// vectorHost is r's host when it takes vectors as values.
func (r *Request) vectorHost() (VectorHost, bool) {
	if r == nil || r.host == nil {
		return nil, false
	}
	vh, ok := r.host.(VectorHost)
	return vh, ok
}

// call runs a host function for r's handler call: through the native host
// when r has one, else through the module's import (a nil r: the package's
// functions). The answer may alias a buffer of the SDK's: decode it before
// the next call.
func (r *Request) call(name string, fn hostFunc, arg []byte) ([]byte, error) {
	if r != nil && r.host != nil {
		out, st := r.host.Call(name, arg)
		if err := statusErr(name, st); err != nil {
			return nil, err
		}
		return out, nil
	}
	return call(name, fn, arg)
}

// Log levels.
const (
	LevelDebug = abi.LogDebug
	LevelInfo  = abi.LogInfo
	LevelWarn  = abi.LogWarn
	LevelError = abi.LogError
)

// Log writes a message to the host's log. Never log request text: the host
// may drop or truncate messages.
func Log(level uint32, msg string) {
	(*Request)(nil).Log(level, msg)
}

// Log is the package's Log for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) Log(level uint32, msg string) {
	a := abi.LogArgs{Level: level, Message: msg}
	_, _ = r.call("log", hostLog, a.Append(nil))
}

// Logf formats and logs at info level.
func Logf(format string, args ...any) { Log(LevelInfo, fmt.Sprintf(format, args...)) }

// Config returns the binding's configuration JSON ("{}" when none).
func Config() ([]byte, error) {
	b, err := call("config", hostConfig, nil)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// Embed returns the host embedder's vector for text. A backend call: denied
// in preview.
func Embed(text string) ([]float32, error) {
	return (*Request)(nil).Embed(text)
}

// Embed is the package's Embed for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) Embed(text string) ([]float32, error) {
	if vh, ok := r.vectorHost(); ok {
		v, st := vh.EmbedVector(text)
		if err := statusErr("embed", st); err != nil {
			return nil, err
		}
		return v, nil
	}
	a := abi.TextArgs{Text: text}
	b, err := r.call("embed", hostEmbed, a.Append(nil))
	if err != nil {
		return nil, err
	}
	return abi.DecodeVector(b)
}

// VectorHit is one search result.
type VectorHit = abi.VectorHit

// VectorSearch returns the k items of the named store most similar to query.
// A backend call: denied in preview.
func VectorSearch(store string, query []float32, k int) ([]VectorHit, error) {
	return (*Request)(nil).VectorSearch(store, query, k)
}

// VectorSearch is the package's VectorSearch for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) VectorSearch(store string, query []float32, k int) ([]VectorHit, error) {
	a := abi.VectorSearchArgs{Store: store, K: uint32(k), Query: query}
	b, err := r.call("vector_search", hostVectorSearch, a.Append(nil))
	if err != nil {
		return nil, err
	}
	return ownHits(b)
}

// CacheEntry is a cache hit: the stored value and its similarity to the
// lookup (1 for the exact key).
type CacheEntry = abi.CacheEntry

// CacheLookup finds key in the namespace, or (when embedding is given) the
// most similar entry at or above threshold. ErrNotFound on a miss. Live only.
func CacheLookup(namespace, key string, embedding []float32, threshold float32) (CacheEntry, error) {
	return (*Request)(nil).CacheLookup(namespace, key, embedding, threshold)
}

// CacheLookup is the package's CacheLookup for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) CacheLookup(namespace, key string, embedding []float32, threshold float32) (CacheEntry, error) {
	a := abi.CacheLookupArgs{Namespace: namespace, Key: key, Embedding: embedding, Threshold: threshold}
	if vh, ok := r.vectorHost(); ok {
		e, st := vh.CacheLookupVector(&a)
		if err := statusErr("cache_lookup", st); err != nil {
			return CacheEntry{}, err
		}
		e.Value = append([]byte(nil), e.Value...)
		return e, nil
	}
	b, err := r.call("cache_lookup", hostCacheLookup, a.Append(nil))
	if err != nil {
		return CacheEntry{}, err
	}
	e, err := abi.DecodeCacheEntry(b)
	e.Value = append([]byte(nil), e.Value...)
	return e, err
}

// CacheStore stores value under key for ttlSeconds (0: the host's default),
// with an optional embedding for similarity lookups. Live only.
func CacheStore(namespace, key string, value []byte, ttlSeconds int, embedding []float32) error {
	return (*Request)(nil).CacheStore(namespace, key, value, ttlSeconds, embedding)
}

// CacheStore is the package's CacheStore for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) CacheStore(namespace, key string, value []byte, ttlSeconds int, embedding []float32) error {
	a := abi.CacheStoreArgs{Namespace: namespace, Key: key, Value: value, TTLSeconds: uint32(ttlSeconds), Embedding: embedding}
	_, err := r.call("cache_store", hostCacheStore, a.Append(nil))
	return err
}

// Class is a label with its score.
type Class = abi.Class

// Classify runs the host's classifier binding (e.g. "domain", "jailbreak")
// on text. A backend call: denied in preview.
func Classify(binding, text string) ([]Class, error) {
	return (*Request)(nil).Classify(binding, text)
}

// Classify is the package's Classify for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) Classify(binding, text string) ([]Class, error) {
	a := abi.ClassifyArgs{Binding: binding, Text: text}
	b, err := r.call("classify", hostClassify, a.Append(nil))
	if err != nil {
		return nil, err
	}
	return abi.DecodeClasses(b)
}

// TokenCount is the host's token count of text.
func TokenCount(text string) (int, error) {
	return (*Request)(nil).TokenCount(text)
}

// TokenCount is the package's TokenCount for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) TokenCount(text string) (int, error) {
	a := abi.TextArgs{Text: text}
	b, err := r.call("token_count", hostTokenCount, a.Append(nil))
	if err != nil {
		return 0, err
	}
	d := abi.Decoder{B: b}
	n := d.U32()
	return int(n), d.Err()
}

// Now is the host's time in Unix nanoseconds.
func Now() (int64, error) {
	return (*Request)(nil).Now()
}

// Now is the package's Now for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) Now() (int64, error) {
	b, err := r.call("now", hostNow, nil)
	if err != nil {
		return 0, err
	}
	d := abi.Decoder{B: b}
	n := d.U64()
	return int64(n), d.Err()
}

// RetrieveArgs is a retrieve call: the source (a vector store's id or name,
// or a knowledge base's name), the query text, k (0: the source's default),
// min_score when HasMinScore is set (unset: a knowledge base's own applies)
// and an OpenAI-style attribute filter as JSON ("" for none).
type RetrieveArgs = abi.RetrieveArgs

// Retrieve returns the chunks of stored data most similar to a.Query, best
// first; the host embeds the query with the model the store was built with.
// Each hit's Payload is JSON {"text", "source" (the file's name), "file_id",
// "vector_store_id", "chunk_index", "attributes"}. A backend call: denied in
// preview; a probe reads no result cache. ErrUnavailable for an unknown
// source or a host without stored data.
func Retrieve(a RetrieveArgs) ([]VectorHit, error) {
	return (*Request)(nil).Retrieve(a)
}

// Retrieve is the package's Retrieve for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) Retrieve(a RetrieveArgs) ([]VectorHit, error) {
	b, err := r.call("retrieve", hostRetrieve, a.Append(nil))
	if err != nil {
		return nil, err
	}
	return ownHits(b)
}

// Recall returns up to k memories of scope most similar to query, scoring at
// least minScore, best first. Each hit's Payload is JSON {"id", "text",
// "created_at"}. A backend call: denied in preview.
func Recall(scope, query string, k int, minScore float32) ([]VectorHit, error) {
	return (*Request)(nil).Recall(scope, query, k, minScore)
}

// Recall is the package's Recall for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) Recall(scope, query string, k int, minScore float32) ([]VectorHit, error) {
	a := abi.MemoryRecallArgs{Scope: scope, Query: query, K: uint32(k), MinScore: minScore}
	b, err := r.call("memory_recall", hostMemoryRecall, a.Append(nil))
	if err != nil {
		return nil, err
	}
	return ownHits(b)
}

// Remember keeps text as a memory of scope. Live only: it persists.
func Remember(scope, text string) error {
	return (*Request)(nil).Remember(scope, text)
}

// Remember is the package's Remember for r's handler call: a plugin that may run
// natively (sdk.HandleHost) calls the request's host functions.
func (r *Request) Remember(scope, text string) error {
	a := abi.MemoryRememberArgs{Scope: scope, Text: text}
	_, err := r.call("memory_remember", hostMemoryRemember, a.Append(nil))
	return err
}

// ownHits decodes hits and copies their payloads out of the scratch buffer.
func ownHits(b []byte) ([]VectorHit, error) {
	h, err := abi.DecodeVectorHits(b)
	if err != nil {
		return nil, err
	}
	for i := range h {
		h[i].Payload = append([]byte(nil), h[i].Payload...)
	}
	return h, nil
}
