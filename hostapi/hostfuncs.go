package hostapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/junction-router/junction/hostapi/abi"
)

// callState is what the host functions know about the handler call they
// serve. It travels in the call's context; a host function called outside a
// handler call (from the reactor's initializer) finds none and answers
// unavailable.
type callState struct {
	// typ, config and limits are the binding's: a module's or a native
	// plugin's (NativeBinding).
	typ          string
	config       []byte
	limits       *Limits
	mode         abi.Mode
	hostCalls    int
	backendCalls int
	persisted    bool
	pending      []byte // an answer that did not fit, for junction.result
	// deadline is the call's deadline when the call's context does not carry
	// it (trusted calls); host functions run under it.
	deadline time.Time
	// pii is what the router's pii signals detected (nil: no scan).
	pii *abi.PIISpans
	// parent is the request's context, which a remote classify call runs
	// under instead of the call's deadline (RemoteClassifier); nil for an
	// interruptible module, whose deadline closes its instance.
	parent context.Context
	// remote is the time spent waiting for remote calls; it moved deadline
	// back by as much and is not counted against Limits.CallTimeout.
	remote time.Duration
}

type stateKey struct{}

// hostFunc serves one host function: in is the argument record (it aliases
// guest memory and must not be kept), the answer is written back by the
// caller.
type hostFunc func(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status)

var i32x5 = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}

// hostFuncs are the host functions by import name, the same for modules
// (serve) and native plugins (NativeBinding.Call).
func (h *Host) hostFuncs() map[string]hostFunc {
	return map[string]hostFunc{
		abi.ImportLog:            h.hostLog,
		abi.ImportConfig:         hostConfig,
		abi.ImportEmbed:          h.hostEmbed,
		abi.ImportVectorSearch:   h.hostVectorSearch,
		abi.ImportCacheLookup:    h.hostCacheLookup,
		abi.ImportCacheStore:     h.hostCacheStore,
		abi.ImportClassify:       h.hostClassify,
		abi.ImportTokenCount:     h.hostTokenCount,
		abi.ImportNow:            h.hostNow,
		abi.ImportResult:         hostResult,
		abi.ImportPIISpans:       hostPIISpans,
		abi.ImportRetrieve:       h.hostRetrieve,
		abi.ImportMemoryRecall:   h.hostMemoryRecall,
		abi.ImportMemoryRemember: h.hostMemoryRemember,
	}
}

func (h *Host) instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(abi.ImportModule)
	for _, name := range abi.Imports {
		fn := h.funcs[name]
		if fn == nil {
			return errors.New("no implementation of host function " + name)
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(serve(fn), i32x5, []api.ValueType{api.ValueTypeI32}).
			WithParameterNames("in_ptr", "in_len", "out_ptr", "out_cap", "out_len_ptr").
			Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// admit counts a host function call against the handler call's budget and
// checks the argument's size (n bytes): the same for a module's call (serve)
// and a native plugin's (NativeBinding).
func admit(st *callState, n int) abi.Status {
	st.hostCalls++
	if st.hostCalls > st.limits.MaxHostCalls || n > st.limits.MaxOutput {
		return abi.StatusLimit
	}
	return abi.StatusOK
}

// run runs an admitted host function under the call's deadline and checks
// the answer's size. in must not be kept by fn.
func run(ctx context.Context, st *callState, fn hostFunc, in []byte) ([]byte, abi.Status) {
	fctx := ctx
	if !st.deadline.IsZero() && !deadlineBy(ctx, st.deadline) {
		var cancel context.CancelFunc
		fctx, cancel = context.WithDeadline(ctx, st.deadline)
		defer cancel()
	}
	out, status := fn(fctx, st, in)
	if status != abi.StatusOK {
		return nil, status
	}
	if len(out) > st.limits.MaxOutput {
		return nil, abi.StatusLimit
	}
	return out, abi.StatusOK
}

// deadlineBy: ctx ends by t already (a native call's context carries the
// call's deadline), so a host function needs no context of its own, and no
// timer, for it.
func deadlineBy(ctx context.Context, t time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && !d.After(t)
}

// serve adapts a hostFunc to the ABI's calling convention.
func serve(fn hostFunc) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		status := func() abi.Status {
			st, _ := ctx.Value(stateKey{}).(*callState)
			if st == nil {
				return abi.StatusUnavailable
			}
			inPtr, inLen := uint32(stack[0]), uint32(stack[1])
			outPtr, outCap, outLenPtr := uint32(stack[2]), uint32(stack[3]), uint32(stack[4])
			if status := admit(st, int(inLen)); status != abi.StatusOK {
				return status
			}
			mem := mod.Memory()
			in, ok := mem.Read(inPtr, inLen)
			if !ok {
				return abi.StatusInvalidArgument
			}
			out, status := run(ctx, st, fn, in)
			if status != abi.StatusOK {
				return status
			}
			if !mem.WriteUint32Le(outLenPtr, uint32(len(out))) {
				return abi.StatusInvalidArgument
			}
			if uint32(len(out)) > outCap {
				st.pending = append(st.pending[:0], out...)
				return abi.StatusBufferTooSmall
			}
			if len(out) > 0 && !mem.Write(outPtr, out) {
				return abi.StatusInvalidArgument
			}
			return abi.StatusOK
		}()
		stack[0] = uint64(uint32(status))
	})
}

func hostResult(_ context.Context, st *callState, _ []byte) ([]byte, abi.Status) {
	if st.pending == nil {
		return nil, abi.StatusNotFound
	}
	out := st.pending
	st.pending = nil
	return out, abi.StatusOK
}

// hostPIISpans hands the guest the spans routing detected. It reads what the
// request already carries, so it is no backend call and works in every mode.
func hostPIISpans(_ context.Context, st *callState, _ []byte) ([]byte, abi.Status) {
	if st.pii == nil {
		return nil, abi.StatusUnavailable
	}
	return st.pii.Append(make([]byte, 0, st.pii.Size())), abi.StatusOK
}

func hostConfig(_ context.Context, st *callState, _ []byte) ([]byte, abi.Status) {
	return st.config, abi.StatusOK
}

const maxLogMessage = 1024

func (h *Host) hostLog(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeLogArgs(in)
	if err != nil {
		return nil, abi.StatusInvalidArgument
	}
	msg := a.Message
	if len(msg) > maxLogMessage {
		msg = msg[:maxLogMessage]
		for !utf8.ValidString(msg) && len(msg) > 0 {
			msg = msg[:len(msg)-1]
		}
	}
	level := slog.LevelInfo
	switch a.Level {
	case abi.LogDebug:
		level = slog.LevelDebug
	case abi.LogWarn:
		level = slog.LevelWarn
	case abi.LogError:
		level = slog.LevelError
	}
	if !mayAct(ctx) {
		return nil, abi.StatusDenied
	}
	h.log.Log(ctx, level, msg, "plugin", st.typ, "mode", st.mode.String())
	return nil, abi.StatusOK
}

func backendStatus(err error) abi.Status {
	switch {
	case errors.Is(err, ErrNoSuchStore), errors.Is(err, ErrNoSuchBinding):
		return abi.StatusUnavailable
	case errors.Is(err, ErrInvalidQuery):
		return abi.StatusInvalidArgument
	default:
		return abi.StatusBackendError
	}
}

func (h *Host) hostEmbed(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeTextArgs(in)
	if err != nil {
		return nil, abi.StatusInvalidArgument
	}
	v, status := h.embed(ctx, st, a.Text)
	if status != abi.StatusOK {
		return nil, status
	}
	return abi.Vector(v).Append(nil), abi.StatusOK
}

// embed is the embed host function on its argument and answer as Go
// values (hostEmbed for a module, HostCalls.EmbedVector natively). The
// vector may be the embedder's own: callers copy it before handing it on.
func (h *Host) embed(ctx context.Context, st *callState, text string) ([]float32, abi.Status) {
	if st.mode == abi.ModePreview {
		return nil, abi.StatusDenied
	}
	e := h.cfg.Backends.Embedder
	if e == nil {
		return nil, abi.StatusUnavailable
	}
	st.backendCalls++ // the mode allowed it (checked above)
	vs, err := e.Embed(ctx, []string{text})
	if err != nil || len(vs) != 1 {
		return nil, abi.StatusBackendError
	}
	return vs[0], abi.StatusOK
}

func (h *Host) hostVectorSearch(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeVectorSearchArgs(in)
	if err != nil || a.K == 0 {
		return nil, abi.StatusInvalidArgument
	}
	if st.mode == abi.ModePreview {
		return nil, abi.StatusDenied
	}
	v := h.cfg.Backends.Vectors
	if v == nil {
		return nil, abi.StatusUnavailable
	}
	st.backendCalls++ // the mode allowed it (checked above)
	hits, err := v.Search(ctx, a.Store, a.Query, int(min(a.K, maxHits)))
	if err != nil {
		return nil, backendStatus(err)
	}
	return abi.VectorHits(hits).Append(nil), abi.StatusOK
}

// maxHits bounds k of the search host functions.
const maxHits = 1000

// hostRetrieve searches stored data by text. A probe sets Fresh: it reads no
// result cache.
func (h *Host) hostRetrieve(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeRetrieveArgs(in)
	if err != nil || a.Source == "" || (a.HasMinScore && a.MinScore != a.MinScore) || (a.Filter != "" && !json.Valid([]byte(a.Filter))) {
		return nil, abi.StatusInvalidArgument
	}
	if st.mode == abi.ModePreview {
		return nil, abi.StatusDenied
	}
	r := h.cfg.Backends.Retriever
	if r == nil {
		return nil, abi.StatusUnavailable
	}
	st.backendCalls++ // the mode allowed it (checked above)
	q := RetrieveQuery{
		Source: a.Source, Text: a.Query, K: int(min(a.K, maxHits)),
		MinScore: a.MinScore, HasMinScore: a.HasMinScore,
		Fresh: st.mode != abi.ModeLive,
	}
	if a.Filter != "" {
		q.Filter = []byte(a.Filter)
	}
	hits, err := r.Retrieve(ctx, q)
	if err != nil {
		return nil, backendStatus(err)
	}
	return abi.VectorHits(hits).Append(nil), abi.StatusOK
}

func (h *Host) hostMemoryRecall(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeMemoryRecallArgs(in)
	if err != nil || a.K == 0 || a.Scope == "" || a.MinScore != a.MinScore {
		return nil, abi.StatusInvalidArgument
	}
	if st.mode == abi.ModePreview {
		return nil, abi.StatusDenied
	}
	m := h.cfg.Backends.Memory
	if m == nil {
		return nil, abi.StatusUnavailable
	}
	st.backendCalls++ // the mode allowed it (checked above)
	hits, err := m.Recall(ctx, a.Scope, a.Query, int(min(a.K, maxHits)), a.MinScore)
	if err != nil {
		return nil, backendStatus(err)
	}
	return abi.VectorHits(hits).Append(nil), abi.StatusOK
}

// hostMemoryRemember persists, so it is live only.
func (h *Host) hostMemoryRemember(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeMemoryRememberArgs(in)
	if err != nil || a.Scope == "" || a.Text == "" {
		return nil, abi.StatusInvalidArgument
	}
	if st.mode != abi.ModeLive {
		return nil, abi.StatusDenied
	}
	m := h.cfg.Backends.Memory
	if m == nil {
		return nil, abi.StatusUnavailable
	}
	if !mayAct(ctx) {
		return nil, abi.StatusDenied
	}
	st.backendCalls++ // the mode allowed it (checked above)
	if err := m.Remember(ctx, a.Scope, a.Text); err != nil {
		return nil, backendStatus(err)
	}
	st.persisted = true
	return nil, abi.StatusOK
}

// The response cache is used in live mode only: a probe uses no result cache
// and persists nothing, a preview touches no backend.
func (h *Host) hostCacheLookup(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeCacheLookupArgs(in)
	if err != nil {
		return nil, abi.StatusInvalidArgument
	}
	e, status := h.cacheLookup(ctx, st, &a)
	if status != abi.StatusOK {
		return nil, status
	}
	return e.Append(nil), abi.StatusOK
}

// cacheLookup is the cache_lookup host function on its argument and answer
// as Go values (hostCacheLookup for a module, HostCalls.CacheLookupVector
// natively). The entry's value may be the cache's own: callers copy it.
func (h *Host) cacheLookup(ctx context.Context, st *callState, a *abi.CacheLookupArgs) (abi.CacheEntry, abi.Status) {
	if st.mode != abi.ModeLive {
		return abi.CacheEntry{}, abi.StatusDenied
	}
	c := h.cfg.Backends.Cache
	if c == nil {
		return abi.CacheEntry{}, abi.StatusUnavailable
	}
	st.backendCalls++ // the mode allowed it (checked above)
	e, ok, err := c.Lookup(ctx, a.Namespace, a.Key, a.Embedding, a.Threshold)
	if err != nil {
		return abi.CacheEntry{}, abi.StatusBackendError
	}
	if !ok {
		return abi.CacheEntry{}, abi.StatusNotFound
	}
	return e, abi.StatusOK
}

func (h *Host) hostCacheStore(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeCacheStoreArgs(in)
	if err != nil {
		return nil, abi.StatusInvalidArgument
	}
	if st.mode != abi.ModeLive {
		return nil, abi.StatusDenied
	}
	c := h.cfg.Backends.Cache
	if c == nil {
		return nil, abi.StatusUnavailable
	}
	if !mayAct(ctx) {
		return nil, abi.StatusDenied
	}
	st.backendCalls++ // the mode allowed it (checked above)
	value := append([]byte(nil), a.Value...)
	if err := c.Store(ctx, a.Namespace, a.Key, value, time.Duration(a.TTLSeconds)*time.Second, a.Embedding); err != nil {
		return nil, abi.StatusBackendError
	}
	st.persisted = true
	return nil, abi.StatusOK
}

func (h *Host) hostClassify(ctx context.Context, st *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeClassifyArgs(in)
	if err != nil {
		return nil, abi.StatusInvalidArgument
	}
	if st.mode == abi.ModePreview {
		return nil, abi.StatusDenied
	}
	c := h.cfg.Backends.Classifier
	if c == nil {
		return nil, abi.StatusUnavailable
	}
	if rc, ok := c.(RemoteClassifier); ok {
		if t := rc.RemoteTimeout(a.Binding); t > 0 {
			if !mayAct(ctx) {
				return nil, abi.StatusDenied
			}
			if st.parent != nil {
				st.backendCalls++ // the mode allowed it (checked above)
				return remoteClassify(st, rc, t, a.Binding, a.Text)
			}
		}
	}
	st.backendCalls++ // the mode allowed it (checked above)
	classes, err := c.Classify(ctx, a.Binding, a.Text)
	if err != nil {
		return nil, backendStatus(err)
	}
	return abi.Classes(classes).Append(nil), abi.StatusOK
}

// remoteClassify runs a classify call on a remote binding under the
// request's context bounded by the binding's timeout, and moves the call's
// deadline back by the time it waited (RemoteClassifier).
func remoteClassify(st *callState, rc RemoteClassifier, t time.Duration, binding, text string) ([]byte, abi.Status) {
	ctx, cancel := context.WithTimeout(st.parent, t+remoteSlack)
	defer cancel()
	start := time.Now()
	classes, err := rc.Classify(ctx, binding, text)
	waited := time.Since(start)
	st.remote += waited
	st.deadline = st.deadline.Add(waited)
	if err != nil {
		return nil, backendStatus(err)
	}
	return abi.Classes(classes).Append(nil), abi.StatusOK
}

func (h *Host) hostTokenCount(_ context.Context, _ *callState, in []byte) ([]byte, abi.Status) {
	a, err := abi.DecodeTextArgs(in)
	if err != nil {
		return nil, abi.StatusInvalidArgument
	}
	var n int
	if t := h.cfg.Backends.Tokens; t != nil {
		n = t.CountTokens(a.Text)
	} else {
		n = ApproxTokens(a.Text)
	}
	e := abi.Encoder{}
	e.U32(uint32(n))
	return e.B, abi.StatusOK
}

func (h *Host) hostNow(_ context.Context, _ *callState, _ []byte) ([]byte, abi.Status) {
	if h.cfg.Backends.Clock == nil {
		return nil, abi.StatusUnavailable
	}
	e := abi.Encoder{}
	e.U64(uint64(h.cfg.Backends.Clock().UnixNano()))
	return e.B, abi.StatusOK
}

// ApproxTokens estimates a token count as OpenAI's rule of thumb does: about
// four bytes of English text per token, and at least one per word.
func ApproxTokens(s string) int {
	words, inWord := 0, false
	for _, r := range s {
		space := r == ' ' || r == '\n' || r == '\t' || r == '\r'
		if !space && !inWord {
			words++
		}
		inWord = !space
	}
	return max(words, (len(s)+3)/4)
}
