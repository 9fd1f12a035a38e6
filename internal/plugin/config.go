package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ConfigError is a plugin reference the configuration must fix. Field is the
// path inside the reference: "type", "on_error", or "configuration" followed by
// the field ("configuration.add[1].name"), so validation can turn it into a
// JSON pointer.
type ConfigError struct {
	Type    string
	Field   string
	Message string
}

// FieldPath returns the offending field within the plugin reference, so that
// configuration validation can point at it.
func (e *ConfigError) FieldPath() string { return e.Field }

func (e *ConfigError) Error() string {
	name := e.Type
	if name == "" {
		name = "a"
	}
	if e.Field == "" {
		return fmt.Sprintf("%s plugin: %s", name, e.Message)
	}
	return fmt.Sprintf("%s plugin: %s %s", name, e.Field, e.Message)
}

// object is one JSON object of a plugin configuration being decoded strictly:
// every member must be claimed by one of the typed getters, and check reports
// any that was not.
type object struct {
	typ     string
	path    string // "configuration" or "configuration.add[0]"
	members map[string]json.RawMessage
	known   []string
}

func decodeObject(typ, path string, raw json.RawMessage) (*object, error) {
	raw = bytes.TrimSpace(raw)
	o := &object{typ: typ, path: path}
	if isNull(raw) {
		return o, nil
	}
	if raw[0] != '{' {
		return nil, o.errf("", "must be an object, not %s", jsonKind(raw))
	}
	if err := json.Unmarshal(raw, &o.members); err != nil {
		return nil, o.errf("", "is not valid JSON: %v", err)
	}
	return o, nil
}

func (o *object) errf(field, format string, args ...any) *ConfigError {
	p := o.path
	if field != "" {
		p += "." + field
	}
	return &ConfigError{Type: o.typ, Field: p, Message: fmt.Sprintf(format, args...)}
}

// get claims field and returns its raw value; nil when absent or null.
func (o *object) get(field string) json.RawMessage {
	o.known = append(o.known, field)
	raw, ok := o.members[field]
	if !ok || isNull(raw) {
		return nil
	}
	return raw
}

// check reports a member no getter claimed.
func (o *object) check() error {
	var unknown []string
	for k := range o.members {
		if !slices.Contains(o.known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return o.errf(unknown[0], "is not a field of the %s configuration (fields: %s)", o.typ, strings.Join(o.known, ", "))
}

func (o *object) str(field string, dst *string) error {
	raw := o.get(field)
	if raw == nil {
		return nil
	}
	if raw[0] != '"' {
		return o.errf(field, "must be a string, not %s", jsonKind(raw))
	}
	return json.Unmarshal(raw, dst)
}

func (o *object) boolean(field string, dst **bool) error {
	raw := o.get(field)
	if raw == nil {
		return nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return o.errf(field, "must be a boolean, not %s", jsonKind(raw))
	}
	*dst = &b
	return nil
}

func (o *object) integer(field string, dst **int64) error {
	raw := o.get(field)
	if raw == nil {
		return nil
	}
	n, ok := parseInt(raw)
	if !ok {
		return o.errf(field, "must be an integer, not %s", jsonKind(raw))
	}
	*dst = &n
	return nil
}

func (o *object) strings(field string, dst *[]string) error {
	raw := o.get(field)
	if raw == nil {
		return nil
	}
	if raw[0] != '[' {
		return o.errf(field, "must be an array of strings, not %s", jsonKind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return o.errf(field, "is not valid JSON: %v", err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		if len(it) == 0 || it[0] != '"' {
			return o.errf(fmt.Sprintf("%s[%d]", field, i), "must be a string, not %s", jsonKind(it))
		}
		if err := json.Unmarshal(it, &out[i]); err != nil {
			return o.errf(fmt.Sprintf("%s[%d]", field, i), "is not a valid string")
		}
	}
	*dst = out
	return nil
}

func (o *object) objects(field string) ([]*object, error) {
	raw := o.get(field)
	if raw == nil {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, o.errf(field, "must be an array of objects, not %s", jsonKind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, o.errf(field, "is not valid JSON: %v", err)
	}
	out := make([]*object, len(items))
	for i, it := range items {
		sub, err := decodeObject(o.typ, fmt.Sprintf("%s.%s[%d]", o.path, field, i), it)
		if err != nil {
			return nil, err
		}
		if isNull(it) {
			return nil, sub.errf("", "must be an object, not null")
		}
		out[i] = sub
	}
	return out, nil
}

// parseInt reads a JSON number that is a whole number (4096 or 4096.0) within int64.
func parseInt(raw []byte) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	if n, ok := plainInt(raw); ok {
		return n, true
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, true
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if _, ok := parseInt(raw); ok {
		return "an integer"
	}
	return "a number (" + string(raw) + ")"
}

// plainInt reads an optionally negative run of at most 18 digits, the common
// case, without reflection.
func plainInt(raw []byte) (int64, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		n = -n
	}
	return n, true
}
