package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/convert"
)

// The kinds of Envoy Gateway and the Gateway API the wiring writes or reads. They are handled as unstructured
// objects: github.com/envoyproxy/gateway's module would bring go-control-plane, the Gateway API module and
// much more into this module's build for a few fields, and the cluster need not run Envoy Gateway at all. The
// shapes follow envoyproxy/gateway api/v1alpha1 (envoyextensionypolicy_types.go, ext_proc_types.go,
// shared_types.go) and Gateway API's v1beta1 ReferenceGrant, the version Envoy Gateway watches.
var (
	EnvoyExtensionPolicyGVK = schema.GroupVersionKind{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Kind: "EnvoyExtensionPolicy"}
	ReferenceGrantGVK       = schema.GroupVersionKind{Group: GatewayAPIGroup, Version: "v1beta1", Kind: "ReferenceGrant"}
)

// GatewayAPIGroup is the group of Gateway and HTTPRoute (version v1).
const GatewayAPIGroup = "gateway.networking.k8s.io"

// The GatewayWired condition and its reasons.
const (
	ConditionGatewayWired = "GatewayWired"
	// ReasonPolicyWritten: the policy is in place (and accepted, when Envoy Gateway has said so).
	ReasonPolicyWritten = "PolicyWritten"
	// ReasonNoEnvoyGateway: the cluster has no EnvoyExtensionPolicy kind (Envoy Gateway's CRDs are not installed).
	ReasonNoEnvoyGateway = "EnvoyGatewayNotInstalled"
	// ReasonNoReferenceGrant: a policy in another namespace needs a ReferenceGrant, and the kind is missing.
	ReasonNoReferenceGrant = "ReferenceGrantNotInstalled"
	// ReasonTargetNotFound: the referenced Gateway or HTTPRoute does not exist (the policy is written anyway and
	// attaches once it does).
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonInvalidRef: the reference names a kind the policy cannot target, or the settings cannot be
	// combined.
	ReasonInvalidRef = "InvalidReference"
	// ReasonPolicyNameTaken: an object of that name that this resource does not own is in the way.
	ReasonPolicyNameTaken = "PolicyNameTaken"
	// ReasonPolicyNotAccepted: Envoy Gateway refused the policy; its message is quoted.
	ReasonPolicyNotAccepted = "PolicyNotAccepted"
)

const (
	// PolicyFinalizer is set on a resource whose policy lives in another namespace: an owner reference cannot
	// cross namespaces (the garbage collector treats such an owner as absent and deletes the dependent), so the
	// controller deletes that policy itself before the resource goes.
	PolicyFinalizer = "junction-router.io/envoy-policy"
	// OwnerNamespaceLabel, with app.kubernetes.io/instance, says which resource a policy belongs to.
	OwnerNamespaceLabel = "junction-router.io/owner-namespace"
	// gatewayRecheck is how soon a wiring that cannot be completed yet (no CRD, no target) is tried again.
	gatewayRecheck = time.Minute
	// extprocCircuit is Envoy's limit on concurrent ext_proc streams to Junction: every request in flight holds
	// one, so Envoy Gateway's default of 1024 would cap the gateway's concurrency (examples/envoy/envoy.yaml
	// raises it the same way).
	extprocCircuit = 100000
)

// policyName is the EnvoyExtensionPolicy's name: NAME-extproc beside the resource, NS-NAME-extproc in the
// target's namespace (the namespace keeps two resources of one name apart there).
func policyName(jr *v1alpha1.JunctionRouter) string {
	ref := jr.Spec.Gateway.ExistingRef
	if ref.Namespace == jr.Namespace {
		return jr.Name + "-extproc"
	}
	return jr.Namespace + "-" + jr.Name + "-extproc"
}

// grantName is the ReferenceGrant beside the resource that lets a policy in the target's namespace name the
// router's Service.
func grantName(jr *v1alpha1.JunctionRouter) string { return jr.Name + "-extproc" }

func policyLabels(jr *v1alpha1.JunctionRouter) map[string]string {
	l := labels(jr)
	l[OwnerNamespaceLabel] = jr.Namespace
	return l
}

// ownedBy selects the policies written for jr, in any namespace.
func ownedBy(jr *v1alpha1.JunctionRouter) client.MatchingLabels {
	return client.MatchingLabels{
		"app.kubernetes.io/managed-by": "junction-operator",
		"app.kubernetes.io/instance":   jr.Name,
		OwnerNamespaceLabel:            jr.Namespace,
	}
}

func (r *Reconciler) hasKind(gvk schema.GroupVersionKind) (bool, error) {
	_, err := r.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

func newUnstructured(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// extProcPolicySpec is the EnvoyExtensionPolicy's spec for jr: one ext_proc filter on the referenced Gateway
// (or HTTPRoute) calling the router's Service on port 50051, with the processing mode Junction needs (what
// examples/envoy/envoy.yaml configures on a plain Envoy):
//   - request headers and the body, Buffered: Junction routes on the body and answers the headers only then,
//     so x-selected-model, :path and the credentials still apply. With config.streamed_body the body is sent
//     FullDuplexStreamed (Junction still holds the headers until the body is read; one round trip less).
//   - response headers and body, Buffered, with allowModeOverride: Junction reads non-streamed answers whole
//     (usage, routing_metadata, the response phase) and switches event streams to Streamed and errors to None
//     at run time, so tokens are not held back.
//
// Numbers are int64 and the CRD's defaults are written out (weight, every circuit breaker field), so the
// object read back equals the one written and an unchanged resource makes no update.
func extProcPolicySpec(jr *v1alpha1.JunctionRouter) map[string]any {
	g := jr.Spec.Gateway
	ref := g.ExistingRef
	kind := ref.Kind
	if kind == "" {
		kind = "Gateway"
	}
	timeout := g.MessageTimeout
	if timeout == "" {
		timeout = "5s"
	}
	failOpen := g.FailOpen != nil && *g.FailOpen
	reqBody := "Buffered"
	if sb := jr.Spec.Config.StreamedBody; sb != nil && sb.Enabled != nil && *sb.Enabled {
		reqBody = "FullDuplexStreamed"
	}
	return map[string]any{
		"targetRefs": []any{map[string]any{"group": GatewayAPIGroup, "kind": kind, "name": ref.Name}},
		"extProc": []any{map[string]any{
			"backendRefs": []any{map[string]any{
				"group": "", "kind": "Service", "name": ServiceName(jr), "namespace": jr.Namespace,
				"port": int64(convert.ExtprocPort), "weight": int64(1),
			}},
			"backendSettings": map[string]any{"circuitBreaker": map[string]any{
				"maxConnections":      int64(1024),
				"maxPendingRequests":  int64(extprocCircuit),
				"maxParallelRequests": int64(extprocCircuit),
				"maxParallelRetries":  int64(1024),
			}},
			"messageTimeout": timeout,
			"failOpen":       failOpen,
			"processingMode": map[string]any{
				"request":           map[string]any{"body": reqBody},
				"response":          map[string]any{"body": "Buffered"},
				"allowModeOverride": true,
			},
		}},
	}
}

// gateway writes (or removes) the Envoy Gateway wiring and sets GatewayWired. It returns how soon to look
// again when the wiring cannot be completed yet.
func (r *Reconciler) gateway(ctx context.Context, jr *v1alpha1.JunctionRouter) (time.Duration, error) {
	var ref *v1alpha1.GatewayRef
	if jr.Spec.Gateway != nil {
		ref = jr.Spec.Gateway.ExistingRef
	}
	havePolicy, err := r.hasKind(EnvoyExtensionPolicyGVK)
	if err != nil {
		return 0, err
	}
	if ref == nil {
		// Only a resource that was wired has anything to undo (this saves a List on every reconcile).
		wired := meta.FindStatusCondition(jr.Status.Conditions, ConditionGatewayWired) != nil || controllerutil.ContainsFinalizer(jr, PolicyFinalizer)
		meta.RemoveStatusCondition(&jr.Status.Conditions, ConditionGatewayWired)
		if !wired {
			return 0, nil
		}
		if havePolicy {
			if err := r.deletePolicies(ctx, jr, ""); err != nil {
				return 0, err
			}
		}
		if err := r.deleteIfOwned(ctx, jr, newUnstructuredIfKnown(r, ReferenceGrantGVK, jr.Namespace, grantName(jr))); err != nil {
			return 0, err
		}
		return 0, r.setFinalizer(ctx, jr, false)
	}
	if kind := ref.Kind; kind != "" && kind != "Gateway" && kind != "HTTPRoute" {
		r.setCondition(jr, ConditionGatewayWired, metav1.ConditionFalse, ReasonInvalidRef,
			fmt.Sprintf("gateway.existingRef.kind %q: the policy attaches to a Gateway or an HTTPRoute", kind))
		return 0, nil
	}
	if sb := jr.Spec.Config.StreamedBody; jr.Spec.Gateway.FailOpen != nil && *jr.Spec.Gateway.FailOpen && sb != nil && sb.Enabled != nil && *sb.Enabled {
		// The CRD refuses this pair; a resource admitted under an older CRD may still carry it. Envoy Gateway
		// would refuse the policy (FullDuplexStreamed bodies must fail closed).
		r.setCondition(jr, ConditionGatewayWired, metav1.ConditionFalse, ReasonInvalidRef,
			"gateway.failOpen cannot be combined with config.streamed_body (full-duplex bodies must fail closed); turn one off")
		return 0, nil
	}
	if !havePolicy {
		r.setCondition(jr, ConditionGatewayWired, metav1.ConditionFalse, ReasonNoEnvoyGateway,
			fmt.Sprintf("the cluster has no %s kind (%s): install Envoy Gateway, or point your gateway's ext_proc filter at %s.%s.svc:%d yourself",
				EnvoyExtensionPolicyGVK.Kind, EnvoyExtensionPolicyGVK.GroupVersion(), ServiceName(jr), jr.Namespace, convert.ExtprocPort))
		return gatewayRecheck, r.setFinalizer(ctx, jr, false)
	}
	cross := ref.Namespace != jr.Namespace
	if cross {
		haveGrant, err := r.hasKind(ReferenceGrantGVK)
		if err != nil {
			return 0, err
		}
		if !haveGrant {
			r.setCondition(jr, ConditionGatewayWired, metav1.ConditionFalse, ReasonNoReferenceGrant,
				fmt.Sprintf("gateway %s/%s is in another namespace, so the policy needs a %s (%s) to name Service %s/%s, and the cluster has no such kind: install the Gateway API CRDs, or put the resource in namespace %s",
					ref.Namespace, ref.Name, ReferenceGrantGVK.Kind, ReferenceGrantGVK.GroupVersion(), jr.Namespace, ServiceName(jr), ref.Namespace))
			return gatewayRecheck, nil
		}
		// The finalizer goes on before the policy is written, so no policy outlives its resource.
		if err := r.setFinalizer(ctx, jr, true); err != nil {
			return 0, err
		}
	}
	// Policies of an earlier reference (another name or namespace) go first.
	if err := r.deletePolicies(ctx, jr, ref.Namespace+"/"+policyName(jr)); err != nil {
		return 0, err
	}
	if cross {
		if err := r.referenceGrant(ctx, jr, ref.Namespace); err != nil {
			return 0, fmt.Errorf("referencegrant: %w", err)
		}
	} else if err := r.deleteIfOwned(ctx, jr, newUnstructuredIfKnown(r, ReferenceGrantGVK, jr.Namespace, grantName(jr))); err != nil {
		return 0, err
	}
	pol, taken, err := r.policy(ctx, jr, cross)
	if err != nil {
		return 0, fmt.Errorf("envoyextensionpolicy: %w", err)
	}
	if taken {
		r.setCondition(jr, ConditionGatewayWired, metav1.ConditionFalse, ReasonPolicyNameTaken,
			fmt.Sprintf("%s %s/%s exists and was not written for this resource; delete or rename it", EnvoyExtensionPolicyGVK.Kind, ref.Namespace, policyName(jr)))
		return gatewayRecheck, nil
	}
	if !cross {
		if err := r.setFinalizer(ctx, jr, false); err != nil {
			return 0, err
		}
	}
	kind := ref.Kind
	if kind == "" {
		kind = "Gateway"
	}
	wrote := fmt.Sprintf("%s %s/%s attaches ext_proc %s.%s.svc:%d to %s %s/%s",
		EnvoyExtensionPolicyGVK.Kind, ref.Namespace, pol.GetName(), ServiceName(jr), jr.Namespace, convert.ExtprocPort, kind, ref.Namespace, ref.Name)
	found, known, err := r.targetExists(ctx, kind, ref)
	if err != nil {
		return 0, err
	}
	if known && !found {
		r.setCondition(jr, ConditionGatewayWired, metav1.ConditionFalse, ReasonTargetNotFound,
			fmt.Sprintf("%s %s/%s does not exist; %s once it does", kind, ref.Namespace, ref.Name, strings.Replace(wrote, " attaches ", " will attach ", 1)))
		return gatewayRecheck, nil
	}
	if refused := notAccepted(pol); refused != "" {
		r.setCondition(jr, ConditionGatewayWired, metav1.ConditionFalse, ReasonPolicyNotAccepted, "Envoy Gateway did not accept "+pol.GetName()+": "+refused)
		return 0, nil
	}
	if accepted(pol) {
		wrote += "; accepted by Envoy Gateway"
	} else {
		wrote += "; Envoy Gateway has not reported on it yet"
	}
	r.setCondition(jr, ConditionGatewayWired, metav1.ConditionTrue, ReasonPolicyWritten, wrote)
	return 0, nil
}

// newUnstructuredIfKnown is an object of gvk to delete, or nil when the cluster has no such kind (then there
// is nothing of it to delete).
func newUnstructuredIfKnown(r *Reconciler, gvk schema.GroupVersionKind, namespace, name string) client.Object {
	if ok, err := r.hasKind(gvk); err != nil || !ok {
		return nil
	}
	return newUnstructured(gvk, namespace, name)
}

// policy creates or updates the EnvoyExtensionPolicy; taken reports a same-named object not written for jr,
// which is left alone.
func (r *Reconciler) policy(ctx context.Context, jr *v1alpha1.JunctionRouter, cross bool) (*unstructured.Unstructured, bool, error) {
	ns := jr.Spec.Gateway.ExistingRef.Namespace
	pol := newUnstructured(EnvoyExtensionPolicyGVK, ns, policyName(jr))
	err := r.Get(ctx, client.ObjectKeyFromObject(pol), pol)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, false, err
	default:
		l := pol.GetLabels()
		for k, v := range ownedBy(jr) {
			if l[k] != v {
				return pol, true, nil
			}
		}
	}
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, pol, func() error {
		l := pol.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range policyLabels(jr) {
			l[k] = v
		}
		pol.SetLabels(l)
		pol.Object["spec"] = extProcPolicySpec(jr)
		if cross {
			return nil
		}
		return controllerutil.SetControllerReference(jr, pol, r.Scheme)
	})
	return pol, false, err
}

// referenceGrant lets EnvoyExtensionPolicies in the target's namespace name the router's Service (Envoy
// Gateway refuses a cross-namespace backendRef without one). It lives beside the resource, owned by it.
func (r *Reconciler) referenceGrant(ctx context.Context, jr *v1alpha1.JunctionRouter, from string) error {
	g := newUnstructured(ReferenceGrantGVK, jr.Namespace, grantName(jr))
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, g, func() error {
		g.SetLabels(labels(jr))
		g.Object["spec"] = map[string]any{
			"from": []any{map[string]any{"group": EnvoyExtensionPolicyGVK.Group, "kind": EnvoyExtensionPolicyGVK.Kind, "namespace": from}},
			"to":   []any{map[string]any{"group": "", "kind": "Service", "name": ServiceName(jr)}},
		}
		return controllerutil.SetControllerReference(jr, g, r.Scheme)
	})
	return err
}

// deletePolicies removes the policies written for jr in any namespace except keep ("namespace/name").
func (r *Reconciler) deletePolicies(ctx context.Context, jr *v1alpha1.JunctionRouter, keep string) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(EnvoyExtensionPolicyGVK.GroupVersion().WithKind(EnvoyExtensionPolicyGVK.Kind + "List"))
	if err := r.List(ctx, list, ownedBy(jr)); err != nil {
		return err
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.GetNamespace()+"/"+p.GetName() == keep {
			continue
		}
		if err := r.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// setFinalizer adds or removes PolicyFinalizer.
func (r *Reconciler) setFinalizer(ctx context.Context, jr *v1alpha1.JunctionRouter, on bool) error {
	if controllerutil.ContainsFinalizer(jr, PolicyFinalizer) == on {
		return nil
	}
	status := jr.Status.DeepCopy()
	if on {
		controllerutil.AddFinalizer(jr, PolicyFinalizer)
	} else {
		controllerutil.RemoveFinalizer(jr, PolicyFinalizer)
	}
	err := r.Update(ctx, jr)
	// The update answers with the stored status; the conditions worked out so far are kept.
	jr.Status = *status
	return err
}

// finalize runs for a resource being deleted: its policies in other namespaces go (the ones beside it are
// the garbage collector's), then the finalizer.
func (r *Reconciler) finalize(ctx context.Context, jr *v1alpha1.JunctionRouter) error {
	if !controllerutil.ContainsFinalizer(jr, PolicyFinalizer) {
		return nil
	}
	if ok, err := r.hasKind(EnvoyExtensionPolicyGVK); err != nil {
		return err
	} else if ok {
		if err := r.deletePolicies(ctx, jr, ""); err != nil {
			return err
		}
	}
	controllerutil.RemoveFinalizer(jr, PolicyFinalizer)
	return r.Update(ctx, jr)
}

// targetExists looks the Gateway or HTTPRoute up; known is false when the cluster has no such kind (then
// only Envoy Gateway's own status can tell).
func (r *Reconciler) targetExists(ctx context.Context, kind string, ref *v1alpha1.GatewayRef) (found, known bool, err error) {
	gvk := schema.GroupVersionKind{Group: GatewayAPIGroup, Version: "v1", Kind: kind}
	if ok, err := r.hasKind(gvk); err != nil || !ok {
		return false, false, err
	}
	// Unstructured, so read from the API server, not the cache: the target may be in a namespace the
	// operator's cache does not cover (junction-operator run --namespace).
	t := newUnstructured(gvk, ref.Namespace, ref.Name)
	err = r.Get(ctx, client.ObjectKeyFromObject(t), t)
	if apierrors.IsNotFound(err) {
		return false, true, nil
	}
	return err == nil, true, err
}

// policyConditions are the Accepted conditions Envoy Gateway wrote under status.ancestors[*].
func policyConditions(pol *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	ancestors, _, _ := unstructured.NestedSlice(pol.Object, "status", "ancestors")
	for _, a := range ancestors {
		am, _ := a.(map[string]any)
		conds, _, _ := unstructured.NestedSlice(am, "conditions")
		for _, c := range conds {
			if cm, ok := c.(map[string]any); ok && cm["type"] == "Accepted" {
				out = append(out, cm)
			}
		}
	}
	return out
}

func notAccepted(pol *unstructured.Unstructured) string {
	var msgs []string
	for _, c := range policyConditions(pol) {
		if c["status"] == "False" {
			msgs = append(msgs, fmt.Sprintf("%v: %v", c["reason"], c["message"]))
		}
	}
	return strings.Join(msgs, "; ")
}

func accepted(pol *unstructured.Unstructured) bool {
	cs := policyConditions(pol)
	for _, c := range cs {
		if c["status"] != "True" {
			return false
		}
	}
	return len(cs) > 0
}
