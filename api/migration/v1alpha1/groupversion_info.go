// Package v1alpha1 contains the migration.drover.io/v1alpha1 API: in-place migrations of
// downstream clusters, starting with in-tree AWS → out-of-tree AWS cloud controller manager.
// +kubebuilder:object:generate=true
// +groupName=migration.drover.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "migration.drover.io", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
