package mgmt

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
	"github.com/junction-router/junction/internal/pii"
)

// buildOpenAPI derives the OpenAPI 3.0 document from the route table: one
// operation per route, request and response schemas generated from the Go
// types the handlers encode, the error body on every documented error, and
// the permission and sensitivity as x- extensions.
func buildOpenAPI(routes []route, version string) (*openapi3.T, []byte, error) {
	if version == "" {
		version = "dev"
	}
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{Title: "Junction management API", Version: version,
			Description: "The control plane of Junction: configuration lifecycle, previews, diagnostics, plugins, stored data, status and audit. Generated from the route table."},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas: openapi3.Schemas{},
			SecuritySchemes: openapi3.SecuritySchemes{
				"bearer": &openapi3.SecuritySchemeRef{Value: openapi3.NewJWTSecurityScheme().WithBearerFormat("opaque")},
			},
		},
	}
	// Slices, maps and pointers may encode as null; say so, so that response
	// validation checks types rather than tripping over Go's nil.
	gen := openapi3gen.NewGenerator(openapi3gen.SchemaCustomizer(func(_ string, t reflect.Type, tag reflect.StructTag, s *openapi3.Schema) error {
		switch t.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
			s.Nullable = true
		}
		// Fields typed any say what they hold with an oas tag; request fields add what their handler checks
		// (oasTag), and a request struct gathers its fields' required and oneOf/anyOf groups (oasStruct).
		for _, item := range strings.Split(tag.Get("oas"), ",") {
			switch item {
			case "string-or-strings":
				*s = *openapi3.NewOneOfSchema(openapi3.NewStringSchema(), openapi3.NewArraySchema().WithItems(openapi3.NewStringSchema()))
			case "filter":
				*s = *filterSchema()
			case "seconds-or-time":
				*s = *openapi3.NewOneOfSchema(openapi3.NewFloat64Schema().WithMin(0), openapi3.NewDateTimeSchema())
				s.Description = "seconds of age, or an RFC 3339 time"
			default:
				oasTag(item, s)
			}
		}
		if t.Kind() == reflect.Struct {
			oasStruct(t, s)
		}
		return nil
	}))
	schema := func(v any) (*openapi3.SchemaRef, error) {
		return gen.NewSchemaRefForValue(v, doc.Components.Schemas)
	}
	errSchema, err := schema(ErrorBody{})
	if err != nil {
		return nil, nil, err
	}
	doc.Components.Schemas["ErrorBody"] = errSchema
	errRef := &openapi3.SchemaRef{Ref: "#/components/schemas/ErrorBody", Value: errSchema.Value}
	anyJSON := &openapi3.SchemaRef{Value: &openapi3.Schema{}}
	seen := map[string]int{}
	for _, rt := range routes {
		op := openapi3.NewOperation()
		op.Summary = rt.summary
		op.Tags = []string{rt.tag}
		op.OperationID = operationID(rt.method, rt.path, seen)
		op.Extensions = map[string]any{"x-permission": permName(rt.perm), "x-sensitivity": rt.sensitivity}
		if rt.audit != "" {
			op.Extensions["x-audit-action"] = rt.audit
		}
		if rt.perm == PermPublic {
			op.Security = &openapi3.SecurityRequirements{}
		} else {
			op.Security = &openapi3.SecurityRequirements{{"bearer": []string{}}}
		}
		for _, seg := range strings.Split(rt.path, "/") {
			if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
				p := openapi3.NewPathParameter(seg[1 : len(seg)-1]).WithSchema(openapi3.NewStringSchema())
				op.AddParameter(p)
			}
		}
		for _, q := range rt.query {
			op.AddParameter(openapi3.NewQueryParameter(q).WithSchema(openapi3.NewStringSchema()))
		}
		if strings.Contains(rt.summary, "If-Match") {
			p := &openapi3.Parameter{In: "header", Name: "If-Match", Description: "the current ETag (GET /api/v1/config)", Schema: openapi3.NewStringSchema().NewRef()}
			op.AddParameter(p)
		}
		if strings.Contains(rt.summary, "Idempotency-Key") {
			p := &openapi3.Parameter{In: "header", Name: "Idempotency-Key", Description: "a stable value for retries (at most 255 bytes): the same principal and key are one submission", Schema: openapi3.NewStringSchema().WithMaxLength(255).NewRef()}
			op.AddParameter(p)
		}
		if rt.in != nil {
			s, err := schema(rt.in)
			if err != nil {
				return nil, nil, err
			}
			if reflect.TypeOf(rt.in).Kind() == reflect.Struct {
				// The generator shares one schema per type; this route's copy requires what the route needs, and
				// says that the handler (decodeJSON) refuses fields it does not know.
				cp := *s.Value
				cp.Required = append(slices.Clone(cp.Required), rt.inRequired...)
				cp.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
				s = cp.NewRef()
			}
			body := openapi3.NewRequestBody().WithRequired(true).WithJSONSchemaRef(s)
			if rt.inType == "multipart/form-data" {
				// An upload: the file part is binary.
				if f := s.Value.Properties["file"]; f != nil {
					f.Value.Format = "binary"
				}
				s.Value.Required = []string{"file", "purpose"}
				body = openapi3.NewRequestBody().WithRequired(true).WithContent(openapi3.Content{rt.inType: openapi3.NewMediaType().WithSchemaRef(s)})
			}
			if strings.HasPrefix(rt.path, "/api/v1/config") && (rt.method == "PUT" || rt.method == "POST") {
				body.Content["application/yaml"] = openapi3.NewMediaType().WithSchema(openapi3.NewObjectSchema())
			}
			if rt.method == "PATCH" {
				body.Content["application/merge-patch+json"] = openapi3.NewMediaType().WithSchemaRef(s)
			}
			op.RequestBody = &openapi3.RequestBodyRef{Value: body}
		}
		status := rt.status
		if status == 0 {
			status = http.StatusOK
		}
		ok := openapi3.NewResponse().WithDescription(http.StatusText(status))
		switch {
		case rt.contentType == "text/html":
			ok.WithContent(openapi3.Content{"text/html": openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema())})
		case rt.contentType == "*/*":
			// A file's own bytes, in its own media type: no schema.
			ok.WithContent(openapi3.Content{"*/*": openapi3.NewMediaType()})
		case rt.contentType != "" && rt.out != nil:
			// A stream of JSON values (NDJSON): the schema is one line's.
			s, err := schema(rt.out)
			if err != nil {
				return nil, nil, err
			}
			ok.WithContent(openapi3.Content{rt.contentType: openapi3.NewMediaType().WithSchemaRef(s)})
			ok.Description = openapi3.Ptr(http.StatusText(status) + ": one JSON object per line, each matching the schema")
		case rt.out != nil:
			s, err := schema(rt.out)
			if err != nil {
				return nil, nil, err
			}
			ok.WithJSONSchemaRef(s)
		default:
			ok.WithJSONSchemaRef(anyJSON)
		}
		onlyErrors := rt.out == nil && rt.contentType == "" && len(rt.errs) > 0 && (rt.errs[len(rt.errs)-1] == 501 || rt.errs[len(rt.errs)-1] == 503) && rt.h != nil && isRefusal(rt)
		op.Responses = openapi3.NewResponses()
		if !onlyErrors {
			op.Responses.Set(strconv.Itoa(status), &openapi3.ResponseRef{Value: ok})
			for _, also := range rt.alsoOK {
				op.Responses.Set(strconv.Itoa(also), &openapi3.ResponseRef{Value: &openapi3.Response{Description: openapi3.Ptr(http.StatusText(also)), Content: ok.Content}})
			}
		}
		errs := append([]int{}, rt.errs...)
		if rt.perm != PermPublic {
			errs = append(errs, 401, 403)
		}
		if rt.perm == PermClassifyInvoke {
			errs = append(errs, 429) // global.services.management_api.rate_limit
		}
		if rt.in != nil {
			// readBody and decodeJSON answer any route that reads a body: not JSON, or over maxBodyBytes.
			errs = append(errs, 400, 413)
		}
		errs = append(errs, 404, 405, 500)
		for _, code := range errs {
			key := strconv.Itoa(code)
			if op.Responses.Value(key) != nil {
				continue
			}
			op.Responses.Set(key, &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription(http.StatusText(code)).WithJSONSchemaRef(errRef)})
		}
		if op.Responses.Len() == 0 {
			op.Responses.Set("default", &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription("error").WithJSONSchemaRef(errRef)})
		}
		doc.AddOperation(rt.path, rt.method, op)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	return doc, raw, nil
}

// oasTag applies one item of a request field's oas tag to its schema: what the handler checks beyond the Go
// type, so that a client generated from the document never sends a body refused for its shape.
//
//	minLength=N, minItems=N, min=N, max=N   bounds (min/max: the number's, or with items- the items')
//	enum=a|b, items-enum=a|b                 the values accepted (the items')
//	pattern=RE                               a string's pattern (\S: not only white space)
//	maxLength=N, maxItems=N, maxProperties=N, uniqueItems
//	date-time                                an RFC 3339 time (a string)
//	false                                    a boolean only false is accepted for
//	query                                    a search query: a string or up to 32 strings
//	when=K:V                                 (on a struct's field) required when field K is V, refused otherwise
//	object, array                            a json.RawMessage field's JSON type
//	messages                                 a chat messages list: objects with role (and content), at least one
//	pii-types                                items are personal-data types (internal/pii)
//
// required, oneof=G and anyof=G are read by oasStruct.
func oasTag(item string, s *openapi3.Schema) {
	key, val, _ := strings.Cut(item, "=")
	num := func() float64 { f, _ := strconv.ParseFloat(val, 64); return f }
	switch key {
	case "minLength":
		s.MinLength = uint64(num())
	case "items-minLength":
		if s.Items != nil && s.Items.Value != nil {
			s.Items.Value.MinLength = uint64(num())
		}
	case "pattern":
		s.Pattern = val
	case "date-time":
		s.Format = "date-time"
	case "maxLength":
		s.MaxLength = openapi3.Ptr(uint64(num()))
	case "maxItems":
		s.MaxItems = openapi3.Ptr(uint64(num()))
	case "uniqueItems":
		s.UniqueItems = true
	case "maxProperties":
		s.MaxProps = openapi3.Ptr(uint64(num()))
	case "false":
		s.Enum = []any{false}
		s.Description = "only false is accepted"
	case "query":
		*s = *openapi3.NewOneOfSchema(openapi3.NewStringSchema().WithPattern(`\S`), openapi3.NewArraySchema().WithItems(openapi3.NewStringSchema()).WithMinItems(1).WithMaxItems(32))
		s.Description = "a string, or an array of up to 32 strings, not all empty"
	case "minItems":
		s.MinItems = uint64(num())
	case "min":
		s.Min = openapi3.Ptr(num())
	case "max":
		s.Max = openapi3.Ptr(num())
	case "enum":
		s.Enum = nil
		for _, v := range strings.Split(val, "|") {
			s.Enum = append(s.Enum, v)
		}
	case "items-enum":
		if s.Items != nil && s.Items.Value != nil {
			s.Items.Value.Enum = nil
			for _, v := range strings.Split(val, "|") {
				s.Items.Value.Enum = append(s.Items.Value.Enum, v)
			}
		}
	case "pii-types":
		items := openapi3.NewStringSchema()
		for _, v := range pii.Types() {
			items.Enum = append(items.Enum, v)
		}
		s.Items = items.NewRef()
	case "object":
		*s = *openapi3.NewObjectSchema()
		s.Nullable = false
	case "array":
		*s = *openapi3.NewArraySchema().WithItems(&openapi3.Schema{})
	case "messages":
		msg := openapi3.NewObjectSchema()
		msg.Properties = openapi3.Schemas{"role": openapi3.NewStringSchema().WithEnum("system", "developer", "user", "assistant", "tool").NewRef(), "content": openapi3.NewOneOfSchema(openapi3.NewStringSchema().WithPattern(`\S`), openapi3.NewArraySchema().WithItems(openapi3.NewObjectSchema()).WithMinItems(1)).NewRef()}
		msg.Properties["content"].Value.Description = "a string, or an array of content parts; the messages together must hold some text"
		msg.Required = []string{"role", "content"}
		*s = *openapi3.NewArraySchema().WithItems(msg).WithMinItems(1)
		s.Description = "chat messages, as in a chat completion request"
	}
}

// oasStruct gathers a request struct's constraints across fields from their oas tags: required, and groups
// oneof=G (exactly one of the fields named G is present) and anyof=G (at least one), each field of a group
// being an alternative; a field tagged true in a group counts only when it is true (delete: true).
func oasStruct(t reflect.Type, s *openapi3.Schema) {
	type member struct {
		name   string
		isTrue bool
	}
	groups := map[string][]member{}
	var order []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		items := strings.Split(f.Tag.Get("oas"), ",")
		for _, item := range items {
			key, val, _ := strings.Cut(item, "=")
			switch key {
			case "required":
				if !slices.Contains(s.Required, name) {
					s.Required = append(s.Required, name)
				}
			case "when":
				// the field is required when another field has one value, and refused otherwise
				k, v, _ := strings.Cut(val, ":")
				if p := s.Properties[k]; p != nil && p.Value != nil {
					for _, e := range p.Value.Enum {
						alt := &openapi3.Schema{Properties: openapi3.Schemas{k: (&openapi3.Schema{Enum: []any{e}}).NewRef()}}
						if e == v {
							alt.Required = []string{k, name}
						} else {
							alt.Not = (&openapi3.Schema{Required: []string{name}}).NewRef()
						}
						s.OneOf = append(s.OneOf, alt.NewRef())
					}
				}
			case "oneof", "anyof":
				g := key + "=" + val
				if _, ok := groups[g]; !ok {
					order = append(order, g)
				}
				groups[g] = append(groups[g], member{name, slices.Contains(items, "true")})
			}
		}
	}
	var anyOf []*openapi3.Schema
	for _, g := range order {
		var alts openapi3.SchemaRefs
		for _, m := range groups[g] {
			alt := &openapi3.Schema{Required: []string{m.name}}
			if m.isTrue {
				alt.Properties = openapi3.Schemas{m.name: openapi3.NewBoolSchema().WithEnum(true).NewRef()}
			}
			alts = append(alts, alt.NewRef())
		}
		if strings.HasPrefix(g, "oneof=") {
			if len(order) == 1 {
				s.OneOf = alts
				continue
			}
			anyOf = append(anyOf, &openapi3.Schema{OneOf: alts})
		} else {
			anyOf = append(anyOf, &openapi3.Schema{AnyOf: alts})
		}
	}
	switch {
	case len(anyOf) == 1 && anyOf[0].AnyOf != nil:
		s.AnyOf = anyOf[0].AnyOf
	case len(anyOf) > 0:
		for _, a := range anyOf {
			s.AllOf = append(s.AllOf, a.NewRef())
		}
	}
}

// isRefusal marks routes that only ever answer an error (the services that
// are not built: the response cache, context recovery; the 501
// placeholders, the missing models).
func isRefusal(rt route) bool {
	return strings.Contains(rt.summary, "placeholder") || strings.Contains(rt.summary, "(needs ") ||
		strings.Contains(rt.summary, "503 while")
}

// filterSchema is an OpenAI-style attribute filter (storage.ParseFilter
// checks the rest).
func filterSchema() *openapi3.Schema {
	s := openapi3.NewObjectSchema()
	s.Description = "attribute filter: {type: eq|ne|gt|gte|lt|lte|in|nin, key, value} or {type: and|or, filters: [...]}"
	s.Properties = openapi3.Schemas{
		"type":    openapi3.NewStringSchema().WithEnum("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "and", "or").NewRef(),
		"key":     openapi3.NewStringSchema().NewRef(),
		"value":   &openapi3.SchemaRef{Value: &openapi3.Schema{Description: "a string, number or boolean; an array of them for in and nin"}},
		"filters": openapi3.NewArraySchema().WithItems(openapi3.NewObjectSchema()).NewRef(),
	}
	s.Required = []string{"type"}
	s.Nullable = true
	return s
}

func permName(p string) string {
	if p == PermPublic {
		return "public"
	}
	return p
}

func operationID(method, path string, seen map[string]int) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		seg = strings.Trim(seg, "{}")
		for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
			if part == "" {
				continue
			}
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	id := b.String()
	seen[id]++
	if n := seen[id]; n > 1 {
		id += strconv.Itoa(n)
	}
	return id
}

// openAPI serves the document, or with path (and optionally method) only the
// matching operation.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path, method := q.Get("path"), strings.ToUpper(q.Get("method"))
	if path == "" && method == "" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.openapiRaw)
		return
	}
	if path == "" {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "method narrows an operation of path: give path too"))
		return
	}
	item := s.openapi.Paths.Value(path)
	if item == nil {
		writeError(w, newErr(http.StatusNotFound, CodeNotFound, "no documented path %q (paths are templates, e.g. /api/v1/config/recipes/{name})", path))
		return
	}
	narrowed := *s.openapi
	narrowed.Paths = openapi3.NewPaths()
	if method == "" {
		narrowed.Paths.Set(path, item)
	} else {
		op := item.GetOperation(method)
		if op == nil {
			writeError(w, newErr(http.StatusNotFound, CodeNotFound, "path %q has no %s operation", path, method))
			return
		}
		pi := &openapi3.PathItem{}
		pi.SetOperation(method, op)
		narrowed.Paths.Set(path, pi)
	}
	b, err := json.Marshal(&narrowed)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// OpenAPI returns the served document (for tests and tools).
func (s *Server) OpenAPI() *openapi3.T { return s.openapi }
