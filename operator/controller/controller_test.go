package controller_test

import (
	"context"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/controller"
	"github.com/junction-router/junction/operator/convert"
	"github.com/junction-router/junction/recipes"
)

type env struct {
	t   *testing.T
	c   client.Client
	r   *controller.Reconciler
	key types.NamespacedName
}

// newEnv loads the committed sample as the API server would admit it (CRD defaults applied) into a fake
// client, with the status subresource as the CRD declares it.
func newEnv(t *testing.T, edit func(*v1alpha1.JunctionRouter)) *env {
	return newEnvWith(t, nil, edit)
}

// newEnvWith is newEnv on a cluster whose RESTMapper knows the kinds of the scheme and extra (the CRDs a
// cluster has installed beyond Kubernetes' own and the JunctionRouter's), holding objs as well.
func newEnvWith(t *testing.T, extra []schema.GroupVersionKind, edit func(*v1alpha1.JunctionRouter), objs ...client.Object) *env {
	t.Helper()
	return newEnvFrom(t, "../config/samples/junctionrouter.yaml", extra, edit, objs...)
}

// newEnvFrom is newEnvWith on the committed sample in file.
func newEnvFrom(t *testing.T, file string, extra []schema.GroupVersionKind, edit func(*v1alpha1.JunctionRouter), objs ...client.Object) *env {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := convert.Schema()
	if err != nil {
		t.Fatal(err)
	}
	jr, err := convert.LoadResource(context.Background(), s, b)
	if err != nil {
		t.Fatal(err)
	}
	jr.Generation = 1
	if edit != nil {
		edit(jr)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for gvk := range scheme.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	for _, gvk := range extra {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
		WithObjects(append([]client.Object{jr}, objs...)...).WithStatusSubresource(jr).Build()
	return &env{t: t, c: c, r: &controller.Reconciler{Client: c, Scheme: scheme}, key: types.NamespacedName{Namespace: jr.Namespace, Name: jr.Name}}
}

func (e *env) reconcile() ctrl.Result {
	e.t.Helper()
	res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: e.key})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) get(name string, obj client.Object) bool {
	e.t.Helper()
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.key.Namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return true
}

func (e *env) resource() *v1alpha1.JunctionRouter {
	e.t.Helper()
	var jr v1alpha1.JunctionRouter
	if !e.get(e.key.Name, &jr) {
		e.t.Fatal("the resource is gone")
	}
	return &jr
}

func (e *env) update(edit func(*v1alpha1.JunctionRouter)) {
	e.t.Helper()
	jr := e.resource()
	edit(jr)
	jr.Generation++
	if err := e.c.Update(context.Background(), jr); err != nil {
		e.t.Fatal(err)
	}
}

func condition(jr *v1alpha1.JunctionRouter, typ string) metav1.Condition {
	c := meta.FindStatusCondition(jr.Status.Conditions, typ)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

// TestReconcileSample: the sample's ConfigMap holds exactly what convert makes (and Junction accepts), the
// Deployment, Service, HPA and Ingress are what its spec says, each owned by the resource.
func TestReconcileSample(t *testing.T) {
	e := newEnv(t, nil)
	e.reconcile()
	jr := e.resource()

	var cm corev1.ConfigMap
	if !e.get("junction-sample-config", &cm) {
		t.Fatal("no ConfigMap")
	}
	want, err := convert.ToYAML(jr)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[controller.ConfigKey] != string(want) {
		t.Errorf("ConfigMap holds\n%s\nwant\n%s", cm.Data[controller.ConfigKey], want)
	}
	if _, _, err := recipes.ParseSource([]byte(cm.Data[controller.ConfigKey])); err != nil {
		t.Errorf("Junction refuses the ConfigMap's document: %v", err)
	}

	var dep appsv1.Deployment
	if !e.get("junction-sample", &dep) {
		t.Fatal("no Deployment")
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want minReplicas 2 (autoscaling is on)", dep.Spec.Replicas)
	}
	pod := dep.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("containers = %d", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Image != "ghcr.io/junction-router/junction:v0.1.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s %s", c.Image, c.ImagePullPolicy)
	}
	if strings.Join(c.Args, " ") != "serve --config /etc/junction/config.yaml" {
		t.Errorf("args = %v", c.Args)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/ready" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/health" {
		t.Errorf("probes: readiness %+v liveness %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if c.ReadinessProbe.HTTPGet.Port.StrVal != "management" {
		t.Errorf("probe port = %v", c.ReadinessProbe.HTTPGet.Port)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 8801 || ports["management"] != 8080 || ports["metrics"] != 9190 || ports["extproc"] != 50051 {
		t.Errorf("container ports = %v", ports)
	}
	if c.Resources.Requests.Cpu().String() != "500m" || c.Resources.Limits.Memory().String() != "2Gi" {
		t.Errorf("resources = %+v", c.Resources)
	}
	if len(c.Env) != 2 || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.SecretKeyRef.Name != "upstream-keys" ||
		c.Env[1].Name != "GODEBUG" || c.Env[1].Value != "schedtrace=2147483647" {
		t.Errorf("env = %+v, want the sample's upstream key and GODEBUG=schedtrace=2147483647", c.Env)
	}
	if pod.Annotations[controller.ConfigHashAnno] == "" || pod.Annotations[controller.ConfigHashAnno] != jr.Status.ConfigHash {
		t.Errorf("config hash annotation %q, status %q", pod.Annotations[controller.ConfigHashAnno], jr.Status.ConfigHash)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].ConfigMap.Name != "junction-sample-config" {
		t.Errorf("volumes = %+v", pod.Spec.Volumes)
	}

	var svc corev1.Service
	if !e.get("junction-sample", &svc) {
		t.Fatal("no Service")
	}
	sp := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		sp[p.Name] = p.Port
	}
	if len(sp) != 4 || sp["http"] != 8801 || sp["management"] != 8080 || sp["metrics"] != 9190 || sp["extproc"] != 50051 {
		t.Errorf("service ports = %v", sp)
	}
	if svc.Spec.Selector["app.kubernetes.io/instance"] != "junction-sample" {
		t.Errorf("selector = %v", svc.Spec.Selector)
	}

	var hpa autoscalingv2.HorizontalPodAutoscaler
	if !e.get("junction-sample", &hpa) {
		t.Fatal("no HorizontalPodAutoscaler")
	}
	if *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 6 || *hpa.Spec.Metrics[0].Resource.Target.AverageUtilization != 70 || hpa.Spec.ScaleTargetRef.Name != "junction-sample" {
		t.Errorf("hpa = %+v", hpa.Spec)
	}

	var ing networkingv1.Ingress
	if !e.get("junction-sample", &ing) {
		t.Fatal("no Ingress")
	}
	if *ing.Spec.IngressClassName != "nginx" || ing.Spec.Rules[0].Host != "llm.example.com" ||
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number != 8801 || ing.Spec.TLS[0].SecretName != "llm-example-tls" {
		t.Errorf("ingress = %+v", ing.Spec)
	}

	for _, o := range []client.Object{&cm, &dep, &svc, &hpa, &ing} {
		if !metav1.IsControlledBy(o, jr) {
			t.Errorf("%T %s is not controlled by the resource", o, o.GetName())
		}
	}
	if r := condition(jr, v1alpha1.ConditionReady); r.Status != metav1.ConditionFalse || r.Reason != controller.ReasonProgressing {
		t.Errorf("Ready before any pod = %+v", r)
	}
}

// TestReconcileChanges: turning autoscaling and the ingress off removes their objects and hands the replica
// count back to spec.replicas; a configuration change rolls the pods (new hash); a configuration Junction
// refuses leaves the last good ConfigMap in place and says why in Degraded.
func TestReconcileChanges(t *testing.T) {
	e := newEnv(t, nil)
	e.reconcile()
	var dep appsv1.Deployment
	e.get("junction-sample", &dep)
	oldHash := dep.Spec.Template.Annotations[controller.ConfigHashAnno]

	e.update(func(jr *v1alpha1.JunctionRouter) {
		jr.Spec.Autoscaling.Enabled = false
		jr.Spec.Ingress.Enabled = false
		jr.Spec.Config.ReasoningEffort = "low"
		f := false
		jr.Spec.Metrics.Enabled = &f
	})
	e.reconcile()
	if e.get("junction-sample", &autoscalingv2.HorizontalPodAutoscaler{}) {
		t.Error("the HPA is still there")
	}
	if e.get("junction-sample", &networkingv1.Ingress{}) {
		t.Error("the Ingress is still there")
	}
	e.get("junction-sample", &dep)
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want spec.replicas 3", *dep.Spec.Replicas)
	}
	if dep.Spec.Template.Annotations[controller.ConfigHashAnno] == oldHash {
		t.Error("the configuration changed but the pod template's hash did not")
	}
	var svc corev1.Service
	e.get("junction-sample", &svc)
	if len(svc.Spec.Ports) != 3 {
		t.Errorf("with metrics off the Service has %d ports, want 3", len(svc.Spec.Ports))
	}
	var cm corev1.ConfigMap
	e.get("junction-sample-config", &cm)
	good := cm.Data[controller.ConfigKey]
	if !strings.Contains(good, "default_reasoning_effort: low") || !strings.Contains(good, "enabled: false") {
		t.Errorf("the ConfigMap did not follow the change:\n%s", good)
	}

	e.update(func(jr *v1alpha1.JunctionRouter) {
		jr.Spec.Config.DecisionModel = &v1alpha1.DecisionModel{Deployment: "judge"}
	})
	e.reconcile()
	jr := e.resource()
	if d := condition(jr, v1alpha1.ConditionDegraded); d.Status != metav1.ConditionTrue || d.Reason != controller.ReasonConfigRefused || !strings.Contains(d.Message, "spec.config.decision_model") {
		t.Errorf("Degraded = %+v", d)
	}
	if r := condition(jr, v1alpha1.ConditionReady); r.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", r)
	}
	e.get("junction-sample-config", &cm)
	if cm.Data[controller.ConfigKey] != good {
		t.Error("a refused configuration replaced the last good one")
	}
}

// TestDeletedResource: a resource gone by the time it is reconciled is no error.
func TestDeletedResource(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.c.Delete(context.Background(), e.resource()); err != nil {
		t.Fatal(err)
	}
	e.reconcile()
}

// TestRedisPasswordFromSecret: a key-value cache backend's password_secret_ref reaches the pod as the
// environment variable the converted configuration names, beside the resource's own env.
func TestRedisPasswordFromSecret(t *testing.T) {
	e := newEnv(t, func(jr *v1alpha1.JunctionRouter) {
		on := true
		jr.Spec.Config.SemanticCache = nil
		jr.Spec.Config.ResponseCache = &v1alpha1.CacheConfig{Enabled: &on, BackendType: "key_value", KeyValue: &v1alpha1.KeyValueBackend{
			Connection: v1alpha1.KeyValueConnection{Host: "redis.cache.svc", PasswordSecretRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password"}},
			Index: v1alpha1.KeyValueIndex{Name: "semantic_cache_idx", Prefix: "doc:", IndexType: "HNSW",
				VectorField: v1alpha1.VectorField{Name: "embedding", MetricType: "COSINE"}},
		}}
	})
	e.reconcile()
	var cm corev1.ConfigMap
	if !e.get("junction-sample-config", &cm) || !strings.Contains(cm.Data[controller.ConfigKey], "password_env: "+convert.RedisPasswordEnv) {
		t.Fatalf("the ConfigMap does not name the password's variable:\n%s", cm.Data[controller.ConfigKey])
	}
	var dep appsv1.Deployment
	if !e.get("junction-sample", &dep) {
		t.Fatal("no Deployment")
	}
	env := dep.Spec.Template.Spec.Containers[0].Env
	own := e.resource().Spec.Env
	if len(env) != len(own)+2 { // and GODEBUG
		t.Fatalf("env = %+v", env)
	}
	last := env[len(own)]
	if last.Name != convert.RedisPasswordEnv || last.ValueFrom == nil || last.ValueFrom.SecretKeyRef == nil ||
		last.ValueFrom.SecretKeyRef.Name != "redis" || last.ValueFrom.SecretKeyRef.Key != "password" {
		t.Fatalf("the password's variable = %+v", last)
	}
}

// TestUserGODEBUGWins: spec.env naming GODEBUG replaces the sysmon tuning (no second entry), an empty value
// being how a resource turns it off; without one the container gets controller.SysmonGODEBUG.
func TestUserGODEBUGWins(t *testing.T) {
	for _, own := range []string{"", "http2debug=1"} {
		e := newEnv(t, func(jr *v1alpha1.JunctionRouter) {
			jr.Spec.Env = append(jr.Spec.Env, corev1.EnvVar{Name: "GODEBUG", Value: own})
		})
		e.reconcile()
		var dep appsv1.Deployment
		if !e.get("junction-sample", &dep) {
			t.Fatal("no Deployment")
		}
		var got []string
		for _, v := range dep.Spec.Template.Spec.Containers[0].Env {
			if v.Name == "GODEBUG" {
				got = append(got, v.Value)
			}
		}
		if len(got) != 1 || got[0] != own {
			t.Errorf("spec.env GODEBUG=%q: the container's GODEBUG entries are %q, want only the user's", own, got)
		}
	}
}
