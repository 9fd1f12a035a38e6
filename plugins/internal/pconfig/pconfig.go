// Package pconfig decodes a built-in plugin's configuration strictly: unknown
// fields and wrong types are errors naming the field ("configuration.top_k"),
// so that the recipe loader can point at the offending place in the document.
// The JSON Schema each plugin publishes says the same thing for tools; this
// package is what the guest itself enforces.
package pconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Error is a configuration the recipe must fix. Field is the path from the
// plugin reference ("configuration", "configuration.semantic.top_k").
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Field + " " + e.Message }

// FieldPath is the field within the plugin reference (the recipe loader turns
// it into a JSON pointer).
func (e *Error) FieldPath() string { return e.Field }

// Errorf builds an Error for a field below "configuration" ("" is the
// configuration itself).
func Errorf(field, format string, args ...any) *Error {
	p := "configuration"
	if field != "" {
		p += "." + field
	}
	return &Error{Field: p, Message: fmt.Sprintf(format, args...)}
}

// MaxBytes bounds a configuration document.
const MaxBytes = 1 << 20

// Decode fills dst (a pointer to a struct holding the defaults) from raw.
// Absent or null configuration keeps the defaults.
func Decode(raw []byte, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if len(raw) > MaxBytes {
		return Errorf("", "is %d bytes; the limit is %d", len(raw), MaxBytes)
	}
	if raw[0] != '{' {
		return Errorf("", "must be an object")
	}
	if err := closed(raw, reflect.TypeOf(dst), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Errorf(te.Field, "must be %s, not a JSON %s", kind(te.Type.Kind().String()), te.Value)
		}
		if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
			name := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
			return Errorf(name, "is not a field of this plugin's configuration (see its schema)")
		}
		return Errorf("", "is not valid JSON: %v", err)
	}
	if dec.More() {
		return Errorf("", "has trailing data after the object")
	}
	return nil
}

func kind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "of another type"
}

// closed reports the first member of raw (at path) that t, a struct type, has
// no field for; it descends into nested structs, slices of them and pointers.
// encoding/json's own unknown-field error does not say where the field is.
func closed(raw json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage {
		return nil // any JSON: the plugin checks it
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if string(raw) == "null" {
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		if raw[0] != '"' {
			return Errorf(path, "must be a string, not %s", jsonKind(raw))
		}
	case reflect.Bool:
		if raw[0] != 't' && raw[0] != 'f' {
			return Errorf(path, "must be a boolean, not %s", jsonKind(raw))
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		var n int64
		if json.Unmarshal(raw, &n) != nil {
			return Errorf(path, "must be an integer, not %s", jsonKind(raw))
		}
	case reflect.Float64:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return Errorf(path, "must be a number, not %s", jsonKind(raw))
		}
	case reflect.Slice:
		if raw[0] != '[' {
			return Errorf(path, "must be an array, not %s", jsonKind(raw))
		}
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return nil
		}
		for i, e := range elems {
			if err := closed(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if raw[0] != '{' {
			return Errorf(path, "must be an object, not %s", jsonKind(raw))
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			fields[name] = f.Type
			names = append(names, name)
		}
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := members[k]
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			ft, ok := fields[k]
			if !ok {
				return Errorf(sub, "is not a field here (fields: %s)", strings.Join(names, ", "))
			}
			if err := closed(v, ft, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

func jsonKind(raw []byte) string {
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
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return "an integer"
	}
	return "a number (" + string(raw) + ")"
}
