// Package v1alpha1 contains the fleet.drover.io/v1alpha1 API: downstream clusters registered with
// drover, the tokens and registrations of the identity handshake, and the work (BundleDeployments)
// their agents apply.
// +kubebuilder:object:generate=true
// +groupName=fleet.drover.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "fleet.drover.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
