package recipes

import (
	"testing"
)

func TestNativeAPILoad(t *testing.T) {
	v := exampleValue(t)
	set(t, v, "/global/model_catalog", y(t, catalogOK))
	set(t, v, "/global/services/native_api", y(t, `{enabled: true, models: [guard, shared], api_keys: [{name: team, env: TEAM_KEY, models: [guard]}, {name: ops, file: /run/ops.key, models: ["*"]}]}`))
	doc, err := Parse(toJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	n := doc.Global.Services.NativeAPI
	if n.Addr() != "127.0.0.1:8899" || len(n.APIKeys) != 2 || n.APIKeys[1].Models[0] != "*" {
		t.Fatalf("native_api not read: %+v (%s)", n, n.Addr())
	}
	if got := n.Published(doc.Global.ModelCatalog); len(got) != 2 || got[1] != "shared" {
		t.Errorf("published: %v", got)
	}
	n.Models = nil
	if got := n.Published(doc.Global.ModelCatalog); len(got) != 3 {
		t.Errorf("every deployment is published when models is empty: %v", got)
	}
}

func TestNativeAPIProblems(t *testing.T) {
	const np = "/global/services/native_api"
	tests := []struct {
		name, catalog, native, path, code, msg string
	}{
		{"no deployments", ``, `{enabled: true}`, np + "/enabled", CodeMissingField, "declares none"},
		{"unknown model", catalogOK, `{enabled: true, models: [gaurd]}`, np + "/models/0", CodeUnknownRef, `"gaurd" is not in`},
		{"model twice", catalogOK, `{enabled: true, models: [guard, guard]}`, np + "/models/1", CodeDuplicate, "already published"},
		{"inline key", catalogOK, `{enabled: true, api_keys: [{name: k, models: [guard]}]}`, np + "/api_keys/0", CodeConflict, "never written inline"},
		{"two sources", catalogOK, `{enabled: true, api_keys: [{name: k, env: A, file: /b, models: [guard]}]}`, np + "/api_keys/0", CodeConflict, "exactly one source"},
		{"no grants", catalogOK, `{enabled: true, api_keys: [{name: k, env: A, models: []}]}`, np + "/api_keys/0/models", CodeMissingField, "grants no model"},
		{"unpublished grant", catalogOK, `{enabled: true, models: [guard], api_keys: [{name: k, env: A, models: [pool]}]}`, np + "/api_keys/0/models/0", CodeUnknownRef, "does not publish"},
		{"key twice", catalogOK, `{enabled: true, api_keys: [{name: k, env: A, models: ["*"]}, {name: k, env: B, models: ["*"]}]}`, np + "/api_keys/1/name", CodeDuplicate, "defined twice"},
		{"port taken", catalogOK, `{enabled: true, port: 8080}`, np + "/port", CodeConflict, "already used"},
		{"bad address", catalogOK, `{enabled: true, address: "http://x"}`, np + "/address", CodeInvalidValue, "not a URL"},
		{"unknown key", catalogOK, `{enabled: true, api_key: x}`, np + "/api_key", CodeUnknownField, ""},
	}
	t.Run("router model runtime off", func(t *testing.T) {
		v := exampleValue(t)
		set(t, v, "/global/model_catalog", y(t, `{deployments: [{name: guard, artifact: jailbreak-glove}]}`))
		set(t, v, "/global/router", y(t, `{enabled: false}`))
		set(t, v, "/global/services/native_api", y(t, `{enabled: true}`))
		_, err := Parse(toJSON(t, v))
		assertProblem(t, err, np+"/enabled", CodeConflict, "global.router.enabled is false")
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			if tt.catalog != "" {
				set(t, v, "/global/model_catalog", y(t, tt.catalog))
			}
			set(t, v, "/global/services/native_api", y(t, tt.native))
			_, err := Parse(toJSON(t, v))
			assertProblem(t, err, tt.path, tt.code, tt.msg)
		})
	}
}
