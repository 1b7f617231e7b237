package join

import (
	"maps"
	"testing"

	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
)

// TestLabels: the fleet Cluster's labels name provider, region (a zonal GKE cluster's zone and
// its region), the version the provider reports over the configured one, and copy the hosted
// Cluster's labels except drover's own prefixes.
func TestLabels(t *testing.T) {
	own := map[string]string{"team": "platform", "management.drover.io/provider": "forged", "fleet.drover.io/managed": "false"}
	for _, tc := range []struct {
		name string
		p    hosted.Provider
		c    *v1.Cluster
		want map[string]string
	}{{
		name: "eks, upstream version wins",
		p:    eks.Provider{},
		c: &v1.Cluster{Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{Region: "us-west-2", KubernetesVersion: ptr.To("1.31")}},
			Status: v1.ClusterStatus{EKSStatus: &v1.EKSStatus{UpstreamSpec: &v1.EKSClusterConfig{KubernetesVersion: ptr.To("1.32")}}}},
		want: map[string]string{LabelProvider: "eks", LabelRegion: "us-west-2", LabelKubernetesVersion: "1.32"},
	}, {
		name: "aks, configured version before the first read",
		p:    aks.Provider{},
		c:    &v1.Cluster{Spec: v1.ClusterSpec{AKSConfig: &v1.AKSClusterConfig{ResourceLocation: "westeurope", KubernetesVersion: ptr.To("1.32")}}},
		want: map[string]string{LabelProvider: "aks", LabelRegion: "westeurope", LabelKubernetesVersion: "1.32"},
	}, {
		name: "gke zonal",
		p:    gke.Provider{},
		c:    &v1.Cluster{Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{Zone: "europe-west1-b", KubernetesVersion: ptr.To("1.33.5-gke.1000")}}},
		want: map[string]string{LabelProvider: "gke", LabelRegion: "europe-west1", LabelZone: "europe-west1-b", LabelKubernetesVersion: "1.33.5-gke.1000"},
	}, {
		name: "a version that is no label value is left out",
		p:    eks.Provider{},
		c:    &v1.Cluster{Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{Region: "us-east-1", KubernetesVersion: ptr.To("1.32 (latest)")}}},
		want: map[string]string{LabelProvider: "eks", LabelRegion: "us-east-1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Name, tc.c.Labels = "prod", own
			want := maps.Clone(tc.want)
			want["team"], want[LabelHostedCluster] = "platform", "prod"
			if got := Labels(tc.p, tc.c); !maps.Equal(got, want) {
				t.Errorf("Labels = %v, want %v", got, want)
			}
		})
	}
}
