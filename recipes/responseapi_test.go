package recipes

import (
	"testing"
	"time"
)

func TestResponseAPILoad(t *testing.T) {
	v := exampleValue(t)
	set(t, v, "/global/services/response_api", y(t, `{enabled: true, store: embedded, ttl: 2h, max_entries: 500, max_bytes: 10485760}`))
	doc, err := Parse(toJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	ttl, entries, bytes := doc.Global.Services.ResponseAPI.Limits()
	if ttl != 2*time.Hour || entries != 500 || bytes != 10<<20 {
		t.Fatalf("limits %s %d %d", ttl, entries, bytes)
	}
	for _, tt := range []struct {
		r       ResponseAPI
		ttl     time.Duration
		entries int
		bytes   int64
	}{
		{ResponseAPI{}, 24 * time.Hour, 10000, 256 << 20},
		{ResponseAPI{Store: "memory"}, 24 * time.Hour, 10000, 256 << 20},
		{ResponseAPI{Store: "sqlite"}, 24 * time.Hour, 100000, 1 << 30},
	} {
		if ttl, entries, bytes := tt.r.Limits(); ttl != tt.ttl || entries != tt.entries || bytes != tt.bytes {
			t.Errorf("%+v: defaults %s %d %d", tt.r, ttl, entries, bytes)
		}
	}
}

func TestResponseAPIProblems(t *testing.T) {
	const p = "/global/services/response_api"
	for _, tt := range []struct{ name, cfg, path, code, msg string }{
		{"unknown store", `{enabled: true, store: redis}`, p + "/store", CodeInvalidValue, "memory"},
		{"ttl too short", `{enabled: true, ttl: 10s}`, p + "/ttl", CodeInvalidValue, "must be from 1m0s"},
		{"ttl too long", `{enabled: true, ttl: 10000h}`, p + "/ttl", CodeInvalidValue, "8760h0m0s"},
		{"negative entries", `{enabled: true, max_entries: -1}`, p + "/max_entries", "", ""},
		{"tiny bytes", `{enabled: true, max_bytes: 1000}`, p + "/max_bytes", CodeInvalidValue, "1 MiB"},
		{"unknown field", `{enabled: true, max_entry: 5}`, p + "/max_entry", CodeUnknownField, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			set(t, v, p, y(t, tt.cfg))
			_, err := Parse(toJSON(t, v))
			if tt.code == "" {
				if err == nil {
					t.Fatalf("%s accepted", tt.cfg)
				}
				ve, ok := AsValidationError(err)
				if !ok || len(ve.Problems) == 0 || ve.Problems[0].Path != tt.path {
					t.Fatalf("%s: %v, want a problem at %s", tt.cfg, err, tt.path)
				}
				return
			}
			assertProblem(t, err, tt.path, tt.code, tt.msg)
		})
	}
}
