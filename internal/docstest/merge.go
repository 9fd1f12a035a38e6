package docstest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Merge places a YAML fragment into a YAML or JSON base document at a JSON
// pointer and returns the result as JSON: a list there gets the fragment's
// items (or the fragment) appended, an item replacing the one of the same
// name (a decision or model the base already has), a mapping is merged key by key (the
// fragment's values win, nested mappings merge), and a missing member is
// created. Pointer "" is the document itself, for fragments such as
// "global: …" that show top-level sections.
func Merge(base, fragment []byte, pointer string) ([]byte, error) {
	// The YAML reading of recipes.Parse (sigs.k8s.io/yaml, strict), so that
	// a fragment means here what it means to the loader.
	var doc, frag any
	if err := unmarshal(base, &doc); err != nil {
		return nil, fmt.Errorf("base document: %w", err)
	}
	if err := unmarshal(fragment, &frag); err != nil {
		return nil, fmt.Errorf("fragment: %w", err)
	}
	if pointer != "" && !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("pointer %q must start with /", pointer)
	}
	var tokens []string
	if pointer != "" {
		tokens = strings.Split(pointer[1:], "/")
	}
	out, err := place(doc, tokens, frag, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func place(at any, tokens []string, frag any, path string) (any, error) {
	if len(tokens) == 0 {
		return combine(at, frag), nil
	}
	tok := strings.ReplaceAll(strings.ReplaceAll(tokens[0], "~1", "/"), "~0", "~")
	here := path + "/" + tokens[0]
	switch v := at.(type) {
	case nil:
		child, err := place(nil, tokens[1:], frag, here)
		return map[string]any{tok: child}, err
	case map[string]any:
		child, err := place(v[tok], tokens[1:], frag, here)
		if err != nil {
			return nil, err
		}
		v[tok] = child
		return v, nil
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(v) {
			return nil, fmt.Errorf("%s: the list has %d items; %q is not an index of it", here, len(v), tok)
		}
		child, err := place(v[i], tokens[1:], frag, here)
		if err != nil {
			return nil, err
		}
		v[i] = child
		return v, nil
	default:
		return nil, fmt.Errorf("%s: a %T, not a mapping or list", path, at)
	}
}

func combine(at, frag any) any {
	switch v := at.(type) {
	case []any:
		items, ok := frag.([]any)
		if !ok {
			items = []any{frag}
		}
		for _, it := range items {
			if i := named(v, it); i >= 0 {
				v[i] = it
			} else {
				v = append(v, it)
			}
		}
		return v
	case map[string]any:
		f, ok := frag.(map[string]any)
		if !ok {
			return frag
		}
		for k, x := range f {
			v[k] = combine(v[k], x)
		}
		return v
	default:
		return frag
	}
}

// named returns the index in list of the mapping with item's name, or -1.
func named(list []any, item any) int {
	m, ok := item.(map[string]any)
	if !ok || m["name"] == nil {
		return -1
	}
	for i, x := range list {
		if o, ok := x.(map[string]any); ok && o["name"] == m["name"] {
			return i
		}
	}
	return -1
}

func unmarshal(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(j, v)
}
