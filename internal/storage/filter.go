package storage

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Filter selects files by their attributes, in the shape of OpenAI's
// vector-store search filters: a comparison {type: eq|ne|gt|gte|lt|lte|in|nin,
// key, value} or a compound {type: and|or, filters: [...]}.
type Filter struct {
	Type    string   `json:"type"`
	Key     string   `json:"key,omitempty"`
	Value   any      `json:"value,omitempty"`
	Filters []Filter `json:"filters,omitempty"`
}

// maxFilterDepth bounds nesting, so a hostile filter cannot recurse deeply.
const maxFilterDepth = 8

// ParseFilter reads and checks a filter; errors wrap ErrInvalid and say
// which part is wrong.
func ParseFilter(raw []byte) (*Filter, error) {
	var f Filter
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: filters must be a filter object: %v", ErrInvalid, err)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Validate checks the filter's shape.
func (f *Filter) Validate() error { return f.validate("filters", 0) }

func (f *Filter) validate(path string, depth int) error {
	if depth > maxFilterDepth {
		return fmt.Errorf("%w: %s nests deeper than %d", ErrInvalid, path, maxFilterDepth)
	}
	switch f.Type {
	case "and", "or":
		if len(f.Filters) == 0 {
			return fmt.Errorf("%w: %s: an %q filter needs filters", ErrInvalid, path, f.Type)
		}
		for i := range f.Filters {
			if err := f.Filters[i].validate(fmt.Sprintf("%s.filters[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		return nil
	case "eq", "ne", "gt", "gte", "lt", "lte", "in", "nin":
		if f.Key == "" {
			return fmt.Errorf("%w: %s: a %q comparison needs a key", ErrInvalid, path, f.Type)
		}
		f.Value = normalize(f.Value)
		switch v := f.Value.(type) {
		case string, float64, bool:
			if f.Type == "in" || f.Type == "nin" {
				return fmt.Errorf("%w: %s: %q needs an array value", ErrInvalid, path, f.Type)
			}
		case []any:
			if f.Type != "in" && f.Type != "nin" {
				return fmt.Errorf("%w: %s: an array value needs type in or nin", ErrInvalid, path)
			}
			for _, e := range v {
				switch e.(type) {
				case string, float64, bool:
				default:
					return fmt.Errorf("%w: %s: array values must be strings, numbers or booleans", ErrInvalid, path)
				}
			}
		default:
			return fmt.Errorf("%w: %s: value must be a string, number, boolean or (for in, nin) an array", ErrInvalid, path)
		}
		return nil
	default:
		return fmt.Errorf("%w: %s: type must be eq, ne, gt, gte, lt, lte, in, nin, and or or (got %q)", ErrInvalid, path, f.Type)
	}
}

// normalize turns JSON numbers of any Go type into float64.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// Match reports whether attrs pass the filter (a nil filter passes all).
// A comparison on a missing key fails, except ne and nin.
func (f *Filter) Match(attrs map[string]any) bool {
	if f == nil {
		return true
	}
	switch f.Type {
	case "and":
		for i := range f.Filters {
			if !f.Filters[i].Match(attrs) {
				return false
			}
		}
		return true
	case "or":
		for i := range f.Filters {
			if f.Filters[i].Match(attrs) {
				return true
			}
		}
		return false
	}
	got, ok := attrs[f.Key]
	got = normalize(got)
	switch f.Type {
	case "eq":
		return ok && got == f.Value
	case "ne":
		return !ok || got != f.Value
	case "in", "nin":
		in := false
		if ok {
			for _, e := range f.Value.([]any) {
				in = in || e == got
			}
		}
		return in == (f.Type == "in")
	}
	if !ok {
		return false
	}
	c, comparable := compare(got, f.Value)
	if !comparable {
		return false
	}
	switch f.Type {
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	case "lt":
		return c < 0
	default: // lte
		return c <= 0
	}
}

func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}
