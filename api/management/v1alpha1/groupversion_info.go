// Package v1alpha1 contains the management.drover.io/v1alpha1 API: hosted (EKS, AKS, GKE)
// clusters that drover creates, imports, updates and deletes.
// +kubebuilder:object:generate=true
// +groupName=management.drover.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "management.drover.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
