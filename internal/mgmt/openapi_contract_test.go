package mgmt_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gorilla/mux"
)

// Every route the management router serves is in the OpenAPI document, with the method it answers.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	e := newEnv(t, copyBase(t))
	doc := e.api.OpenAPI()
	r, ok := e.api.Handler().(*mux.Router)
	if !ok {
		t.Fatalf("the handler is a %T, not the route table's mux.Router", e.api.Handler())
	}
	n := 0
	err := r.Walk(func(rt *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := rt.GetPathTemplate()
		if err != nil {
			return nil // a prefix or matcher route with no path of its own
		}
		methods, err := rt.GetMethods()
		if err != nil {
			return nil
		}
		for _, m := range methods {
			if m == http.MethodHead || m == http.MethodOptions {
				continue
			}
			n++
			item := doc.Paths.Value(path)
			if item == nil || item.GetOperation(m) == nil {
				t.Errorf("%s %s is served but not in the OpenAPI document", m, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("walked only %d routes", n)
	}
}

// A client generated from the OpenAPI document never sends a body the server refuses for its shape: for every
// operation with a JSON request body, bodies built from the document's schema (the required fields only, every
// field, and each alternative of a oneOf), each checked to be valid against that schema, are sent to the real
// handler, which must not answer 400 INVALID_INPUT. Refusals of the values themselves (an unknown recipe: 404,
// a missing If-Match: 428, an invalid configuration: INVALID_CONFIG, a service not running: 503) are not about
// shape and pass; every answer must still be one the document lists for the operation (env.send checks).
func TestOpenAPIRequestSchemasMatchTheHandlers(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 0).env // stored data served, so its routes read their bodies
	doc := e.api.OpenAPI()
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	sent := 0
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue // multipart uploads, YAML documents
			}
			schema := mt.Schema.Value
			for _, body := range exampleBodies(schema) {
				if err := schema.VisitJSON(roundTrip(t, body)); err != nil {
					t.Fatalf("%s %s: the generated body %s does not match the schema it was built from: %v", method, path, mustJSON(body), err)
				}
				raw := mustJSON(body)
				r := e.send(method, fillPath(path), "application/json", raw)
				sent++
				if r.status == http.StatusBadRequest && r.errCode(t) == "INVALID_INPUT" && !pluginConfigurationRefused(t, r) && !refersToNothing(r) {
					t.Errorf("%s %s refused a body its schema accepts: %s\nanswer: %s", method, path, raw, r.body)
				}
			}
		}
	}
	if sent < 30 {
		t.Fatalf("sent only %d bodies", sent)
	}
}

// Every operation that reads a body lists the answers any body can get: 400 for one that is not JSON, 413 for
// one over the management API's limit (env.send fails on an answer the operation does not list).
func TestOpenAPIListsTheBodyRefusals(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 0).env
	doc := e.api.OpenAPI()
	huge := []byte(`{"text":"` + strings.Repeat("x", 5<<20) + `"}`)
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
				continue
			}
			if h := op.RequestBody.Value.Content.Get("application/json").Schema.Value.AdditionalProperties.Has; h == nil || *h {
				continue // a configuration document (YAML or JSON): validate reports a bad one in a 200
			}
			for _, c := range []struct {
				body []byte
				want int
			}{{[]byte("{"), http.StatusBadRequest}, {huge, http.StatusRequestEntityTooLarge}} {
				r := e.send(method, fillPath(path), "application/json", c.body)
				if r.status != c.want && r.status < 500 && r.status != http.StatusNotFound && r.status != http.StatusServiceUnavailable && r.status != http.StatusPreconditionRequired {
					t.Errorf("%s %s answered %d to a %d-byte body, want %d", method, path, r.status, len(c.body), c.want)
				}
			}
		}
	}
}

// pluginConfigurationRefused is a refusal of a plugin preview's candidate configuration by the plugin type's own
// JSON Schema (GET /api/v1/plugins/{type} serves it; the document names it): its values, not the body's shape.
func pluginConfigurationRefused(t *testing.T, r reply) bool {
	e, _ := r.json(t)["error"].(map[string]any)
	reasons, _ := e["reasons"].([]any)
	for _, x := range reasons {
		m, _ := x.(map[string]any)
		if p, _ := m["path"].(string); !strings.HasPrefix(p, "/configuration") {
			return false
		}
	}
	return len(reasons) > 0
}

// refersToNothing is a refusal of a value that names something absent, or the path's resource by another name:
// what a schema cannot know (the names of the vector stores that exist; the {name} a client put in the path).
// Each is listed here, with its message, so that no other refusal passes for one.
func refersToNothing(r reply) bool {
	for _, m := range []string{`: no vector store \"`, `differs from the path's`} {
		if strings.Contains(string(r.body), m) {
			return true
		}
	}
	return false
}

// fillPath puts values in a path template that name things the test configuration has.
func fillPath(p string) string {
	return strings.NewReplacer("{name}", "default", "{type}", "system_prompt", "{id}", "none", "{file_id}", "none").Replace(p)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// roundTrip is v as encoding/json decodes it (float64 numbers, []any, map[string]any), which VisitJSON expects.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// exampleBodies builds the bodies a generated client could send for an object schema: its required fields
// only and all of its fields, each once per alternative of its oneOf or anyOf (the alternative's required
// fields added, those only other alternatives of a oneOf require left out), across allOf's groups.
func exampleBodies(s *openapi3.Schema) []any {
	groups := []*openapi3.Schema{s}
	for _, a := range s.AllOf {
		groups = append(groups, a.Value)
	}
	var out []any
	for _, g := range groups {
		alts, exclusive := g.OneOf, true
		if len(alts) == 0 {
			alts, exclusive = g.AnyOf, false
		}
		if len(alts) == 0 {
			continue
		}
		for _, alt := range alts {
			var skip []string
			if exclusive {
				skip = excluded(g, alt.Value)
			}
			out = append(out, exampleObject(s, false, alt.Value), exampleObject(s, true, alt.Value, skip...))
		}
	}
	if out == nil {
		out = []any{exampleObject(s, false, nil), exampleObject(s, true, nil)}
	}
	return out
}

// excluded are the fields the other alternatives of a oneOf require: a body with every field leaves them out.
func excluded(s, alt *openapi3.Schema) []string {
	var out []string
	for _, o := range s.OneOf {
		if o.Value == alt {
			continue
		}
		for _, r := range o.Value.Required {
			if !slices.Contains(alt.Required, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// exampleObject is s's required fields (all fields with all) and alt's, valued by alt's own property schemas
// where it has them (delete: true).
func exampleObject(s *openapi3.Schema, all bool, alt *openapi3.Schema, skip ...string) map[string]any {
	obj := map[string]any{}
	for name, p := range s.Properties {
		if slices.Contains(skip, name) || p.Value.ReadOnly {
			continue
		}
		if alt != nil {
			if ap := alt.Properties[name]; ap != nil {
				p = ap
			}
		}
		if all || slices.Contains(s.Required, name) || (alt != nil && slices.Contains(alt.Required, name)) {
			obj[name] = exampleValue(p.Value, all, 0)
		}
	}
	return obj
}

// exampleValue is a value the schema accepts: its example, first enum value or default when it has one, else
// one built from its type and bounds.
func exampleValue(s *openapi3.Schema, all bool, depth int) any {
	switch {
	case s.Example != nil:
		return s.Example
	case len(s.Enum) > 0:
		return s.Enum[0]
	case s.Default != nil:
		return s.Default
	case len(s.OneOf) > 0:
		return exampleValue(s.OneOf[0].Value, all, depth)
	case len(s.AnyOf) > 0:
		return exampleValue(s.AnyOf[0].Value, all, depth)
	}
	switch {
	case s.Type.Is("string"):
		if s.Format == "date-time" {
			return "2026-01-02T03:04:05Z"
		}
		n := max(int(s.MinLength), 1)
		return strings.Repeat("x", n)
	case s.Type.Is("integer"):
		v := 1.0
		if s.Min != nil {
			v = *s.Min
		}
		return int(v)
	case s.Type.Is("number"):
		v := 0.5
		if s.Min != nil && *s.Min > v {
			v = *s.Min
		}
		if s.Max != nil && *s.Max < v {
			v = *s.Max
		}
		return v
	case s.Type.Is("boolean"):
		return false
	case s.Type.Is("array"):
		n := int(s.MinItems)
		if all && n == 0 {
			n = 1
		}
		out := []any{}
		for range n {
			out = append(out, exampleValue(s.Items.Value, all, depth+1))
		}
		return out
	case s.Type.Is("object") || len(s.Properties) > 0:
		if depth > 6 {
			return map[string]any{}
		}
		obj := map[string]any{}
		for name, p := range s.Properties {
			if all || slices.Contains(s.Required, name) {
				obj[name] = exampleValue(p.Value, all, depth+1)
			}
		}
		return obj
	}
	return "x" // a schema without a type accepts anything
}

// Every operation without a request body, called on a server without stored data and on one with it, answers
// only what the document lists for it, with the listed schema (env.send checks both): the 501s and 503s of
// services this build or this server does not run included.
func TestOpenAPIListsWhatEachRouteAnswers(t *testing.T) {
	for _, e := range []*env{newEnv(t, copyBase(t)), newStorageEnv(t, baseConfig(t), nil, 0).env} {
		doc := e.api.OpenAPI()
		paths := doc.Paths.InMatchingOrder()
		sort.Strings(paths)
		for _, path := range paths {
			ops := doc.Paths.Value(path).Operations()
			for _, method := range []string{"GET", "DELETE", "POST", "PUT", "PATCH"} {
				if op := ops[method]; op != nil && op.RequestBody == nil {
					e.send(method, fillPath(path), "", nil)
				}
			}
		}
	}
}
