package recipes

import (
	"testing"
)

const catalogOK = `
deployments:
  - name: guard
    provider: model_runtime
    artifact: jailbreak-glove
    device: cpu
    input: {max_tokens: 256, overflow: window}
  - name: pool
    artifact: /opt/models/domain
    revision: 0123456789abcdef0123456789abcdef01234567
    replicas: [{device: cpu}, {endpoint: "10.0.0.7:8100", served_name: domain}]
  - name: shared
    endpoint: unix:/run/junction/worker.sock
bindings:
  jailbreak: {deployment: guard, contract: decisions}
  domain: {deployment: pool, contract: classify}
  embeddings: {deployment: shared, head: embed-glove}
`

func TestDeploymentsLoad(t *testing.T) {
	v := exampleValue(t)
	set(t, v, "/global/model_catalog", y(t, catalogOK))
	doc, err := Parse(toJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	mc := doc.Global.ModelCatalog
	if len(mc.Deployments) != 3 || mc.Bindings.Jailbreak.Deployment != "guard" || mc.Bindings.Embeddings.Head != "embed-glove" {
		t.Fatalf("catalog not read: %+v", mc)
	}
	if rs := mc.Deployments[0].EffectiveReplicas(); len(rs) != 1 || rs[0].Device != "cpu" || rs[0].Endpoint != "" {
		t.Errorf("implicit managed replica: %+v", rs)
	}
	if rs := mc.Deployments[2].EffectiveReplicas(); len(rs) != 1 || rs[0].Endpoint != "unix:/run/junction/worker.sock" {
		t.Errorf("implicit attached replica: %+v", rs)
	}
	if got := mc.Bindings.Each(); len(got) != 3 || got[0].Kind != "domain" || got[2].Kind != "embeddings" {
		t.Errorf("Each: %+v", got)
	}
}

func TestDeploymentProblems(t *testing.T) {
	const dp = "/global/model_catalog/deployments"
	tests := []struct {
		name, catalog, path, code, msg string
	}{
		{"duplicate name", `{deployments: [{name: a, artifact: x}, {name: a, artifact: z}]}`,
			dp + "/1/name", CodeDuplicate, "already declared at /global/model_catalog/deployments/0"},
		{"bad name", `{deployments: [{name: "a b", artifact: x}]}`, dp + "/0/name", CodeInvalidValue, "letters, digits"},
		{"unknown deployment in binding", `{deployments: [{name: guard, artifact: x}], bindings: {jailbreak: {deployment: gaurd}}}`,
			"/global/model_catalog/bindings/jailbreak/deployment", CodeUnknownRef, `"gaurd" is not in`},
		{"binding without deployment", `{bindings: {domain: {head: x}}}`,
			"/global/model_catalog/bindings/domain/deployment", CodeMissingField, "name the deployment"},
		{"wrong contract", `{deployments: [{name: e, artifact: embed-glove}], bindings: {embeddings: {deployment: e, contract: classify}}}`,
			"/global/model_catalog/bindings/embeddings/contract", CodeInvalidValue, "embeddings surface"},
		{"replica with device and endpoint", `{deployments: [{name: a, artifact: x, replicas: [{device: cpu, endpoint: "h:1"}]}]}`,
			dp + "/0/replicas/0", CodeConflict, "not both"},
		{"replica with neither", `{deployments: [{name: a, artifact: x, replicas: [{}]}]}`,
			dp + "/0/replicas/0", CodeMissingField, "needs device"},
		{"managed replica with served_name", `{deployments: [{name: a, artifact: x, replicas: [{device: cpu, served_name: z}]}]}`,
			dp + "/0/replicas/0/served_name", CodeConflict, "attached replica"},
		{"endpoint and replicas", `{deployments: [{name: a, endpoint: "h:1", replicas: [{endpoint: "h:2"}]}]}`,
			dp + "/0/endpoint", CodeConflict, "not both"},
		{"endpoint and device", `{deployments: [{name: a, endpoint: "h:1", device: cpu}]}`,
			dp + "/0/device", CodeConflict, "chooses its own device"},
		{"bad URL", `{deployments: [{name: a, endpoint: "http://h:1/v1/classify"}]}`,
			dp + "/0/endpoint", CodeInvalidValue, "no path"},
		{"bad host:port", `{deployments: [{name: a, endpoint: "worker"}]}`,
			dp + "/0/endpoint", CodeInvalidValue, "host:port"},
		{"relative socket", `{deployments: [{name: a, endpoint: "unix:run/w.sock"}]}`,
			dp + "/0/endpoint", CodeInvalidValue, "absolute path"},
		{"managed without artifact", `{deployments: [{name: a, device: cpu}]}`,
			dp + "/0/artifact", CodeMissingField, "name its artifact"},
		{"relative model directory", `{deployments: [{name: a, artifact: models/guard}]}`,
			dp + "/0/artifact", CodeInvalidValue, "absolute path"},
		{"branch as revision", `{deployments: [{name: a, artifact: x, revision: main}]}`,
			dp + "/0/revision", CodeInvalidValue, "40-character commit"},
		{"bad device", `{deployments: [{name: a, artifact: x, device: tpu}]}`,
			dp + "/0/device", CodeInvalidValue, "cuda:N"},
		{"bad overflow", `{deployments: [{name: a, artifact: x, input: {overflow: skip}}]}`,
			dp + "/0/input/overflow", CodeInvalidValue, "window"},
		{"negative max_tokens", `{deployments: [{name: a, artifact: x, input: {max_tokens: -1}}]}`,
			dp + "/0/input/max_tokens", CodeInvalidValue, "must not be negative"},
		{"other provider", `{deployments: [{name: a, artifact: x, provider: vllm}]}`,
			dp + "/0/provider", CodeInvalidValue, "model_runtime"},
		{"defaults without head", `{deployments: [{name: all, artifact: defaults}], bindings: {domain: {deployment: all}}}`,
			"/global/model_catalog/bindings/domain/head", CodeMissingField, "name the one"},
		{"decisions for embeddings", `{deployments: [{name: e, artifact: embed-glove}], bindings: {embeddings: {deployment: e, contract: decisions}}}`,
			"/global/model_catalog/bindings/embeddings/contract", CodeInvalidValue, "embeddings surface"},
		{"bad on_unscanned", `{deployments: [{name: a, artifact: x, on_unscanned: ignore}]}`,
			dp + "/0/on_unscanned", CodeInvalidValue, "block, allow"},
		{"unknown key", `{deployments: [{name: a, artifact: x, replica: []}]}`,
			dp + "/0/replica", CodeUnknownField, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			set(t, v, "/global/model_catalog", y(t, tt.catalog))
			_, err := Parse(toJSON(t, v))
			assertProblem(t, err, tt.path, tt.code, tt.msg)
		})
	}
}

// The semantic check of on_unscanned holds for documents that bypass the
// schema (built in Go).
func TestDeploymentOnUnscannedSemantic(t *testing.T) {
	doc, err := Parse(toJSON(t, exampleValue(t)))
	if err != nil {
		t.Fatal(err)
	}
	doc.Global.ModelCatalog = &ModelCatalog{Deployments: []ModelDeployment{{Name: "a", Artifact: "x", OnUnscanned: "maybe"}}}
	assertProblem(t, doc.Validate(), "/global/model_catalog/deployments/0/on_unscanned", CodeInvalidValue, "block")
	doc.Global.ModelCatalog.Deployments[0].OnUnscanned = UnscannedAllow
	if err := doc.Validate(); err != nil {
		t.Errorf("on_unscanned allow: %v", err)
	}
}

// global.router.enabled false keeps deployments declared but refuses
// bindings to them; it must be a boolean.
func TestRouterEnabled(t *testing.T) {
	v := exampleValue(t)
	set(t, v, "/global/model_catalog", y(t, catalogOK))
	set(t, v, "/global/router", y(t, `{enabled: false}`))
	_, err := Parse(toJSON(t, v))
	assertProblem(t, err, "/global/model_catalog/bindings/jailbreak", CodeConflict, "global.router.enabled is false")

	set(t, v, "/global/model_catalog", y(t, `{deployments: [{name: guard, artifact: jailbreak-glove}]}`))
	doc, err := Parse(toJSON(t, v))
	if err != nil {
		t.Fatalf("deployments without bindings under enabled false: %v", err)
	}
	if doc.Global.ModelRuntimeEnabled() {
		t.Error("ModelRuntimeEnabled true under enabled: false")
	}

	set(t, v, "/global/router", y(t, `{enabled: "no"}`))
	_, err = Parse(toJSON(t, v))
	assertProblem(t, err, "/global/router/enabled", CodeWrongType, "")

	doc, err = Parse(toJSON(t, exampleValue(t)))
	if err != nil || !doc.Global.ModelRuntimeEnabled() {
		t.Errorf("default: enabled %v, %v", doc != nil && doc.Global.ModelRuntimeEnabled(), err)
	}
}
