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
	files, err := renderFiles(dir, values)
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
// renderFiles renders chart dir with values: the templates' text by file name, or the error (a template's fail).
func renderFiles(dir string, values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "r", Namespace: "prod", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}

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

// TestJunctionChartRedisClusterAndTLS: redis.mode cluster with addresses renders global.state.redis.mode:
// cluster and the seed nodes (no db); TLS from a mounted Secret names its files as ca_file, cert_file and
// key_file and mounts it; values that Junction would refuse fail the render with what to change.
func TestJunctionChartRedisClusterAndTLS(t *testing.T) {
	cluster := map[string]any{"redis": map[string]any{
		"enabled": true, "mode": "cluster", "addresses": []any{"redis-0.redis:6379", "redis-1.redis:6379"},
		"passwordSecret": map[string]any{"name": "redis", "key": "password"},
		"tls":            map[string]any{"enabled": true, "secretName": "redis-tls", "clientCertificate": true},
	}}
	lintChart(t, "junction", cluster)
	objs := render(t, "junction", cluster)
	text, _ := dig(objs["ConfigMap/r-junction-config"], "data", "config.yaml").(string)
	for _, want := range []string{"mode: cluster", "addresses:", "- redis-0.redis:6379", "- redis-1.redis:6379"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendered configuration lacks %q:\n%s", want, text)
		}
	}
	doc := configOf(t, objs)
	s := doc.Global.State
	if s == nil || s.Redis == nil || s.Redis.Mode != "cluster" || strings.Join(s.Redis.Addresses, ",") != "redis-0.redis:6379,redis-1.redis:6379" ||
		s.Redis.Address != "" || s.Redis.DB != 0 || s.Redis.PasswordEnv != "JUNCTION_REDIS_PASSWORD" {
		t.Fatalf("state = %+v (redis %+v)", s, s.Redis)
	}
	if tls := s.Redis.TLS; tls == nil || !tls.Enabled || tls.CAFile != "/etc/junction-redis-tls/ca.crt" ||
		tls.CertFile != "/etc/junction-redis-tls/tls.crt" || tls.KeyFile != "/etc/junction-redis-tls/tls.key" {
		t.Fatalf("tls = %+v", tls)
	}
	pod := dig(objs["Deployment/r-junction"], "spec", "template", "spec").(map[string]any)
	if got := mustYAML(pod["volumes"]); !strings.Contains(got, "secretName: redis-tls") {
		t.Errorf("volumes lack the TLS Secret:\n%s", got)
	}
	if got := mustYAML(pod["containers"].([]any)[0].(map[string]any)["volumeMounts"]); !strings.Contains(got, "mountPath: /etc/junction-redis-tls") {
		t.Errorf("volumeMounts lack the TLS Secret:\n%s", got)
	}

	// One seed named as address, own file paths, no Secret mounted.
	seed := map[string]any{"redis": map[string]any{"enabled": true, "mode": "cluster", "address": "clustercfg.example:6379",
		"tls": map[string]any{"enabled": true, "caFile": "/certs/ca.pem"}}}
	doc = configOf(t, render(t, "junction", seed))
	if r := doc.Global.State.Redis; r.Mode != "cluster" || r.Address != "clustercfg.example:6379" || len(r.Addresses) != 0 || r.TLS.CAFile != "/certs/ca.pem" || r.TLS.CertFile != "" {
		t.Errorf("cluster by one seed: %+v tls %+v", r, r.TLS)
	}
	// Standalone stays as it was: address and db.
	doc = configOf(t, render(t, "junction", map[string]any{"redis": map[string]any{"enabled": true, "address": "r:6379", "db": 3}}))
	if r := doc.Global.State.Redis; r.Mode != "" || r.Address != "r:6379" || r.DB != 3 || r.TLS != nil {
		t.Errorf("standalone: %+v", r)
	}

	for _, tc := range []struct {
		redis map[string]any
		want  string
	}{
		{map[string]any{"mode": "cluster", "db": 2}, "database 0 only"},
		{map[string]any{"addresses": []any{"a:1"}}, "set redis.mode cluster"},
		{map[string]any{"mode": "sentinel"}, "standalone or cluster"},
		{map[string]any{"tls": map[string]any{"enabled": true, "certFile": "/c.pem"}}, "certFile and keyFile go together"},
	} {
		tc.redis["enabled"] = true
		if _, err := renderFiles("junction", map[string]any{"redis": tc.redis}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("redis %v: %v, want an error saying %q", tc.redis, err, tc.want)
		}
	}
}

// TestJunctionChartSysmonTuning: the container gets GODEBUG=schedtrace=2147483647 by default (sysmon kept out
// of its deep sleep: docs/operator.md#runtime-tuning-sysmon), none with runtime.sysmonTuning false, and only
// the user's own when values.env names GODEBUG.
func TestJunctionChartSysmonTuning(t *testing.T) {
	godebug := func(values map[string]any) []any {
		t.Helper()
		lintChart(t, "junction", values)
		c := dig(render(t, "junction", values)["Deployment/r-junction"], "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
		env, _ := c["env"].([]any)
		var vals []any
		for _, e := range env {
			if e.(map[string]any)["name"] == "GODEBUG" {
				vals = append(vals, e.(map[string]any)["value"])
			}
		}
		return vals
	}
	if got := godebug(nil); len(got) != 1 || got[0] != "schedtrace=2147483647" {
		t.Errorf("default GODEBUG entries %v, want one schedtrace=2147483647", got)
	}
	if got := godebug(map[string]any{"runtime": map[string]any{"sysmonTuning": false}}); len(got) != 0 {
		t.Errorf("runtime.sysmonTuning false: GODEBUG entries %v, want none", got)
	}
	own := map[string]any{"env": []any{map[string]any{"name": "GODEBUG", "value": "http2debug=1"}}}
	if got := godebug(own); len(got) != 1 || got[0] != "http2debug=1" {
		t.Errorf("values.env with GODEBUG: entries %v, want only the user's http2debug=1", got)
	}
	// Beside the Secrets' entries, the tuning is one more.
	withRedis := map[string]any{"redis": map[string]any{"enabled": true, "passwordSecret": map[string]any{"name": "redis", "key": "password"}}}
	if got := godebug(withRedis); len(got) != 1 {
		t.Errorf("with redis: GODEBUG entries %v, want one", got)
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
