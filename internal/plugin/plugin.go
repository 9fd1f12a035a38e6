// Package plugin is the plugin stage of Junction's request pipeline: after a
// decision is chosen, the plugins it lists run in order, each returning
// mutations (messages, top-level body fields, upstream headers) or an immediate
// answer; the stage applies them. A plugin only reads the request and describes
// changes; it never edits the request itself, so every change goes through one
// place that keeps the body, its parsed view and the headers consistent.
//
// Every plugin is a module: a sandboxed WebAssembly module run by the hostapi
// package, or one of the built-in plugins that call no host function compiled
// natively from the same code as its guest (package internal/plugin/native).
// Both answer with the ABI's result record (hostapi/abi), so a plugin's
// mutations are the same either way; this package holds no plugin behaviour
// of its own. A type no module implements reports "unavailable", and the
// reference's on_error decides whether the request goes on without it.
//
// What must not happen here: no I/O of any kind (no network, files, clock-based
// behaviour, logging or global state a request can change), no calls to
// backends, and no change to the request other than the mutations a plugin
// returns. The stage is the same in live, probe and preview modes; the modes
// only change what the host lets a module reach.
package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/recipes"
)

// Request is what the plugin stage works on. Chat and Header are changed in
// place by the mutations the plugins return.
type Request struct {
	// Chat is the parsed request body. Its Fields are what is sent upstream.
	Chat *chat.Request
	// Header is the upstream request's headers; header_mutation edits it (and
	// creates it when nil).
	Header http.Header
	// Decision is the matched decision's name; Model the selected model, if
	// any; Recipe the recipe the decision belongs to.
	Decision, Model, Recipe string
	// Mode is live, probe or preview; empty means live.
	Mode string
	// Signals are the signals that matched (module plugins read them).
	Signals []Signal
	// PII is where the personal data routing detected is (LocatePII builds it
	// from the routing result); nil when no pii signal scanned the request.
	// Module plugins read it through the pii_spans host function. The stage
	// keeps it in step with message edits.
	PII *abi.PIISpans
}

// Modes of a request.
const (
	ModeLive    = "live"
	ModeProbe   = "probe"
	ModePreview = "preview"
)

// Immediate is an answer given without calling a backend.
type Immediate struct {
	Status  int
	Content string
	// ToolCalls, when set, is the assistant message's tool_calls (a JSON
	// array); the answer finishes with reason tool_calls.
	ToolCalls json.RawMessage
	// Model is the model name the answer reports.
	Model string
}

// Report says what one plugin did: Status is applied, skipped, failed or
// unavailable; Detail says why or what changed.
type Report struct {
	Type, Status, Detail string
	// Module is set for a plugin run by the module host.
	Module *ModuleReport
}

// ModuleReport is what the module host adds to a module plugin's report: the
// mode it ran in, the backend calls it counted, whether anything was written
// that outlives the request, and the plugin's report values.
type ModuleReport struct {
	Mode         string            `json:"mode"`
	BackendCalls int               `json:"backend_calls"`
	Persisted    bool              `json:"persisted"`
	Values       map[string]string `json:"values,omitempty"`
}

// Report statuses.
const (
	StatusApplied     = "applied"
	StatusSkipped     = "skipped"
	StatusFailed      = "failed"
	StatusUnavailable = "unavailable"
)

// Outcome is the stage's result: an immediate answer if a plugin gave one, one
// report per plugin reference in order, and the response-cache status (empty
// when no cache plugin ran; the response_cache plugin sets hit or miss).
type Outcome struct {
	Immediate   *Immediate
	Reports     []Report
	CacheStatus string
}

// Runner runs a decision's plugins on a request.
type Runner interface {
	Request(ctx context.Context, refs []recipes.PluginRef, req *Request) (Outcome, error)
}

// Types are the plugin types a recipe may name, sorted: the built-in ones
// (plugins/builtin) and those planned. A stage runs the types its Modules
// implement and reports the others unavailable.
var Types = []string{
	"context_compression", "fast_response", "hallucination", "header_mutation", "memory", "rag",
	"request_params", "response_cache", "response_jailbreak", "router_replay", "shadow_dispatch",
	"system_prompt", "tool_selection", "tools",
}

func unavailableDetail(typ string) string {
	return fmt.Sprintf("the %s plugin needs the WebAssembly plugin runtime, which is not built yet", typ)
}

// step is one plugin reference made ready to run.
type step struct {
	typ     string
	onError string // skip or fail
	inst    instance
	err     error // the configuration could not be compiled
	// unavailable: the type needs the wasm runtime.
	unavailable bool
}

// run executes steps in order on req. On error the outcome so far (with the
// failing plugin's report) is returned along with it.
func run(ctx context.Context, n int, at func(int) step, req *Request) (Outcome, error) {
	if req == nil {
		return Outcome{}, fmt.Errorf("plugin stage: no request")
	}
	switch req.Mode {
	case "", ModeLive, ModeProbe, ModePreview:
	default:
		return Outcome{}, fmt.Errorf("plugin stage: unknown mode %q (want live, probe or preview)", req.Mode)
	}
	var out Outcome
	if n == 0 {
		return out, nil
	}
	// The reports and their module parts, in one allocation for a short
	// stage; mods never grows past n, so pointers into it stay put.
	var mods []ModuleReport
	if n <= len(stageReports{}.reports) {
		b := new(stageReports)
		out.Reports, mods = b.reports[:0:n], b.modules[:0:n]
	} else {
		out.Reports, mods = make([]Report, 0, n), make([]ModuleReport, 0, n)
	}
	var rec record
	defer rec.release()
	answeredBy := -1
	for i := 0; i < n; i++ {
		s := at(i)
		if answeredBy >= 0 {
			out.Reports = append(out.Reports, Report{Type: s.typ, Status: StatusSkipped,
				Detail: fmt.Sprintf("not run: plugin %d (%s) answered the request", answeredBy, out.Reports[answeredBy].Type)})
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("plugin stage of decision %q: %w", req.Decision, err)
		}
		if s.onError != recipes.OnErrorSkip && s.onError != recipes.OnErrorFail {
			out.Reports = append(out.Reports, Report{Type: s.typ, Status: StatusFailed, Detail: s.err.Error()})
			return out, fmt.Errorf("plugin %d (%s) of decision %q: %w", i, s.typ, req.Decision, s.err)
		}
		if s.unavailable {
			detail := unavailableDetail(s.typ)
			out.Reports = append(out.Reports, Report{Type: s.typ, Status: StatusUnavailable, Detail: detail})
			if s.onError == recipes.OnErrorFail {
				return out, fmt.Errorf("plugin %d (%s) of decision %q is unavailable (on_error: fail): %s", i, s.typ, req.Decision, detail)
			}
			continue
		}
		var m *mutations
		var mr *ModuleResult
		err := s.err
		span := noSpan
		if err == nil {
			cctx := ctx
			if tracing.Recording(ctx) {
				cctx, span = tracing.Child(ctx, "plugin "+s.typ, trace.WithAttributes(tracing.PluginType.String(s.typ),
					tracing.PluginPhase.String("request"), tracing.PluginMode.String(modeOf(req))))
			}
			if m, mr, err = call(cctx, s.inst, req, &rec); err == nil {
				if err = apply(req, m); err == nil {
					rec.changed(m)
				}
			}
		}
		if err != nil {
			rep := Report{Type: s.typ, Status: StatusFailed, Detail: err.Error()}
			if mr != nil {
				rep.Module = &ModuleReport{Mode: modeOf(req), BackendCalls: mr.BackendCalls, Persisted: mr.Persisted}
			}
			endPluginSpan(span, StatusFailed, err)
			out.Reports = append(out.Reports, rep)
			if s.onError == recipes.OnErrorFail {
				return out, fmt.Errorf("plugin %d (%s) of decision %q failed (on_error: fail): %w", i, s.typ, req.Decision, err)
			}
			continue
		}
		status := StatusApplied
		if m.skipped {
			status = StatusSkipped
		}
		rep := Report{Type: s.typ, Status: status, Detail: m.detail}
		if mr != nil {
			mods = mods[:len(mods)+1]
			rep = moduleReportIn(&mods[len(mods)-1], s.typ, mr, req.Mode)
			rep.Status = status
		}
		endPluginSpan(span, status, nil)
		out.Reports = append(out.Reports, rep)
		if m.cacheStatus != "" {
			out.CacheStatus = m.cacheStatus
		}
		if m.immediate != nil {
			out.Immediate = m.immediate
			answeredBy = i
		}
	}
	return out, nil
}

// stageReports is the storage of a short stage's reports (see run).
type stageReports struct {
	reports [4]Report
	modules [4]ModuleReport
}

// call runs one plugin, turning a native plugin's panic into that plugin's
// failure the way the wasm host turns a trap into one. mr is set for a
// module plugin.
func call(ctx context.Context, inst instance, req *Request, rec *record) (m *mutations, mr *ModuleResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("the plugin panicked: %v", r)
		}
	}()
	if mi, ok := inst.(*moduleInstance); ok {
		m, mr, err = mi.runContext(ctx, req, rec)
	} else {
		m, err = inst.run(req)
	}
	if err == nil && m == nil {
		err = fmt.Errorf("the plugin returned no result")
	}
	return m, mr, err
}

func modeOf(req *Request) string {
	if req.Mode == "" {
		return ModeLive
	}
	return req.Mode
}

// noSpan stands for a plugin call's span when tracing is off.
var noSpan trace.Span = noop.Span{}

// endPluginSpan ends a plugin call's span with its report status (the span
// records nothing when tracing is off).
func endPluginSpan(span trace.Span, status string, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.PluginStatus.String(status))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
