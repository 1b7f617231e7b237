package register

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// RESTMapper maps the few upstream kinds the agent uses. It is static so that agent clients do
// not run API discovery against the management cluster: at fleet scale (every agent
// registering at once) discovery documents were a large share of the API server's work.
var RESTMapper meta.RESTMapper = func() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"Cluster", "ClusterRegistration", "BundleDeployment", "BundleContent"} {
		m.Add(fleetv1alpha1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	for _, kind := range []string{"Secret", "ConfigMap", "ServiceAccount"} {
		m.Add(schema.GroupVersion{Version: "v1"}.WithKind(kind), meta.RESTScopeNamespace)
	}
	return m
}()
