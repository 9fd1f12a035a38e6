package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/internal/tracing"
)

// traceRoute records routing under the span in ctx once it is done: the
// engine does no I/O and knows no tracer, so the spans are made from what
// its Result says, with their real timestamps. "route" spans Gen.Route;
// each evaluated signal is a child from the start of routing for its
// Elapsed (a kind's signals run concurrently, kinds side by side); the
// decision span covers what followed the slowest signal (rule evaluation,
// selection, reasoning).
func traceRoute(ctx context.Context, recipe string, start, end time.Time, res *engine.Result, err error) {
	ctx, route := tracing.Child(ctx, "route", trace.WithTimestamp(start))
	route.SetAttributes(tracing.Recipe.String(recipe))
	if err != nil {
		route.SetStatus(codes.Error, err.Error())
		route.End(trace.WithTimestamp(end))
		return
	}
	if res.Recipe != "" {
		route.SetAttributes(tracing.Recipe.String(res.Recipe))
	}
	last := start
	for i := range res.Signals {
		s := &res.Signals[i]
		sEnd := start.Add(s.Elapsed)
		if sEnd.After(end) {
			sEnd = end
		}
		if sEnd.After(last) {
			last = sEnd
		}
		_, sp := tracing.Child(ctx, "signal "+s.Kind+" "+s.Name, trace.WithTimestamp(start))
		attrs := make([]attribute.KeyValue, 0, 6)
		attrs = append(attrs, tracing.SignalKind.String(s.Kind), tracing.SignalName.String(s.Name),
			tracing.SignalMatched.Bool(s.Matched), tracing.SignalScore.Float64(s.Score))
		if s.Method != "" {
			attrs = append(attrs, tracing.SignalMethod.String(s.Method))
		}
		if s.Error != "" {
			attrs = append(attrs, tracing.SignalError.String(s.Error))
			sp.SetStatus(codes.Error, s.Error)
		}
		sp.SetAttributes(attrs...)
		sp.End(trace.WithTimestamp(sEnd))
	}
	name := "decision"
	if res.Decision != "" {
		name = "decision " + res.Decision
	}
	_, dec := tracing.Child(ctx, name, trace.WithTimestamp(last))
	attrs := []attribute.KeyValue{tracing.ReasonCode.String(res.ReasonCode), tracing.Confidence.Float64(res.Confidence),
		tracing.Blocked.Bool(res.Block != nil)}
	if res.Decision != "" {
		attrs = append(attrs, tracing.Decision.String(res.Decision))
	}
	if res.Model != "" {
		attrs = append(attrs, tracing.SelectedModel.String(res.Model))
	}
	if res.Selection != "" {
		attrs = append(attrs, tracing.SelectionMethod.String(res.Selection))
	}
	attrs = append(attrs, tracing.ReasoningEnabled.Bool(res.Reasoning.Enabled))
	dec.SetAttributes(attrs...)
	dec.End(trace.WithTimestamp(end))
	route.SetAttributes(attrs...)
	route.End(trace.WithTimestamp(end))
}

// TracedAnswer is what a model call's span reports of the answer: the
// GenAI conventions' response id, model, finish reasons and usage, and the
// answer's text only when content capture is on. It is read only once
// Trace was called: an untraced request parses nothing more.
type TracedAnswer struct {
	ID, Model     string
	FinishReasons []string
	Usage         *cost.Usage
	// Output is the answer's choices as JSON (a non-streamed answer) or its
	// streamed text, with content capture only.
	Output []byte
}

// Trace makes the exchange read what TracedAnswer reports from the answer
// as it passes (captureContent: its text too). A front end calls it when
// the model call's span records.
func (x *Exchange) Trace(captureContent bool) {
	x.trace = &answerTrace{content: captureContent}
}

// answerTrace is what Trace makes the exchange read.
type answerTrace struct {
	TracedAnswer
	content bool
}

// TracedAnswer is what was read of the answer since Trace.
func (x *Exchange) TracedAnswer() TracedAnswer {
	if x.trace == nil {
		return TracedAnswer{}
	}
	t := x.trace.TracedAnswer
	if t.Usage == nil {
		t.Usage = x.usage
	}
	return t
}

// answerSummary is the part of a chat.completion or chunk a span reports.
type answerSummary struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Delta        struct {
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *cost.Usage `json:"usage"`
}

// traceJSON reads a complete answer for the span.
func (x *Exchange) traceJSON(body []byte) {
	var s answerSummary
	if json.Unmarshal(body, &s) != nil {
		return
	}
	t := &x.trace.TracedAnswer
	t.ID, t.Model, t.Usage = s.ID, s.Model, s.Usage
	for _, c := range s.Choices {
		if c.FinishReason != nil {
			t.FinishReasons = append(t.FinishReasons, *c.FinishReason)
		}
	}
	if x.trace.content {
		var raw struct {
			Choices json.RawMessage `json:"choices"`
		}
		if json.Unmarshal(body, &raw) == nil {
			t.Output = bytes.Clone(raw.Choices)
		}
	}
}

// traceChunk reads one streamed chunk for the span.
func (x *Exchange) traceChunk(data []byte) {
	var s answerSummary
	if json.Unmarshal(data, &s) != nil {
		return
	}
	t := &x.trace.TracedAnswer
	if t.ID == "" {
		t.ID = s.ID
	}
	if t.Model == "" {
		t.Model = s.Model
	}
	for _, c := range s.Choices {
		if c.FinishReason != nil && *c.FinishReason != "" {
			t.FinishReasons = append(t.FinishReasons, *c.FinishReason)
		}
		if x.trace.content && c.Delta.Content != nil {
			t.Output = append(t.Output, *c.Delta.Content...)
		}
	}
}

// InputMessages is the request's messages as forwarded, for a span with
// content capture; nil before routing.
func (o *Outcome) InputMessages() []byte {
	if o.Chat == nil {
		return nil
	}
	return o.Chat.Fields["messages"]
}

// StartModelSpan begins the span of one call to the selected model (an
// upstream attempt: the gateway makes it, behind Envoy Envoy does) as a
// child of the span in ctx, with the GenAI conventions' request
// attributes, and makes the exchange read the answer for EndModelSpan.
// The span is nil, and ctx unchanged, when the span in ctx does not record.
// captureContent adds the request's messages (and later the answer).
func (x *Exchange) StartModelSpan(ctx context.Context, captureContent bool) (context.Context, trace.Span) {
	out := &x.Out
	if out.Model == nil || !tracing.Recording(ctx) {
		return ctx, nil
	}
	provider := ""
	if out.Backend != nil {
		provider = out.Backend.Provider
	}
	switch {
	case IsAnthropic(out.Model.APIFormat):
		provider = tracing.ProviderAnthropic
	case provider == "" || out.Backend != nil && IsDemo(out.Backend):
		provider = tracing.ProviderOpenAI // an OpenAI-compatible backend
	}
	attrs := []attribute.KeyValue{
		tracing.GenAIOperationName.String(tracing.OperationChat),
		tracing.GenAIProviderName.String(provider),
		tracing.GenAIRequestModel.String(out.Model.Name),
		tracing.Stream.Bool(out.Stream),
	}
	if out.Backend != nil && out.Backend.BaseURL != "" {
		attrs = append(attrs, tracing.Backend.String(out.Backend.BaseURL))
	}
	if u := out.Target; u != nil {
		attrs = append(attrs, tracing.ServerAddress.String(u.Hostname()))
		port := u.Port()
		if port == "" && u.Scheme == "https" {
			port = "443"
		} else if port == "" && u.Scheme == "http" {
			port = "80"
		}
		if n, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, tracing.ServerPort.Int(n))
		}
	}
	if captureContent {
		if m := out.InputMessages(); m != nil {
			attrs = append(attrs, tracing.GenAIInputMessages.String(string(m)))
		}
	}
	x.Trace(captureContent)
	return tracing.Child(ctx, tracing.OperationChat+" "+out.Model.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// EndModelSpan ends a model call's span (nil: nothing) with the backend's
// status (0: no answer), what was read of the answer and, for a failed
// call, errType (error.type; a status of 400 or more is one by itself).
func (x *Exchange) EndModelSpan(span trace.Span, status int, errType string) {
	if span == nil {
		return
	}
	a := x.TracedAnswer()
	attrs := make([]attribute.KeyValue, 0, 8)
	if status > 0 {
		attrs = append(attrs, tracing.HTTPResponseStatusCode.Int(status))
	}
	if a.ID != "" {
		attrs = append(attrs, tracing.GenAIResponseID.String(a.ID))
	}
	if a.Model != "" {
		attrs = append(attrs, tracing.GenAIResponseModel.String(a.Model))
	}
	if len(a.FinishReasons) > 0 {
		attrs = append(attrs, tracing.GenAIResponseFinish.StringSlice(a.FinishReasons))
	}
	if a.Usage != nil {
		attrs = append(attrs, tracing.GenAIUsageInputTokens.Int64(a.Usage.PromptTokens), tracing.GenAIUsageOutputTokens.Int64(a.Usage.CompletionTokens))
	}
	if a.Output != nil {
		attrs = append(attrs, tracing.GenAIOutputMessages.String(string(a.Output)))
	}
	if errType == "" && status >= 400 {
		errType = strconv.Itoa(status)
	}
	if errType != "" {
		attrs = append(attrs, tracing.ErrorType.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.SetAttributes(attrs...)
	span.End()
}
