// Package v1alpha1 holds the JunctionRouter resource (group junction-router.io, version v1alpha1): the
// operator resource schema of spec 001. The CRD in operator/config/crd is generated from these types
// (make operator-crd); the markers on each field are its defaults, bounds, enums and cross-field rules.
//
// +kubebuilder:object:generate=true
// +groupName=junction-router.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the resource's group and version.
	GroupVersion = schema.GroupVersion{Group: "junction-router.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this group version with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
