package integration

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

func TestCreateUpdateEveryFieldAndDelete(t *testing.T) {
	t.Parallel()
	e := newEKSEnv(t)
	c := e.create(created("life"))
	if c.Status.Phase != v1.PhaseActive || !condIs(c, hosted.CondSynced, "True") {
		t.Fatalf("after create: phase %q conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	st := e.simCluster("life")
	if st.Version != "1.32" || st.Tags["team"] != "platform" || len(st.Nodegroups) != 1 || st.Nodegroups[0].DesiredSize != 2 || st.Nodegroups[0].Labels["pool"] != "one" {
		t.Fatalf("simulator state after create: %+v", st)
	}
	up := c.Status.EKSStatus.UpstreamSpec
	if *up.KubernetesVersion != "1.32" || len(up.NodeGroups) != 1 || *up.NodeGroups[0].Version != "1.32" {
		t.Fatalf("upstreamSpec after create: %+v", up)
	}
	// Every field of a created cluster is managed (non-nil).
	if cfg := c.Spec.EKSConfig; cfg.PublicAccessSources == nil || cfg.SecurityGroups == nil || cfg.NodeGroups[0].InstanceType == nil {
		t.Fatalf("created cluster has unmanaged fields: %+v", cfg)
	}

	steps := []struct {
		name  string
		edit  func(*v1.EKSClusterConfig)
		check func(t *testing.T)
	}{
		{"kubernetesVersion", func(c *v1.EKSClusterConfig) { c.KubernetesVersion = ptr.To("1.33") },
			func(t *testing.T) { wantEq(t, e.simCluster("life").Version, "1.33") }},
		{"tags", func(c *v1.EKSClusterConfig) { c.Tags = map[string]string{"team": "infra", "env": "prod"} },
			func(t *testing.T) {
				wantEq(t, e.simCluster("life").Tags, map[string]string{"team": "infra", "env": "prod"})
			}},
		{"privateAccess", func(c *v1.EKSClusterConfig) { c.PrivateAccess = ptr.To(true) },
			func(t *testing.T) { wantEq(t, e.simCluster("life").EndpointPrivateAccess, true) }},
		{"publicAccessSources", func(c *v1.EKSClusterConfig) { c.PublicAccessSources = []string{"203.0.113.0/24"} },
			func(t *testing.T) { wantEq(t, e.simCluster("life").PublicAccessCIDRs, []string{"203.0.113.0/24"}) }},
		{"loggingTypes", func(c *v1.EKSClusterConfig) { c.LoggingTypes = []string{"audit", "api"} },
			func(t *testing.T) { wantEq(t, sorted(e.simCluster("life").LoggingTypes), []string{"api", "audit"}) }},
		{"node group scaling", func(c *v1.EKSClusterConfig) {
			c.NodeGroups[0].DesiredSize, c.NodeGroups[0].MaxSize = ptr.To[int32](4), ptr.To[int32](5)
		},
			func(t *testing.T) {
				ng := e.simCluster("life").Nodegroups[0]
				wantEq(t, []int32{ng.DesiredSize, ng.MaxSize}, []int32{4, 5})
			}},
		{"node group labels", func(c *v1.EKSClusterConfig) { c.NodeGroups[0].Labels = map[string]string{"tier": "web"} },
			func(t *testing.T) {
				wantEq(t, e.simCluster("life").Nodegroups[0].Labels, map[string]string{"tier": "web"})
			}},
		{"node group version", func(c *v1.EKSClusterConfig) { c.NodeGroups[0].Version = ptr.To("1.33") },
			func(t *testing.T) { wantEq(t, e.simCluster("life").Nodegroups[0].Version, "1.33") }},
		{"node group tags", func(c *v1.EKSClusterConfig) { c.NodeGroups[0].Tags = map[string]string{"cost": "42"} },
			func(t *testing.T) {
				wantEq(t, e.simCluster("life").Nodegroups[0].Tags, map[string]string{"cost": "42"})
			}},
		{"add node group", func(c *v1.EKSClusterConfig) {
			c.NodeGroups = append(c.NodeGroups, v1.EKSNodeGroup{Name: "ng-2", NodeRole: ptr.To("arn:aws:iam::123456789012:role/node"), DesiredSize: ptr.To[int32](1), MinSize: ptr.To[int32](1), MaxSize: ptr.To[int32](1), Subnets: []string{"subnet-a"}, InstanceType: ptr.To("t3.large")})
		}, func(t *testing.T) {
			ngs := e.simCluster("life").Nodegroups
			if len(ngs) != 2 || ngs[1].Name != "ng-2" || ngs[1].InstanceTypes[0] != "t3.large" {
				t.Fatalf("node groups: %+v", ngs)
			}
		}},
		{"remove node group", func(c *v1.EKSClusterConfig) { c.NodeGroups = c.NodeGroups[1:] },
			func(t *testing.T) {
				ngs := e.simCluster("life").Nodegroups
				if len(ngs) != 1 || ngs[0].Name != "ng-2" {
					t.Fatalf("node groups: %+v", ngs)
				}
			}},
	}
	for _, s := range steps {
		e.edit("life", s.edit)
		c := e.settle("life")
		if !condIs(c, hosted.CondSynced, "True") {
			t.Fatalf("%s: not synced: %+v", s.name, c.Status.Conditions)
		}
		s.check(t)
		// drover's view of upstream agrees with the simulator after the next refresh.
		c = e.refresh("life")
		if !reflect.DeepEqual(c.Spec.EKSConfig.Tags, c.Status.EKSStatus.UpstreamSpec.Tags) {
			t.Fatalf("%s: config tags %v, upstream %v", s.name, c.Spec.EKSConfig.Tags, c.Status.EKSStatus.UpstreamSpec.Tags)
		}
	}

	if err := mgmt.Client.Delete(context.Background(), e.get("life")); err != nil {
		t.Fatal(err)
	}
	if c := e.settle("life"); c != nil {
		t.Fatalf("Cluster still exists after delete: %+v", c.Status)
	}
	if _, ok := e.sim.Cluster("us-west-2", "life"); ok {
		t.Fatal("EKS cluster still exists in the simulator after delete")
	}
	if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "life"}, &v1.Cluster{}); err == nil {
		t.Fatal("Cluster object still exists")
	}
}

func wantEq(t *testing.T, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
