// Package v1alpha1 holds the JunctionRouter resource (group junction-router.io, version v1alpha1): the
// operator resource schema of spec 001. The CRD in operator/config/crd is generated from these types
// (make operator-crd); the markers on each field are its defaults, bounds, enums and cross-field rules.
// The package imports only apimachinery and the core API types, so clients can use it cheaply.
//
// +kubebuilder:object:generate=true
// +groupName=junction-router.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the resource's group and version.
var GroupVersion = schema.GroupVersion{Group: "junction-router.io", Version: "v1alpha1"}

// AddToScheme adds the kinds of this group version to a scheme (no package-level scheme is kept).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &JunctionRouter{}, &JunctionRouterList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
