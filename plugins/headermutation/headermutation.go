// Package headermutation is the built-in header_mutation plugin: it edits the
// upstream request headers. add appends a value (keeping values already
// there), update sets the header to one value (adding it when absent), delete
// removes it. A header may appear in only one of the three lists (several add
// entries for one name append several values). Hop-by-hop headers, Host,
// Content-Length and Authorization cannot be changed. The report names the
// headers changed, never their values. internal/plugin/native runs this same
// code natively.
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O.
package headermutation

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "header_mutation"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Pair is one header name and value.
type Pair struct {
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// Config is the plugin's configuration.
type Config struct {
	Add    []Pair   `json:"add,omitempty"`
	Update []Pair   `json:"update,omitempty"`
	Delete []string `json:"delete,omitempty"`

	ops    []Op
	detail string
}

// OpKind is what an Op does.
type OpKind uint8

// Op kinds.
const (
	Add OpKind = iota + 1
	Set
	Remove
)

// Op is one header change; Name is canonical.
type Op struct {
	Kind        OpKind
	Name, Value string
}

// ParseConfig decodes and checks a configuration, and plans the changes
// (they are the same for every request).
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	where := map[string]string{}
	var added, set, removed []string
	for _, list := range []struct {
		name  string
		kind  OpKind
		pairs []Pair
	}{{"add", Add, c.Add}, {"update", Set, c.Update}} {
		for i, p := range list.pairs {
			at := fmt.Sprintf("%s[%d]", list.name, i)
			if p.Value == nil {
				return nil, pconfig.Errorf(at+".value", "is required")
			}
			canon, err := checkName(at+".name", p.Name)
			if err != nil {
				return nil, err
			}
			if !abi.ValidHeaderValue(*p.Value) {
				return nil, pconfig.Errorf(at+".value", "must not contain line breaks or other control characters")
			}
			if prev, ok := where[canon]; ok && (prev != list.name || list.name == "update") {
				return nil, pconfig.Errorf(at+".name", "%s already appears in %s; a header may be in only one of add, update and delete (update once)", canon, prev)
			}
			where[canon] = list.name
			c.ops = append(c.ops, Op{Kind: list.kind, Name: canon, Value: *p.Value})
			if list.kind == Add {
				if !slices.Contains(added, canon) {
					added = append(added, canon)
				}
			} else {
				set = append(set, canon)
			}
		}
	}
	for i, name := range c.Delete {
		at := fmt.Sprintf("delete[%d]", i)
		canon, err := checkName(at, name)
		if err != nil {
			return nil, err
		}
		if prev, ok := where[canon]; ok {
			return nil, pconfig.Errorf(at, "%s already appears in %s; a header may be in only one of add, update and delete", canon, prev)
		}
		where[canon] = "delete"
		c.ops = append(c.ops, Op{Kind: Remove, Name: canon})
		removed = append(removed, canon)
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", "))
	}
	if len(set) > 0 {
		parts = append(parts, "set "+strings.Join(set, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	c.detail = strings.Join(parts, "; ")
	if c.detail == "" {
		c.detail = "no headers configured"
	}
	return c, nil
}

// Ops are the header changes, in order; Detail their report.
func (c *Config) Ops() []Op      { return c.ops }
func (c *Config) Detail() string { return c.detail }

func checkName(field, name string) (string, error) {
	if name == "" {
		return "", pconfig.Errorf(field, "is required")
	}
	if !abi.ValidHeaderName(name) {
		return "", pconfig.Errorf(field, "%q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
	}
	canon := canonical(name)
	if why := abi.ForbiddenHeader(canon); why != "" {
		return "", pconfig.Errorf(field, "%s cannot be changed by a plugin: %s", canon, why)
	}
	return canon, nil
}

// canonical is the canonical form of a valid header name (X-Route-Family), as
// net/http writes it; net/textproto itself would double the module's size.
func canonical(name string) string {
	b := []byte(name)
	upper := true
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - ('a' - 'A')
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c + ('a' - 'A')
		}
		upper = c == '-'
	}
	return string(b)
}
