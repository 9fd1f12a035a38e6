package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-router/junction/recipes"
)

func TestHostSideTypes(t *testing.T) {
	n := New(nil)
	for _, tc := range []struct {
		typ, config, mode, status, detail string
	}{
		{"router_replay", `{}`, ModeLive, StatusApplied, "kept after the response"},
		{"router_replay", `{"record_prompt":true,"sample_rate":0.5}`, ModeLive, StatusApplied, "routing input"},
		{"router_replay", `{}`, ModePreview, StatusSkipped, "records and sends nothing"},
		{"router_replay", `{}`, ModeProbe, StatusSkipped, "records and sends nothing"},
		{"router_replay", `{"enabled":false}`, ModeLive, StatusSkipped, "disabled"},
		{"shadow_dispatch", `{"model":"m"}`, ModeLive, StatusApplied, "a copy goes to m"},
		{"shadow_dispatch", `{"model":"m"}`, ModePreview, StatusSkipped, "records and sends nothing"},
	} {
		ref := recipes.PluginRef{Type: tc.typ, Configuration: json.RawMessage(tc.config)}
		if err := n.Validate(ref); err != nil {
			t.Fatalf("%s %s: %v", tc.typ, tc.config, err)
		}
		out, err := n.Request(context.Background(), []recipes.PluginRef{ref}, &Request{Mode: tc.mode})
		if err != nil || len(out.Reports) != 1 {
			t.Fatalf("%s: %v %+v", tc.typ, err, out)
		}
		if r := out.Reports[0]; r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
			t.Errorf("%s %s in %s: %s %q, want %s containing %q", tc.typ, tc.config, tc.mode, r.Status, r.Detail, tc.status, tc.detail)
		}
	}
	for _, bad := range []struct{ typ, config, field string }{
		{"router_replay", `{"sample_rate":2}`, "sample_rate"},
		{"router_replay", `{"max_records":0}`, "max_records"},
		{"router_replay", `{"nope":1}`, "nope"},
		{"router_replay", `{"record_prompt":"yes"}`, "record_prompt"},
		{"router_replay", `[1]`, "configuration"},
		{"shadow_dispatch", `{}`, "model"},
		{"shadow_dispatch", `{"model":"m","timeout_ms":0}`, "timeout_ms"},
	} {
		err := n.Validate(recipes.PluginRef{Type: bad.typ, Configuration: json.RawMessage(bad.config)})
		var fe interface{ FieldPath() string }
		if err == nil || !asFieldPath(err, &fe) || !strings.HasSuffix(fe.FieldPath(), bad.field) {
			t.Errorf("%s %s: got %v, want an error about %s", bad.typ, bad.config, err, bad.field)
		}
	}
}

func asFieldPath(err error, fe *interface{ FieldPath() string }) bool {
	f, ok := err.(interface{ FieldPath() string })
	if ok {
		*fe = f
	}
	return ok
}
