package crdschema_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/junction-router/junction/operator/config"
	"github.com/junction-router/junction/operator/internal/crdschema"
)

func load(t *testing.T) *crdschema.Schema {
	t.Helper()
	s, err := crdschema.Load(config.CRD, "v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func read(t *testing.T, path string) (map[string]any, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := crdschema.Decode(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return obj, strings.TrimSpace(strings.TrimPrefix(first, "# want:"))
}

// TestValidSamples: the committed samples (config/samples) and the good test resources pass the CRD's schema and CEL rules.
func TestValidSamples(t *testing.T) {
	s := load(t)
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	samples, _ := filepath.Glob("../../config/samples/*.yaml")
	files = append(files, samples...)
	for _, f := range files {
		obj, _ := read(t, f)
		if errs := s.Check(context.Background(), obj); len(errs) > 0 {
			t.Errorf("%s: %v", f, errs.ToAggregate())
		}
	}
	if len(files) < 6 {
		t.Fatalf("found only %d valid samples", len(files))
	}
}

// TestInvalidSamples: each bad resource is refused with the problem its first line names (# want: TEXT).
func TestInvalidSamples(t *testing.T) {
	s := load(t)
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 15 {
		t.Fatalf("found only %d invalid samples", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			obj, want := read(t, f)
			if want == "" {
				t.Fatal("first line must be # want: TEXT")
			}
			errs := s.Check(context.Background(), obj)
			if len(errs) == 0 {
				t.Fatalf("accepted; want an error containing %q", want)
			}
			if got := errs.ToAggregate().Error(); !strings.Contains(got, want) {
				t.Fatalf("got %s\nwant one containing %q", got, want)
			}
		})
	}
}

// TestDefaults: the schema's defaults are applied as the API server applies them.
func TestDefaults(t *testing.T) {
	s := load(t)
	obj, _ := read(t, "testdata/valid/minimal.yaml")
	if errs := s.Check(context.Background(), obj); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	b, _ := yaml.Marshal(obj["spec"])
	for _, want := range []string{"replicas: 1", "pullPolicy: IfNotPresent", "maxReplicas: 10", "targetCPUUtilizationPercentage: 80", "port: 9190", "protocol: TCP"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("defaulted spec lacks %q:\n%s", want, b)
		}
	}
	obj, _ = read(t, "testdata/valid/caches.yaml")
	if errs := s.Check(context.Background(), obj); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	b, _ = yaml.Marshal(obj["spec"])
	for _, want := range []string{"port: 6379", "name: semantic_cache_idx", "prefix: 'doc:'", "efConstruction: 64", "topk: 1", "auto_create_index: true", "min_score_threshold: \"0.5\""} {
		if !strings.Contains(string(b), want) {
			t.Errorf("defaulted spec lacks %q:\n%s", want, b)
		}
	}
	obj, _ = read(t, "testdata/valid/gateway.yaml")
	if errs := s.Check(context.Background(), obj); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	b, _ = yaml.Marshal(obj["spec"])
	for _, want := range []string{"kind: Gateway", "failOpen: false", "messageTimeout: 5s"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("defaulted spec lacks %q:\n%s", want, b)
		}
	}
}

// TestCRDIsAdmissible: the API server would accept the generated CRD (CEL rules within their cost budget
// included).
func TestCRDIsAdmissible(t *testing.T) {
	errs, err := crdschema.ValidateDefinition(context.Background(), config.CRD)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
