package storage

import (
	"errors"
	"testing"
)

func TestFilterMatch(t *testing.T) {
	attrs := map[string]any{"lang": "en", "year": 2024, "public": true}
	cases := []struct {
		filter string
		want   bool
	}{
		{`{"type":"eq","key":"lang","value":"en"}`, true},
		{`{"type":"eq","key":"lang","value":"de"}`, false},
		{`{"type":"ne","key":"lang","value":"de"}`, true},
		{`{"type":"ne","key":"missing","value":"x"}`, true},
		{`{"type":"gte","key":"year","value":2024}`, true},
		{`{"type":"gt","key":"year","value":2024}`, false},
		{`{"type":"lt","key":"year","value":2025.5}`, true},
		{`{"type":"lt","key":"lang","value":2025}`, false},
		{`{"type":"in","key":"lang","value":["de","en"]}`, true},
		{`{"type":"nin","key":"lang","value":["de","en"]}`, false},
		{`{"type":"eq","key":"public","value":true}`, true},
		{`{"type":"and","filters":[{"type":"eq","key":"lang","value":"en"},{"type":"lt","key":"year","value":2000}]}`, false},
		{`{"type":"or","filters":[{"type":"eq","key":"lang","value":"fr"},{"type":"gte","key":"year","value":2000}]}`, true},
	}
	for _, c := range cases {
		f, err := ParseFilter([]byte(c.filter))
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		if got := f.Match(attrs); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.filter, got, c.want)
		}
	}
}

func TestFilterRefusesMalformed(t *testing.T) {
	for _, bad := range []string{
		`[]`, `{"type":"like","key":"a","value":"b"}`, `{"type":"eq","value":"b"}`,
		`{"type":"in","key":"a","value":"b"}`, `{"type":"eq","key":"a","value":["b"]}`,
		`{"type":"and","filters":[]}`, `{"type":"eq","key":"a","value":{"x":1}}`,
	} {
		if _, err := ParseFilter([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", bad, err)
		}
	}
}
