package hosted_test

import (
	"testing"

	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/eks"
)

// TestViewDriftNeedsUpstream: a cluster never read from the provider (a new one, or one refused
// as AlreadyExists) shows no drift: the provider's values are unknown, not different. Once read,
// a managed field that differs is drift.
func TestViewDriftNeedsUpstream(t *testing.T) {
	p := eks.Provider{}
	c := &v1.Cluster{Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
		DisplayName: "x", Region: "us-west-2", KubernetesVersion: ptr.To("1.32"), Tags: map[string]string{"team": "a"},
	}}}
	drift := func() []string {
		t.Helper()
		up, err := p.Upstream(c)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := hosted.View(p, c, up)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			if r.Drift {
				out = append(out, r.Path)
			}
		}
		return out
	}
	if d := drift(); len(d) != 0 {
		t.Errorf("never read from the provider: drift %v, want none", d)
	}
	up := c.Spec.EKSConfig.DeepCopy()
	up.KubernetesVersion = ptr.To("1.31")
	c.Status.EKSStatus = &v1.EKSStatus{UpstreamSpec: up}
	if d := drift(); len(d) != 1 || d[0] != "kubernetesVersion" {
		t.Errorf("read, with one managed field different: drift %v, want [kubernetesVersion]", d)
	}
}
