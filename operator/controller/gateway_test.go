package controller_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/controller"
)

var (
	gatewayGVK   = schema.GroupVersionKind{Group: controller.GatewayAPIGroup, Version: "v1", Kind: "Gateway"}
	httpRouteGVK = schema.GroupVersionKind{Group: controller.GatewayAPIGroup, Version: "v1", Kind: "HTTPRoute"}
	// envoyGateway: the kinds a cluster with Envoy Gateway (and so the Gateway API CRDs) installed has.
	envoyGateway = []schema.GroupVersionKind{controller.EnvoyExtensionPolicyGVK, controller.ReferenceGrantGVK, gatewayGVK, httpRouteGVK}
)

func object(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// getU reads an unstructured object; false when it does not exist.
func (e *env) getU(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, bool) {
	e.t.Helper()
	u := object(gvk, ns, name)
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, u)
	if client.IgnoreNotFound(err) != nil {
		e.t.Fatal(err)
	}
	return u, err == nil
}

func withRef(ref v1alpha1.GatewayRef, edit func(*v1alpha1.GatewaySpec)) func(*v1alpha1.JunctionRouter) {
	return func(jr *v1alpha1.JunctionRouter) {
		jr.Spec.Gateway = &v1alpha1.GatewaySpec{ExistingRef: &ref}
		if edit != nil {
			edit(jr.Spec.Gateway)
		}
	}
}

// field reads a path of the object (map keys, and [i] for list items as ints in the path).
func field(t *testing.T, obj map[string]any, path ...any) any {
	t.Helper()
	var cur any = obj
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q", path, k)
			}
			if cur, ok = m[k]; !ok {
				t.Fatalf("%v: no field %q", path, k)
			}
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no item %d", path, k)
			}
			cur = l[k]
		}
	}
	return cur
}

// TestGatewayWithoutEnvoyGateway: on a cluster without Envoy Gateway's CRDs, a gateway reference is reported
// as not wired (and looked at again later), and nothing else fails.
func TestGatewayWithoutEnvoyGateway(t *testing.T) {
	e := newEnv(t, withRef(v1alpha1.GatewayRef{Name: "envoy", Namespace: "gw"}, nil))
	res := e.reconcile()
	jr := e.resource()
	g := condition(jr, controller.ConditionGatewayWired)
	if g.Status != metav1.ConditionFalse || g.Reason != controller.ReasonNoEnvoyGateway ||
		!strings.Contains(g.Message, "EnvoyExtensionPolicy") || !strings.Contains(g.Message, "junction-sample.default.svc:50051") {
		t.Errorf("GatewayWired = %+v", g)
	}
	if res.RequeueAfter == 0 {
		t.Error("not looked at again: Envoy Gateway installed later would never be wired")
	}
	if len(jr.Finalizers) != 0 {
		t.Errorf("finalizers = %v", jr.Finalizers)
	}
	var svc = object(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, "default", "junction-sample")
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(svc), svc); err != nil {
		t.Errorf("the rest was not reconciled: %v", err)
	}
}

// TestGatewayPolicy: with Envoy Gateway installed and the Gateway beside the resource, the controller writes
// one EnvoyExtensionPolicy, owned by the resource, whose every field is what Envoy Gateway's API
// (api/v1alpha1 envoyextensionypolicy_types.go, ext_proc_types.go, shared_types.go) and Junction's ext_proc
// need; an unchanged resource rewrites nothing; Envoy Gateway's verdict reaches GatewayWired.
func TestGatewayPolicy(t *testing.T) {
	e := newEnvWith(t, envoyGateway, withRef(v1alpha1.GatewayRef{Name: "envoy", Namespace: "default"}, nil),
		object(gatewayGVK, "default", "envoy"))
	e.reconcile()
	jr := e.resource()
	pol, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc")
	if !ok {
		t.Fatal("no EnvoyExtensionPolicy")
	}
	if pol.GetAPIVersion() != "gateway.envoyproxy.io/v1alpha1" || pol.GetKind() != "EnvoyExtensionPolicy" {
		t.Errorf("apiVersion %s kind %s", pol.GetAPIVersion(), pol.GetKind())
	}
	if !metav1.IsControlledBy(pol, jr) {
		t.Errorf("the policy is not controlled by the resource: %+v", pol.GetOwnerReferences())
	}
	if l := pol.GetLabels(); l["app.kubernetes.io/instance"] != "junction-sample" || l[controller.OwnerNamespaceLabel] != "default" {
		t.Errorf("labels = %v", l)
	}
	spec := pol.Object["spec"].(map[string]any)
	if len(spec) != 2 {
		t.Errorf("spec has %d fields, want targetRefs and extProc: %v", len(spec), spec)
	}
	// spec.targetRefs: []LocalPolicyTargetReferenceWithSectionName (group, kind, name); the policy must be in
	// the target's namespace (the reference is local).
	want := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "envoy"}
	if got := field(t, spec, "targetRefs", 0); !reflect.DeepEqual(got, want) || len(spec["targetRefs"].([]any)) != 1 {
		t.Errorf("targetRefs = %v", spec["targetRefs"])
	}
	eps := spec["extProc"].([]any)
	if len(eps) != 1 {
		t.Fatalf("extProc = %v", eps)
	}
	ep := eps[0].(map[string]any)
	for k := range ep {
		switch k {
		case "backendRefs", "backendSettings", "messageTimeout", "failOpen", "processingMode":
		default:
			t.Errorf("extProc has field %q, which the test does not know", k)
		}
	}
	// backendRefs: []BackendRef (gateway API's BackendObjectReference inline: group, kind, name, namespace,
	// port; and weight). The Service's ext_proc port.
	wantRef := map[string]any{"group": "", "kind": "Service", "name": "junction-sample", "namespace": "default", "port": int64(50051), "weight": int64(1)}
	if got := field(t, ep, "backendRefs", 0); !reflect.DeepEqual(got, wantRef) || len(ep["backendRefs"].([]any)) != 1 {
		t.Errorf("backendRefs = %#v", ep["backendRefs"])
	}
	// backendSettings.circuitBreaker (ClusterSettings.CircuitBreaker): every request in flight holds an
	// ext_proc stream, so the 1024 defaults of requests would cap the gateway.
	wantCB := map[string]any{"maxConnections": int64(1024), "maxPendingRequests": int64(100000), "maxParallelRequests": int64(100000), "maxParallelRetries": int64(1024)}
	if got := field(t, ep, "backendSettings"); !reflect.DeepEqual(got, map[string]any{"circuitBreaker": wantCB}) {
		t.Errorf("backendSettings = %#v", got)
	}
	// messageTimeout: gwapiv1.Duration ("5s"); failOpen: *bool, false (fail closed).
	if got := field(t, ep, "messageTimeout"); got != "5s" {
		t.Errorf("messageTimeout = %#v", got)
	}
	if got := field(t, ep, "failOpen"); got != false {
		t.Errorf("failOpen = %#v", got)
	}
	// processingMode: ExtProcProcessingMode. request present: headers sent, body Buffered; response present:
	// headers sent, body Buffered; allowModeOverride, so Junction switches streams to Streamed.
	wantPM := map[string]any{
		"request":           map[string]any{"body": "Buffered"},
		"response":          map[string]any{"body": "Buffered"},
		"allowModeOverride": true,
	}
	if got := field(t, ep, "processingMode"); !reflect.DeepEqual(got, wantPM) {
		t.Errorf("processingMode = %#v", got)
	}
	if _, ok := e.getU(controller.ReferenceGrantGVK, "default", "junction-sample-extproc"); ok {
		t.Error("a ReferenceGrant for a policy in the Service's own namespace")
	}
	if len(jr.Finalizers) != 0 {
		t.Errorf("finalizers = %v: an owner reference is enough in one namespace", jr.Finalizers)
	}
	g := condition(jr, controller.ConditionGatewayWired)
	if g.Status != metav1.ConditionTrue || g.Reason != controller.ReasonPolicyWritten ||
		!strings.Contains(g.Message, "default/junction-sample-extproc attaches ext_proc junction-sample.default.svc:50051 to Gateway default/envoy") ||
		!strings.Contains(g.Message, "not reported") {
		t.Errorf("GatewayWired = %+v", g)
	}

	// Unchanged: no update.
	rv := pol.GetResourceVersion()
	e.reconcile()
	if pol, _ = e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc"); pol.GetResourceVersion() != rv {
		t.Errorf("an unchanged resource rewrote the policy (resourceVersion %s → %s)", rv, pol.GetResourceVersion())
	}

	// Envoy Gateway's verdict, from status.ancestors[].conditions (gwapiv1.PolicyStatus).
	setAccepted := func(status, reason, msg string) {
		t.Helper()
		pol, _ := e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc")
		pol.Object["status"] = map[string]any{"ancestors": []any{map[string]any{
			"ancestorRef":    map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "envoy", "namespace": "default"},
			"controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
			"conditions":     []any{map[string]any{"type": "Accepted", "status": status, "reason": reason, "message": msg}},
		}}}
		if err := e.c.Update(context.Background(), pol); err != nil {
			t.Fatal(err)
		}
		e.reconcile()
	}
	setAccepted("False", "Invalid", "ExtProc: service default/junction-sample not found")
	if g := condition(e.resource(), controller.ConditionGatewayWired); g.Status != metav1.ConditionFalse || g.Reason != controller.ReasonPolicyNotAccepted ||
		!strings.Contains(g.Message, "Invalid: ExtProc: service default/junction-sample not found") {
		t.Errorf("GatewayWired after a refusal = %+v", g)
	}
	setAccepted("True", "Accepted", "Policy has been accepted.")
	if g := condition(e.resource(), controller.ConditionGatewayWired); g.Status != metav1.ConditionTrue || !strings.Contains(g.Message, "accepted by Envoy Gateway") {
		t.Errorf("GatewayWired after acceptance = %+v", g)
	}

	// Settings: failOpen, messageTimeout, streamed_body (full duplex request bodies; fail closed).
	e.update(func(jr *v1alpha1.JunctionRouter) {
		jr.Spec.Gateway.MessageTimeout = "2s"
		on := true
		jr.Spec.Config.StreamedBody = &v1alpha1.StreamedBody{Enabled: &on}
	})
	e.reconcile()
	pol, _ = e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc")
	ep = field(t, pol.Object, "spec", "extProc", 0).(map[string]any)
	if ep["messageTimeout"] != "2s" || field(t, ep, "processingMode", "request", "body") != "FullDuplexStreamed" || ep["failOpen"] != false {
		t.Errorf("extProc after the change = %#v", ep)
	}
	e.update(func(jr *v1alpha1.JunctionRouter) {
		jr.Spec.Config.StreamedBody = nil
		on := true
		jr.Spec.Gateway.FailOpen = &on
	})
	e.reconcile()
	pol, _ = e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc")
	ep = field(t, pol.Object, "spec", "extProc", 0).(map[string]any)
	if ep["failOpen"] != true || field(t, ep, "processingMode", "request", "body") != "Buffered" {
		t.Errorf("extProc with failOpen = %#v", ep)
	}

	// The reference removed: the policy goes, and so does the condition.
	e.update(func(jr *v1alpha1.JunctionRouter) { jr.Spec.Gateway = nil })
	e.reconcile()
	if _, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc"); ok {
		t.Error("the policy outlived its reference")
	}
	if g := condition(e.resource(), controller.ConditionGatewayWired); g.Type != "" {
		t.Errorf("GatewayWired without a reference = %+v", g)
	}
}

// TestGatewayPolicyAcrossNamespaces: an HTTPRoute in another namespace. The policy goes in the route's
// namespace (targetRefs are local), which an owner reference cannot reach, so the resource carries a
// finalizer that deletes it; a ReferenceGrant beside the Service lets the policy name it. Moving the
// reference and deleting the resource leave nothing behind.
func TestGatewayPolicyAcrossNamespaces(t *testing.T) {
	e := newEnvWith(t, envoyGateway, withRef(v1alpha1.GatewayRef{Name: "chat", Namespace: "gw", Kind: "HTTPRoute"}, nil))
	res := e.reconcile()
	jr := e.resource()
	pol, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "gw", "default-junction-sample-extproc")
	if !ok {
		t.Fatal("no policy in the route's namespace")
	}
	if len(pol.GetOwnerReferences()) != 0 {
		t.Errorf("a cross-namespace owner reference (the garbage collector would delete the policy): %+v", pol.GetOwnerReferences())
	}
	if l := pol.GetLabels(); l[controller.OwnerNamespaceLabel] != "default" || l["app.kubernetes.io/instance"] != "junction-sample" {
		t.Errorf("labels = %v", l)
	}
	if got := field(t, pol.Object, "spec", "targetRefs", 0); !reflect.DeepEqual(got, map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "chat"}) {
		t.Errorf("targetRefs[0] = %v", got)
	}
	if got := field(t, pol.Object, "spec", "extProc", 0, "backendRefs", 0, "namespace"); got != "default" {
		t.Errorf("backendRefs[0].namespace = %v", got)
	}
	if !reflect.DeepEqual(jr.Finalizers, []string{controller.PolicyFinalizer}) {
		t.Errorf("finalizers = %v", jr.Finalizers)
	}
	// ReferenceGrant (gateway.networking.k8s.io/v1beta1): from EnvoyExtensionPolicies of gw to this Service.
	grant, ok := e.getU(controller.ReferenceGrantGVK, "default", "junction-sample-extproc")
	if !ok {
		t.Fatal("no ReferenceGrant")
	}
	wantGrant := map[string]any{
		"from": []any{map[string]any{"group": "gateway.envoyproxy.io", "kind": "EnvoyExtensionPolicy", "namespace": "gw"}},
		"to":   []any{map[string]any{"group": "", "kind": "Service", "name": "junction-sample"}},
	}
	if !reflect.DeepEqual(grant.Object["spec"], wantGrant) || !metav1.IsControlledBy(grant, jr) {
		t.Errorf("ReferenceGrant = %#v owners %+v", grant.Object["spec"], grant.GetOwnerReferences())
	}
	// No such route yet: written (it attaches when the route appears), but not wired.
	g := condition(jr, controller.ConditionGatewayWired)
	if g.Status != metav1.ConditionFalse || g.Reason != controller.ReasonTargetNotFound || !strings.Contains(g.Message, "HTTPRoute gw/chat does not exist") {
		t.Errorf("GatewayWired without the route = %+v", g)
	}
	if res.RequeueAfter == 0 {
		t.Error("a missing route is not looked for again")
	}
	if err := e.c.Create(context.Background(), object(httpRouteGVK, "gw", "chat")); err != nil {
		t.Fatal(err)
	}
	e.reconcile()
	if g := condition(e.resource(), controller.ConditionGatewayWired); g.Status != metav1.ConditionTrue || !strings.Contains(g.Message, "to HTTPRoute gw/chat") {
		t.Errorf("GatewayWired with the route = %+v", g)
	}

	// Moved beside the resource: the old policy and the grant go, and the finalizer with them.
	if err := e.c.Create(context.Background(), object(gatewayGVK, "default", "envoy")); err != nil {
		t.Fatal(err)
	}
	e.update(func(jr *v1alpha1.JunctionRouter) {
		jr.Spec.Gateway.ExistingRef = &v1alpha1.GatewayRef{Name: "envoy", Namespace: "default"}
	})
	e.reconcile()
	if _, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "gw", "default-junction-sample-extproc"); ok {
		t.Error("the policy of the old reference is still there")
	}
	if _, ok := e.getU(controller.ReferenceGrantGVK, "default", "junction-sample-extproc"); ok {
		t.Error("the ReferenceGrant is still there")
	}
	if _, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc"); !ok {
		t.Error("no policy for the new reference")
	}
	if jr := e.resource(); len(jr.Finalizers) != 0 || condition(jr, controller.ConditionGatewayWired).Status != metav1.ConditionTrue {
		t.Errorf("finalizers %v, GatewayWired %+v", jr.Finalizers, condition(jr, controller.ConditionGatewayWired))
	}

	// Back across, then the resource deleted: the finalizer removes the policy, then lets the resource go.
	e.update(func(jr *v1alpha1.JunctionRouter) {
		jr.Spec.Gateway.ExistingRef = &v1alpha1.GatewayRef{Name: "chat", Namespace: "gw", Kind: "HTTPRoute"}
	})
	e.reconcile()
	if _, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "gw", "default-junction-sample-extproc"); !ok {
		t.Fatal("no policy after moving back")
	}
	if err := e.c.Delete(context.Background(), e.resource()); err != nil {
		t.Fatal(err)
	}
	e.reconcile()
	if _, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "gw", "default-junction-sample-extproc"); ok {
		t.Error("the policy outlived its resource")
	}
	var gone v1alpha1.JunctionRouter
	if e.get("junction-sample", &gone) {
		t.Errorf("the resource is still there, finalizers %v", gone.Finalizers)
	}
}

// TestGatewayCannotWire: a same-named policy not written for this resource is left alone and reported; a
// cross-namespace reference on a cluster without the ReferenceGrant kind is reported, nothing written.
func TestGatewayCannotWire(t *testing.T) {
	foreign := object(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc")
	foreign.Object["spec"] = map[string]any{"targetRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "other"}}}
	e := newEnvWith(t, envoyGateway, withRef(v1alpha1.GatewayRef{Name: "envoy", Namespace: "default"}, nil), foreign, object(gatewayGVK, "default", "envoy"))
	e.reconcile()
	if g := condition(e.resource(), controller.ConditionGatewayWired); g.Status != metav1.ConditionFalse || g.Reason != controller.ReasonPolicyNameTaken {
		t.Errorf("GatewayWired = %+v", g)
	}
	pol, _ := e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc")
	if got := field(t, pol.Object, "spec", "targetRefs", 0, "name"); got != "other" || len(pol.GetOwnerReferences()) != 0 {
		t.Errorf("the foreign policy was changed: %v", pol.Object)
	}

	e = newEnvWith(t, []schema.GroupVersionKind{controller.EnvoyExtensionPolicyGVK, gatewayGVK}, withRef(v1alpha1.GatewayRef{Name: "envoy", Namespace: "gw"}, nil))
	e.reconcile()
	jr := e.resource()
	if g := condition(jr, controller.ConditionGatewayWired); g.Status != metav1.ConditionFalse || g.Reason != controller.ReasonNoReferenceGrant {
		t.Errorf("GatewayWired = %+v", g)
	}
	if _, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "gw", "default-junction-sample-extproc"); ok || len(jr.Finalizers) != 0 {
		t.Errorf("written without the grant it needs (finalizers %v)", jr.Finalizers)
	}

	// failOpen with streamed_body (admitted under an older CRD): Envoy Gateway would refuse the policy.
	e = newEnvWith(t, envoyGateway, withRef(v1alpha1.GatewayRef{Name: "envoy", Namespace: "default"}, func(g *v1alpha1.GatewaySpec) {
		on := true
		g.FailOpen = &on
	}), object(gatewayGVK, "default", "envoy"))
	e.update(func(jr *v1alpha1.JunctionRouter) {
		on := true
		jr.Spec.Config.StreamedBody = &v1alpha1.StreamedBody{Enabled: &on}
	})
	e.reconcile()
	if g := condition(e.resource(), controller.ConditionGatewayWired); g.Status != metav1.ConditionFalse || g.Reason != controller.ReasonInvalidRef || !strings.Contains(g.Message, "streamed_body") {
		t.Errorf("GatewayWired = %+v", g)
	}
	if _, ok := e.getU(controller.EnvoyExtensionPolicyGVK, "default", "junction-sample-extproc"); ok {
		t.Error("a policy Envoy Gateway would refuse was written")
	}
}
