package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestOwnerByLabels: the watches' mapping from a pod (labelled through the Deployment's template) or an
// Envoy Gateway policy (in the gateway's namespace, naming its resource's) to the resource to reconcile.
func TestOwnerByLabels(t *testing.T) {
	managed := map[string]string{"app.kubernetes.io/managed-by": "junction-operator", "app.kubernetes.io/instance": "jr"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "jr-7f9c-x", Labels: managed}}
	if got := ownerByLabels(pod); len(got) != 1 || got[0].NamespacedName != (client.ObjectKey{Namespace: "apps", Name: "jr"}) {
		t.Errorf("pod → %v", got)
	}
	pol := newUnstructured(EnvoyExtensionPolicyGVK, "gw", "apps-jr-extproc")
	pol.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "junction-operator", "app.kubernetes.io/instance": "jr", OwnerNamespaceLabel: "apps"})
	if got := ownerByLabels(pol); len(got) != 1 || got[0].NamespacedName != (client.ObjectKey{Namespace: "apps", Name: "jr"}) {
		t.Errorf("policy → %v", got)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "x", Labels: map[string]string{"app.kubernetes.io/instance": "jr"}}}
	if got := ownerByLabels(other); len(got) != 0 {
		t.Errorf("a pod the operator did not label → %v", got)
	}
}
