package convert

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/config"
	"github.com/junction-router/junction/operator/internal/crdschema"
)

// Schema compiles the embedded CRD's schema (the one `make operator-crd` wrote).
func Schema() (*crdschema.Schema, error) {
	return crdschema.Load(config.CRD, v1alpha1.GroupVersion.Version)
}

// LoadResource reads a JunctionRouter (YAML or JSON) as the API server would admit it: checked against the
// CRD's schema and CEL rules, with the schema's defaults applied. Every problem is reported with its path.
func LoadResource(ctx context.Context, s *crdschema.Schema, data []byte) (*v1alpha1.JunctionRouter, error) {
	obj, err := crdschema.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("read the resource: %w", err)
	}
	if errs := s.Check(ctx, obj); len(errs) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "the resource does not pass the JunctionRouter CRD (%d problem(s)):", len(errs))
		for _, e := range errs {
			fmt.Fprintf(&b, "\n  %s", e.Error())
		}
		return nil, fmt.Errorf("%s", b.String())
	}
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var r v1alpha1.JunctionRouter
	dec := json.NewDecoder(strings.NewReader(string(j)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode the resource: %w", err)
	}
	return &r, nil
}
