package plugintest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// FixtureFile is one request a plugin project's testdata holds, with what the
// plugin must do to it.
type FixtureFile struct {
	Name     string            `json:"name"`
	Mode     string            `json:"mode"`
	Config   json.RawMessage   `json:"config"`
	Decision string            `json:"decision"`
	Model    string            `json:"model"`
	Headers  map[string]string `json:"headers"`
	Signals  []string          `json:"signals"`
	PII      *PIIFixture       `json:"pii"`
	Request  json.RawMessage   `json:"request"`
	Expect   struct {
		Status            string              `json:"status"`
		DetailContains    string              `json:"detail_contains"`
		Request           json.RawMessage     `json:"request"`
		RequestContains   []string            `json:"request_contains"`
		RequestLacks      []string            `json:"request_lacks"`
		Headers           map[string][]string `json:"headers"`
		ImmediateContains string              `json:"immediate_contains"`
		BackendCalls      *int                `json:"backend_calls"`
		Values            map[string]string   `json:"values"`
	} `json:"expect"`
}

// CheckFixture runs f through h and says how the outcome differs from what
// f expects (nothing: it passed).
func CheckFixture(ctx context.Context, h *Harness, wasmBytes []byte, f *FixtureFile) []string {
	run, err := h.Run(ctx, wasmBytes, Case{Config: f.Config, Body: f.Request, Mode: f.Mode, Decision: f.Decision, Model: f.Model, Headers: f.Headers, Signals: f.Signals, PII: f.PII})
	if err != nil {
		return []string{err.Error()}
	}
	var p []string
	e := f.Expect
	want := e.Status
	if want == "" {
		want = "applied"
	}
	if run.Status != want {
		p = append(p, fmt.Sprintf("status %s, want %s (%s%s)", run.Status, want, run.Detail, run.Error))
	}
	if e.DetailContains != "" && !strings.Contains(run.Detail, e.DetailContains) {
		p = append(p, fmt.Sprintf("detail %q lacks %q", run.Detail, e.DetailContains))
	}
	if e.Request != nil && CanonicalJSON(run.Request) != CanonicalJSON(e.Request) {
		p = append(p, fmt.Sprintf("request after the plugin:\n        %s\n      want\n        %s", CanonicalJSON(run.Request), CanonicalJSON(e.Request)))
	}
	for _, s := range e.RequestContains {
		if !strings.Contains(string(run.Request), s) {
			p = append(p, fmt.Sprintf("request after the plugin lacks %q: %s", s, run.Request))
		}
	}
	for _, s := range e.RequestLacks {
		if strings.Contains(string(run.Request), s) {
			p = append(p, fmt.Sprintf("request after the plugin still holds %q", s))
		}
	}
	for k, v := range e.Headers {
		if got := run.Headers.Values(k); !reflect.DeepEqual(got, v) && !(len(got) == 0 && len(v) == 0) {
			p = append(p, fmt.Sprintf("header %s = %q, want %q", k, got, v))
		}
	}
	if e.ImmediateContains != "" && (run.Immediate == nil || !strings.Contains(run.Immediate.Content, e.ImmediateContains)) {
		p = append(p, fmt.Sprintf("no immediate answer containing %q (%+v)", e.ImmediateContains, run.Immediate))
	}
	if e.BackendCalls != nil && run.BackendCalls != *e.BackendCalls {
		p = append(p, fmt.Sprintf("backend_calls %d, want %d", run.BackendCalls, *e.BackendCalls))
	}
	for k, v := range e.Values {
		if run.Values[k] != v {
			p = append(p, fmt.Sprintf("value %s = %q, want %q", k, run.Values[k], v))
		}
	}
	return p
}

// CanonicalJSON re-encodes JSON with sorted keys and no spacing (raw as it
// is when it is not JSON).
func CanonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
