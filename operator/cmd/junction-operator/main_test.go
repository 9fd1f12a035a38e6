package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestConvertExportCLI: convert prints a document, export prints a resource that converts again, and a
// refused field (or a TLS file under no mount, as the controller refuses it) is an exit status 1 naming its path.
func TestConvertExportCLI(t *testing.T) {
	code, doc, stderr := runCLI(t, "convert", "../../config/samples/junctionrouter.yaml")
	if code != 0 || !strings.Contains(doc, "qwen3-8b") || !strings.Contains(doc, "listeners:") {
		t.Fatalf("convert: %d %s\n%s", code, stderr, doc)
	}
	dir := t.TempDir()
	docPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(docPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, res, stderr := runCLI(t, "export", docPath, "--name", "again", "--namespace", "prod")
	if code != 0 || !strings.Contains(res, "kind: JunctionRouter") || !strings.Contains(res, "name: again") {
		t.Fatalf("export: %d %s\n%s", code, stderr, res)
	}
	resPath := filepath.Join(dir, "resource.yaml")
	if err := os.WriteFile(resPath, []byte(res), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "convert", resPath); code != 0 {
		t.Fatalf("convert of the export: %d %s", code, stderr)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: junction-router.io/v1alpha1\nkind: JunctionRouter\nmetadata: {name: b}\nspec: {config: {tools: {enabled: true}}}\n"), 0o600)
	code, _, stderr = runCLI(t, "convert", bad)
	if code != 1 || !strings.Contains(stderr, "spec.config.tools") {
		t.Fatalf("refused field: %d %s", code, stderr)
	}
	os.WriteFile(bad, []byte("apiVersion: junction-router.io/v1alpha1\nkind: JunctionRouter\nmetadata: {name: b}\nspec: {replicas: -1}\n"), 0o600)
	code, _, stderr = runCLI(t, "convert", bad)
	if code != 1 || !strings.Contains(stderr, "spec.replicas") {
		t.Fatalf("schema problem: %d %s", code, stderr)
	}
	if code, doc, stderr := runCLI(t, "convert", "../../config/samples/junctionrouter-redis-tls.yaml"); code != 0 || !strings.Contains(doc, "/etc/junction-redis-tls/ca.crt") {
		t.Fatalf("convert of the Redis TLS sample: %d %s\n%s", code, stderr, doc)
	}
	os.WriteFile(bad, []byte("apiVersion: junction-router.io/v1alpha1\nkind: JunctionRouter\nmetadata: {name: b}\n"+
		"spec: {config: {response_cache: {enabled: true, backend_type: key_value, key_value: {connection: {host: r, tls: {enabled: true, ca_file: /tls/ca.crt}}}}}}\n"), 0o600)
	code, _, stderr = runCLI(t, "convert", bad)
	if code != 1 || !strings.Contains(stderr, "spec.config.response_cache.key_value.connection.tls.ca_file: /tls/ca.crt is in no volume") {
		t.Fatalf("unmounted TLS file: %d %s", code, stderr)
	}
	if code, out, _ := runCLI(t, "crd"); code != 0 || !strings.Contains(out, "kind: CustomResourceDefinition") {
		t.Fatalf("crd: %d", code)
	}
	if code, _, _ := runCLI(t, "convert"); code != 2 {
		t.Fatalf("convert without a file: %d, want 2", code)
	}
}

// TestRunWithoutCluster: run with no kubeconfig and no service account fails at once, saying what it needs.
func TestRunWithoutCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	code, _, stderr := runCLI(t, "run", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	if code != 1 || !strings.Contains(stderr, "KUBECONFIG") {
		t.Fatalf("run: %d %s", code, stderr)
	}
}
