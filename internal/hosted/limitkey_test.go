package hosted_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/gke"
)

// TestLimitKeyPerNamespace: a tenant naming another team's GKE project or Azure subscription
// (in its own spec or Secret, with any credentials) does not draw from that team's token
// bucket; Clusters of one namespace and account share one; per-provider rates still apply.
func TestLimitKeyPerNamespace(t *testing.T) {
	t.Parallel()
	gkeCluster := func(ns string) *v1.Cluster {
		return &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{ProjectID: "team-b-prod"}}}
	}
	aksCluster := func(ns string) *v1.Cluster {
		return &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Spec: v1.ClusterSpec{AKSConfig: &v1.AKSClusterConfig{}}}
	}
	sub := &corev1.Secret{Data: map[string][]byte{aks.KeySubscriptionID: []byte("SUB-1")}}
	l := &hosted.Limits{QPS: 10, Burst: 50, PerProvider: map[string]hosted.Rate{"aks": {QPS: 25, Burst: 250}}}
	for _, tc := range []struct {
		name string
		p    hosted.Provider
		c    func(string) *v1.Cluster
		s    *corev1.Secret
	}{
		{"gke project in the spec", gke.Provider{}, gkeCluster, nil},
		{"aks subscription in the Secret", aks.Provider{}, aksCluster, sub},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, b2 := hosted.LimitKey(tc.p, tc.c("team-a"), tc.s), hosted.LimitKey(tc.p, tc.c("team-b"), tc.s), hosted.LimitKey(tc.p, tc.c("team-b"), tc.s)
			if l.Transport(a) == l.Transport(b) {
				t.Errorf("namespaces team-a and team-b share the bucket %q", a)
			}
			if l.Transport(b) != l.Transport(b2) {
				t.Errorf("one namespace's Clusters of one account do not share a bucket: %q, %q", b, b2)
			}
		})
	}
	if got := hosted.LimitKey(aks.Provider{}, aksCluster("team-a"), sub); got[:4] != "aks/" {
		t.Errorf("key %q: the provider's rate (PerProvider) must still apply", got)
	}
}
