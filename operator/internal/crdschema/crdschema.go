// Package crdschema checks a JunctionRouter resource against the CRD's OpenAPI schema offline, as the API
// server would at admission: unknown fields (what the server prunes, or refuses under strict field
// validation), defaults, the schema's types, bounds, enums and patterns, list types (set and map items
// distinct), and the x-kubernetes-validations CEL rules.
package crdschema

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// ValidateDefinition checks the CRD itself as the API server does when it is applied: names, versions, a
// structural schema, defaults that pass their own schema, and every CEL rule compiled within its cost budget
// (a rule too expensive for the lists and strings it runs over makes the server refuse the whole CRD).
func ValidateDefinition(ctx context.Context, crdYAML []byte) (field.ErrorList, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		return nil, fmt.Errorf("read the CRD: %w", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&crd)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, &internal, nil); err != nil {
		return nil, fmt.Errorf("convert the CRD: %w", err)
	}
	return crdvalidation.ValidateCustomResourceDefinition(ctx, &internal), nil
}

// Schema is one version's compiled schema.
type Schema struct {
	Group, Version, Kind string
	structural           *structuralschema.Structural
	validator            apiservervalidation.SchemaValidator
	cel                  *cel.Validator
}

// Load compiles the schema of version from a CRD document.
func Load(crdYAML []byte, version string) (*Schema, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		return nil, fmt.Errorf("read the CRD: %w", err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD version %s has no schema", version)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, fmt.Errorf("convert the CRD schema: %w", err)
		}
		st, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, fmt.Errorf("the CRD schema is not structural: %w", err)
		}
		if errs := structuralschema.ValidateStructural(nil, st); len(errs) > 0 {
			return nil, fmt.Errorf("the CRD schema is not structural: %v", errs.ToAggregate())
		}
		val, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, fmt.Errorf("compile the CRD schema: %w", err)
		}
		return &Schema{
			Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind,
			structural: st, validator: val,
			cel: cel.NewValidator(st, true, celconfig.PerCallLimit),
		}, nil
	}
	return nil, fmt.Errorf("the CRD has no version %s", version)
}

// Decode reads a YAML or JSON resource as the API server does: integers as int64 (the CEL rules compare them
// as integers), other numbers as float64.
func Decode(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("the document is empty")
	}
	return obj, nil
}

// Check validates obj (a decoded resource: map[string]any) and applies the schema's defaults to it, in
// place. It returns every problem found, each with its field path; unknown fields are problems too (the API
// server would drop them silently without strict validation, which is how a misspelt field is lost).
func (s *Schema) Check(ctx context.Context, obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	if got, want := fmt.Sprint(obj["apiVersion"]), s.Group+"/"+s.Version; got != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), got, "want "+want))
	}
	if got := fmt.Sprint(obj["kind"]); got != s.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), got, "want "+s.Kind))
	}
	// metadata is the API server's to check; the schema covers spec and status.
	meta := obj["metadata"]
	delete(obj, "metadata")
	defer func() {
		if meta != nil {
			obj["metadata"] = meta
		}
	}()
	unknown := pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range unknown {
		errs = append(errs, field.Invalid(field.NewPath(strings.SplitN(p, ".", 2)[0]), p, "unknown field "+p+" (check its spelling and level against the CRD)"))
	}
	structuraldefaulting.Default(obj, s.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, s.validator)...)
	// x-kubernetes-list-type set and map: no two items alike, no two map items with the same keys.
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	if len(errs) > 0 {
		// CEL rules assume the schema holds (types, required fields); the server runs them only then.
		return errs
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}
