package charts_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"

	"github.com/junction-router/junction/recipes"
)

// render renders chart dir with values over its defaults, as `helm template` does, and returns each
// manifest decoded, keyed "Kind/name".
func render(t *testing.T, dir string, values map[string]any) map[string]map[string]any {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "r", Namespace: "prod", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for name, text := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s does not parse: %v\n%s", name, err, doc)
			}
			if m == nil {
				continue
			}
			meta, _ := m["metadata"].(map[string]any)
			out[m["kind"].(string)+"/"+meta["name"].(string)] = m
		}
	}
	return out
}

// lintChart runs helm lint's rules (Chart.yaml, values, templates rendered and parsed as Kubernetes objects)
// and fails on any error or warning.
func lintChart(t *testing.T, dir string, values map[string]any) {
	t.Helper()
	res := lint.AllWithKubeVersion(dir, values, "prod", nil)
	for _, m := range res.Messages {
		t.Logf("helm lint %s: %s", dir, m.Error())
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint %s: %s", dir, m.Error())
		}
	}
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// TestOperatorChart: the operator's chart lints, installs the committed CRD and the generated ClusterRole's
// rules unchanged, and runs junction-operator run with leader election.
func TestOperatorChart(t *testing.T) {
	lintChart(t, "junction-operator", nil)
	objs := render(t, "junction-operator", map[string]any{"watchNamespace": "team-a"})
	crd, _ := os.ReadFile("junction-operator/crds/junction-router.io_junctionrouters.yaml")
	gen, _ := os.ReadFile("../config/crd/junction-router.io_junctionrouters.yaml")
	if len(gen) == 0 || !bytes.Equal(crd, gen) {
		t.Error("junction-operator/crds holds another CRD than config/crd: run make operator-crd")
	}
	var role map[string]any
	b, _ := os.ReadFile("../config/rbac/role.yaml")
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatal(err)
	}
	cr := objs["ClusterRole/r-junction-operator"]
	if cr == nil {
		t.Fatalf("no ClusterRole; rendered %v", keys(objs))
	}
	if a, b := mustYAML(cr["rules"]), mustYAML(role["rules"]); a != b {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/role.yaml:\n%s\nwant\n%s", a, b)
	}
	if objs["ClusterRoleBinding/r-junction-operator"] == nil || objs["ServiceAccount/r-junction-operator"] == nil {
		t.Errorf("rendered %v", keys(objs))
	}
	dep := objs["Deployment/r-junction-operator"]
	c := dig(dep, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	if got := mustYAML(c["args"]); !strings.Contains(got, "- run") || !strings.Contains(got, "--leader-elect") || !strings.Contains(got, "--namespace=team-a") {
		t.Errorf("args = %s", got)
	}
	if c["image"] != "ghcr.io/junction-router/junction-operator:0.1.0" {
		t.Errorf("image = %v", c["image"])
	}
}

// TestJunctionChart: the plain chart lints; its ConfigMap holds a document Junction accepts, with and without
// the Redis and PostgreSQL settings, whose secrets reach the pod by reference only.
func TestJunctionChart(t *testing.T) {
	lintChart(t, "junction", nil)
	objs := render(t, "junction", nil)
	doc := configOf(t, objs)
	if len(doc.Listeners) != 1 || doc.Listeners[0].Address != "0.0.0.0" || doc.Global.State != nil {
		t.Errorf("default document: listeners %+v state %+v", doc.Listeners, doc.Global.State)
	}
	if objs["HorizontalPodAutoscaler/r-junction"] != nil || objs["Ingress/r-junction"] != nil {
		t.Error("autoscaler or ingress rendered while disabled")
	}
	svc := objs["Service/r-junction"]
	if got := mustYAML(dig(svc, "spec", "ports")); !strings.Contains(got, "port: 8801") || !strings.Contains(got, "port: 8080") || !strings.Contains(got, "port: 9190") || !strings.Contains(got, "port: 50051") {
		t.Errorf("service ports = %s", got)
	}

	shared := map[string]any{
		"redis":       map[string]any{"enabled": true, "address": "redis.cache:6379", "passwordSecret": map[string]any{"name": "redis", "key": "password"}},
		"postgres":    map[string]any{"enabled": true, "dsnSecret": map[string]any{"name": "pg", "key": "dsn"}},
		"autoscaling": map[string]any{"enabled": true, "maxReplicas": 5},
		"ingress":     map[string]any{"enabled": true, "className": "nginx", "hosts": []any{map[string]any{"host": "llm.example.com"}}},
	}
	lintChart(t, "junction", shared)
	objs = render(t, "junction", shared)
	doc = configOf(t, objs)
	if s := doc.Global.State; s == nil || s.Backend != "redis" || s.Redis == nil || s.Redis.Address != "redis.cache:6379" || s.Redis.PasswordEnv != "JUNCTION_REDIS_PASSWORD" {
		t.Errorf("state = %+v", s)
	}
	if s := doc.Global.Storage; s == nil || s.Backend != "postgres" || s.Postgres == nil || s.Postgres.DSNEnv != "JUNCTION_POSTGRES_DSN" {
		t.Errorf("storage = %+v", s)
	}
	dep := objs["Deployment/r-junction"]
	env := mustYAML(dig(dep, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["env"])
	for _, want := range []string{"name: JUNCTION_REDIS_PASSWORD", "name: redis", "name: JUNCTION_POSTGRES_DSN", "name: pg"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if dig(dep, "spec", "replicas") != nil {
		t.Error("replicas set while the autoscaler owns them")
	}
	if objs["HorizontalPodAutoscaler/r-junction"] == nil || objs["Ingress/r-junction"] == nil {
		t.Errorf("rendered %v", keys(objs))
	}
}

func configOf(t *testing.T, objs map[string]map[string]any) *recipes.Document {
	t.Helper()
	cm := objs["ConfigMap/r-junction-config"]
	text, _ := dig(cm, "data", "config.yaml").(string)
	doc, _, err := recipes.ParseSource([]byte(text))
	if err != nil {
		t.Fatalf("Junction refuses the chart's configuration: %v\n%s", err, text)
	}
	return doc
}

func mustYAML(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

func keys(m map[string]map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
