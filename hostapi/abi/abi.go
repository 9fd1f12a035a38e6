// Package abi is the contract between Junction's plugin host and a plugin
// module: the ABI version, the names and signatures of the functions a module
// exports and imports, the status codes, and the binary records that cross
// the boundary (the request a handler reads, the result it returns, the
// arguments and answers of each host function, the descriptor).
//
// It is shared by both sides: the host (package hostapi) encodes requests and
// decodes results with it, and the Go SDK (package sdk) does the opposite
// inside a guest compiled with GOOS=wasip1 GOARCH=wasm. It must therefore stay
// free of dependencies beyond the standard library's smallest packages
// (no reflection-heavy encoding, no I/O, no runtime state), so that it costs a
// guest little to import. docs/plugin-abi.md describes the same contract for
// authors writing plugins in Rust, C or Zig.
//
// # Compatibility
//
// Version is raised whenever a record's layout or a function's signature
// changes incompatibly; the host refuses a module whose
// junction_abi_version differs from Version. Additions that old guests can
// ignore (a new host function, a new mutation op that old guests never send,
// a new descriptor field) keep the version and raise Revision instead.
package abi

// Version is the ABI version this package describes.
const Version = 1

// Revision counts the additions made to Version that old modules can ignore.
// A module that uses an addition imports a host function an older host does
// not have, and that host refuses it at load time naming the function;
// modules built for an older revision run unchanged on a newer host.
//
//	0  the first release of version 1
//	1  pii_spans: the personal-data spans the router detected
//	2  retrieve, memory_recall, memory_remember: stored data
//	3  an immediate answer may call tools (result flag bit 3, tool_calls);
//	   a host of an older revision fails the step of a module that sends one
const Revision = 3

// ImportModule is the module name under which the host exports its functions
// to guests.
const ImportModule = "junction"

// Guest exports. Pointers and lengths are i32 offsets and byte counts in the
// guest's exported memory "memory".
const (
	// ExportABIVersion: () -> i32. Returns Version.
	ExportABIVersion = "junction_abi_version"
	// ExportAlloc: (size i32) -> ptr i32. Returns a guest-owned buffer of at
	// least size bytes that the host fills before the next handler call. The
	// buffer stays the guest's: the host writes it only before the call it was
	// allocated for, and the guest may reuse it afterwards.
	ExportAlloc = "junction_alloc"
	// ExportDescriptor: () -> i64. Returns ptr<<32 | len of the descriptor
	// (JSON, see Descriptor), valid until the next call into the guest.
	ExportDescriptor = "junction_descriptor"
	// ExportOnRequest: (ptr i32, len i32) -> i64. Reads a Request record at
	// ptr (phase request) and returns ptr<<32 | len of a Result record, valid
	// until the next call into the guest.
	ExportOnRequest = "junction_on_request"
	// ExportOnResponse: (ptr i32, len i32) -> i64. As ExportOnRequest, for
	// the response phase (Request.Phase is PhaseResponse). Optional: a module
	// without it has no response phase.
	ExportOnResponse = "junction_on_response"
	// ExportInitialize is the WASI reactor initializer; the host calls it
	// once per instance before anything else when the module exports it.
	ExportInitialize = "_initialize"
)

// Host imports, in module ImportModule. Every one has the same signature:
//
//	(in_ptr i32, in_len i32, out_ptr i32, out_cap i32, out_len_ptr i32) -> status i32
//
// The argument record is read from guest memory [in_ptr, in_ptr+in_len). The
// answer record is written to [out_ptr, out_ptr+out_cap) and its length as a
// little-endian u32 at out_len_ptr. When the answer does not fit, the status
// is StatusBufferTooSmall, out_len_ptr receives the size needed and the host
// keeps the answer: call ImportResult with a large enough buffer to fetch it
// (the work, and any backend call, is not repeated). Each function's argument
// and answer records are described next to its name.
const (
	// ImportLog: in = LogArgs; out = nothing.
	ImportLog = "log"
	// ImportConfig: in = nothing; out = the binding's configuration, raw JSON
	// bytes ("{}" when the recipe gives none).
	ImportConfig = "config"
	// ImportEmbed: in = EmbedArgs; out = Vector. A backend call (live, probe).
	ImportEmbed = "embed"
	// ImportVectorSearch: in = VectorSearchArgs; out = VectorHits. A backend
	// call (live, probe).
	ImportVectorSearch = "vector_search"
	// ImportCacheLookup: in = CacheLookupArgs; out = CacheEntry, or
	// StatusNotFound on a miss. Live only: a probe uses no result cache.
	ImportCacheLookup = "cache_lookup"
	// ImportCacheStore: in = CacheStoreArgs; out = nothing. Live only: it
	// persists.
	ImportCacheStore = "cache_store"
	// ImportClassify: in = ClassifyArgs; out = Classes. A backend call
	// (live, probe).
	ImportClassify = "classify"
	// ImportTokenCount: in = TextArgs; out = u32 count. Local, every mode.
	ImportTokenCount = "token_count"
	// ImportNow: in = nothing; out = u64 Unix time in nanoseconds. Every mode.
	ImportNow = "now"
	// ImportResult: in = nothing; out = the answer the previous host call
	// kept because it did not fit (StatusNotFound when there is none).
	ImportResult = "result"
	// ImportPIISpans: in = nothing; out = PIISpans, the personal data the
	// router's pii signals detected in the request, placed in its messages.
	// StatusUnavailable when no pii signal scanned the request (none is
	// configured or referenced, or this is the response phase). Every mode:
	// it reads what routing already computed. Revision 1.
	ImportPIISpans = "pii_spans"
	// ImportRetrieve: in = RetrieveArgs; out = VectorHits, the chunks of a
	// stored vector store or knowledge base most similar to a text (the host
	// embeds it with the model the store was built with). A backend call
	// (live, probe); a probe bypasses the host's result cache. Revision 2.
	ImportRetrieve = "retrieve"
	// ImportMemoryRecall: in = MemoryRecallArgs; out = VectorHits, the
	// memories of a scope most similar to a text. A backend call (live,
	// probe). Revision 2.
	ImportMemoryRecall = "memory_recall"
	// ImportMemoryRemember: in = MemoryRememberArgs; out = nothing. Live
	// only: it persists. Revision 2.
	ImportMemoryRemember = "memory_remember"
)

// Imports lists every host function a module may import from ImportModule.
var Imports = []string{
	ImportLog, ImportConfig, ImportEmbed, ImportVectorSearch, ImportCacheLookup,
	ImportCacheStore, ImportClassify, ImportTokenCount, ImportNow, ImportResult,
	ImportPIISpans, ImportRetrieve, ImportMemoryRecall, ImportMemoryRemember,
}

// Status is a host function's result code.
type Status int32

// Status codes returned by every host function.
const (
	StatusOK Status = 0
	// StatusNotFound: a cache miss; ImportResult with nothing kept.
	StatusNotFound Status = 1
	// StatusBufferTooSmall: the answer did not fit out_cap; its size is at
	// out_len_ptr and ImportResult returns it.
	StatusBufferTooSmall Status = 2
	// StatusInvalidArgument: the argument record is malformed or out of
	// bounds, or names something the binding does not have.
	StatusInvalidArgument Status = 3
	// StatusDenied: the call is not allowed in the request's mode (a backend
	// call in preview, a cache write in probe). The plugin should carry on
	// without it or report what it would have done.
	StatusDenied Status = 4
	// StatusUnavailable: the host has no backend for this function (no
	// embedder, no such vector store, no classifier binding).
	StatusUnavailable Status = 5
	// StatusBackendError: the backend failed or ran past the call's deadline.
	StatusBackendError Status = 6
	// StatusLimit: a limit of the binding was reached (argument or answer too
	// large, too many host calls in one handler call).
	StatusLimit Status = 7
)

var statusNames = [...]string{"ok", "not_found", "buffer_too_small", "invalid_argument", "denied", "unavailable", "backend_error", "limit"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status_" + itoa(int64(s))
}

// Mode is how much a plugin may do: Live serves traffic; Probe may call
// configured detectors, embedders and retrievers but persists nothing and
// uses no result cache; Preview calls no backend at all and works only from
// what the request supplies. The host sets the mode; a plugin cannot raise it.
type Mode uint8

// Modes.
const (
	ModeLive    Mode = 1
	ModeProbe   Mode = 2
	ModePreview Mode = 3
)

func (m Mode) String() string {
	switch m {
	case ModeLive:
		return "live"
	case ModeProbe:
		return "probe"
	case ModePreview:
		return "preview"
	}
	return "mode_" + itoa(int64(m))
}

// ParseMode reads "live", "probe" or "preview"; "" is live.
func ParseMode(s string) (Mode, bool) {
	switch s {
	case "", "live":
		return ModeLive, true
	case "probe":
		return ModeProbe, true
	case "preview":
		return ModePreview, true
	}
	return 0, false
}

// Phase says which handler a Request is for.
type Phase uint8

// Phases.
const (
	PhaseRequest  Phase = 1
	PhaseResponse Phase = 2
)

// Log levels for LogArgs.
const (
	LogDebug uint32 = 0
	LogInfo  uint32 = 1
	LogWarn  uint32 = 2
	LogError uint32 = 3
)

// Pack joins a pointer and a length into a handler's i64 result.
func Pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// Unpack splits a handler's i64 result into pointer and length.
func Unpack(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	if neg {
		v = -v
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
