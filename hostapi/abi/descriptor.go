package abi

import (
	"errors"
	"slices"
)

// Descriptor is what a module says about itself, returned as JSON by
// junction_descriptor:
//
//	{"abi_version":1, "type":"system_prompt", "version":"1.0.0",
//	 "description":"…", "phases":["request"],
//	 "config_schema":{…JSON Schema…},
//	 "operations":[{"name":"inject","kind":"mutation","description":"…"}]}
//
// The host checks every binding's configuration against config_schema (draft
// 2020-12) when a recipe is validated, and the plugin's own configuration
// check runs when an instance first reads it.
type Descriptor struct {
	ABIVersion  int         `json:"abi_version"`
	Type        string      `json:"type"`
	Version     string      `json:"version"`
	Description string      `json:"description,omitempty"`
	Phases      []string    `json:"phases"`
	Schema      RawJSON     `json:"config_schema"`
	Operations  []Operation `json:"operations"`
}

// Operation is something the plugin does, with its kind.
type Operation struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
}

// Operation kinds: read looks at the request only; preview works from
// supplied inputs without a backend; probe calls configured detectors or
// retrievers without persisting; mutation changes the request or answers it.
const (
	KindRead     = "read"
	KindPreview  = "preview"
	KindProbe    = "probe"
	KindMutation = "mutation"
)

// Phase names in a descriptor.
const (
	PhaseNameRequest  = "request"
	PhaseNameResponse = "response"
)

// RawJSON is a JSON value kept as its bytes.
type RawJSON []byte

// MarshalJSON returns r itself ("null" when empty).
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps a copy of the value's bytes.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	if r == nil {
		return errors.New("abi: RawJSON on nil pointer")
	}
	*r = append((*r)[:0], b...)
	return nil
}

// AppendJSON encodes d as JSON onto b without reflection, so a guest need not
// link encoding/json to describe itself. Schema is copied as it is and must
// be valid JSON.
func (d *Descriptor) AppendJSON(b []byte) []byte {
	b = append(b, `{"abi_version":`...)
	b = append(b, itoa(int64(d.ABIVersion))...)
	b = append(b, `,"type":`...)
	b = AppendJSONString(b, d.Type)
	b = append(b, `,"version":`...)
	b = AppendJSONString(b, d.Version)
	if d.Description != "" {
		b = append(b, `,"description":`...)
		b = AppendJSONString(b, d.Description)
	}
	b = append(b, `,"phases":[`...)
	for i, p := range d.Phases {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, p)
	}
	b = append(b, `],"config_schema":`...)
	if len(d.Schema) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, d.Schema...)
	}
	b = append(b, `,"operations":[`...)
	for i, o := range d.Operations {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = AppendJSONString(b, o.Name)
		b = append(b, `,"kind":`...)
		b = AppendJSONString(b, o.Kind)
		if o.Description != "" {
			b = append(b, `,"description":`...)
			b = AppendJSONString(b, o.Description)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string literal. Invalid UTF-8 is
// copied as it is (the host's JSON checks will refuse it).
func AppendJSONString(b []byte, s string) []byte {
	// Room for the quotes and a few escapes up front: appending piece by
	// piece to a short buffer would regrow it several times a call.
	b = slices.Grow(b, len(s)+len(s)/8+8)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
