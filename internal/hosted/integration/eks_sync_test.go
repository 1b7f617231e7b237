package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// TestSeedRace is the incumbent's documented lost update, as a test: privateAccess is managed
// and false; someone enables it in the console; within the refresh interval a user edits tags in
// drover. Private access must stay on and the tags must be applied. Under enforce the console
// change is rolled back, and an event says so.
func TestSeedRace(t *testing.T) {
	t.Parallel()
	for _, policy := range []v1.SyncPolicy{v1.SyncPolicyAdopt, v1.SyncPolicyEnforce} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			e := newEKSEnv(t)
			c := created("race")
			c.Spec.SyncPolicy = policy
			e.create(c)
			if e.simCluster("race").EndpointPrivateAccess {
				t.Fatal("private access on before the console change")
			}

			e.console.setPrivateAccess(t, "race", true)                                   // 11:01, in the console
			e.simTime.Advance(simDelay)                                                   // the console's update completes
			e.edit("race", func(c *v1.EKSClusterConfig) { c.Tags["cost-center"] = "42" }) // 11:03, in drover
			got := e.settle("race")
			st := e.simCluster("race")

			if st.Tags["cost-center"] != "42" {
				t.Errorf("drover's tag edit was not applied: %v", st.Tags)
			}
			switch policy {
			case v1.SyncPolicyAdopt:
				if !st.EndpointPrivateAccess {
					t.Error("the console's private access change was lost: drover turned it off again")
				}
				if !*got.Spec.EKSConfig.PrivateAccess {
					t.Error("the console's change was not adopted into the config")
				}
			case v1.SyncPolicyEnforce:
				if st.EndpointPrivateAccess {
					t.Error("enforce: the console's drift was not rolled back")
				}
				if ev := e.events.find("DriftReverted"); len(ev) == 0 || !strings.Contains(ev[0], "privateAccess") {
					t.Errorf("enforce: no DriftReverted event naming privateAccess: %v", e.events.find("DriftReverted"))
				}
			}
		})
	}
}

func TestConflictDroverWinsAndSaysSo(t *testing.T) {
	t.Parallel()
	e := newEKSEnv(t)
	e.create(created("both"))
	st := e.simCluster("both")
	e.console.tag(t, st.ARN, map[string]string{"team": "console"})
	e.edit("both", func(c *v1.EKSClusterConfig) { c.Tags["team"] = "drover" })
	c := e.settle("both")
	if got := e.simCluster("both").Tags["team"]; got != "drover" {
		t.Fatalf("team tag = %q, want drover's value", got)
	}
	cond := cond(c, hosted.CondConflict)
	if cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "eksConfig.tags[team]") || !strings.Contains(cond.Message, `"console"`) || !strings.Contains(cond.Message, `"drover"`) {
		t.Fatalf("Conflict condition does not name the field and both values: %+v", cond)
	}
	// It stays reported after later refreshes, until the config changes again.
	if c = e.refresh("both"); !condIs(c, hosted.CondConflict, metav1.ConditionTrue) {
		t.Fatalf("Conflict cleared by a refresh: %+v", cond)
	}
	e.edit("both", func(c *v1.EKSClusterConfig) { c.Tags["env"] = "prod" })
	if c = e.settle("both"); !condIs(c, hosted.CondConflict, metav1.ConditionFalse) {
		t.Fatalf("Conflict still reported after a non-conflicting edit: %+v", cond)
	}
}

func TestImportManagesNothingUntilEdited(t *testing.T) {
	t.Parallel()
	e := newEKSEnv(t)
	e.console.createCluster(t, "legacy", "1.31")
	e.simTime.Advance(simDelay)
	c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "legacy"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
		DisplayName: "legacy", Region: "us-west-2", Imported: true, CredentialSecret: "aws",
	}}}
	if err := mgmt.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c = e.settle("legacy")
	if c.Status.Phase != v1.PhaseActive || *c.Status.EKSStatus.UpstreamSpec.KubernetesVersion != "1.31" || c.Status.EKSStatus.UpstreamSpec.Tags["owner"] != "terraform" {
		t.Fatalf("import: phase %q upstream %+v", c.Status.Phase, c.Status.EKSStatus.UpstreamSpec)
	}
	if cfg := c.Spec.EKSConfig; cfg.KubernetesVersion != nil || cfg.Tags != nil || cfg.NodeGroups != nil || cfg.LoggingTypes != nil {
		t.Fatalf("import wrote managed fields into the config: %+v", cfg)
	}

	// Managing one field pushes only that field.
	before := e.sim.Counters().Snapshot()
	e.edit("legacy", func(c *v1.EKSClusterConfig) { c.Tags = map[string]string{"owner": "terraform", "drover": "yes"} })
	e.settle("legacy")
	after := e.sim.Counters().Snapshot()
	if after["TagResource"]-before["TagResource"] != 1 || after["UpdateClusterConfig"] != before["UpdateClusterConfig"] || after["UpdateClusterVersion"] != before["UpdateClusterVersion"] {
		t.Fatalf("managing tags made other calls: before %v after %v", before, after)
	}

	// Console changes to unmanaged fields never produce an update call; to managed ones they are adopted.
	e.console.setLogging(t, "legacy", types.LogTypeAudit)
	e.simTime.Advance(simDelay)
	e.console.tag(t, e.simCluster("legacy").ARN, map[string]string{"console": "added"})
	before = e.sim.Counters().Snapshot()
	c = e.refresh("legacy")
	after = e.sim.Counters().Snapshot()
	for _, op := range []string{"UpdateClusterConfig", "UpdateClusterVersion", "TagResource", "UntagResource"} {
		if after[op] != before[op] {
			t.Errorf("refresh after console changes called %s", op)
		}
	}
	if c.Spec.EKSConfig.LoggingTypes != nil {
		t.Errorf("unmanaged loggingTypes became managed: %v", c.Spec.EKSConfig.LoggingTypes)
	}
	if c.Spec.EKSConfig.Tags["console"] != "added" {
		t.Errorf("console tag on the managed tags field was not adopted: %v", c.Spec.EKSConfig.Tags)
	}

	// Deleting an imported Cluster forgets it; the EKS cluster stays.
	if err := mgmt.Client.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.settle("legacy")
	if _, ok := e.sim.Cluster("us-west-2", "legacy"); !ok {
		t.Fatal("deleting an imported Cluster deleted the EKS cluster")
	}
}

func TestBadInputGivesConditionAndSendsNothing(t *testing.T) {
	t.Parallel()
	e := newEKSEnv(t)
	e.secret("wrong", "AKIAUNKNOWN", "nope")
	e.create(created("base"))

	tests := []struct {
		name     string
		cluster  func() *v1.Cluster
		existing func(*v1.EKSClusterConfig) // edit of the existing cluster instead
		cond     string
		reason   string
		field    string
	}{
		{name: "missing serviceRole", cluster: func() *v1.Cluster { c := created("norole"); c.Spec.EKSConfig.ServiceRole = nil; return c },
			cond: hosted.CondConfigValid, reason: "MissingField", field: "eksConfig.serviceRole"},
		{name: "unknown region", cluster: func() *v1.Cluster { c := created("mars"); c.Spec.EKSConfig.Region = "mars-north-1"; return c },
			cond: hosted.CondConfigValid, reason: "UnknownRegion", field: "eksConfig.region"},
		{name: "bad credential", cluster: func() *v1.Cluster { c := created("badcred"); c.Spec.EKSConfig.CredentialSecret = "wrong"; return c },
			cond: hosted.CondCredentials, reason: "Rejected", field: "UnrecognizedClientException"},
		{name: "missing credential secret", cluster: func() *v1.Cluster { c := created("nosecret"); c.Spec.EKSConfig.CredentialSecret = "absent"; return c },
			cond: hosted.CondCredentials, reason: "SecretNotFound", field: "eksConfig.credentialSecret"},
		{name: "downgrade", existing: func(c *v1.EKSClusterConfig) {
			c.KubernetesVersion, c.NodeGroups[0].Version = ptr.To("1.31"), ptr.To("1.31")
		},
			cond: hosted.CondConfigValid, reason: "VersionDowngrade", field: "eksConfig.kubernetesVersion"},
		{name: "minor skip", existing: func(c *v1.EKSClusterConfig) { c.KubernetesVersion = ptr.To("1.34") },
			cond: hosted.CondConfigValid, reason: "VersionSkip", field: "eksConfig.kubernetesVersion"},
		{name: "immutable instance type", existing: func(c *v1.EKSClusterConfig) { c.NodeGroups[0].InstanceType = ptr.To("m6i.xlarge") },
			cond: hosted.CondConfigValid, reason: "ImmutableField", field: "eksConfig.nodeGroups[ng-1].instanceType"},
		{name: "scaling out of range", existing: func(c *v1.EKSClusterConfig) { c.NodeGroups[0].DesiredSize = ptr.To[int32](9) },
			cond: hosted.CondConfigValid, reason: "InvalidScaling", field: "eksConfig.nodeGroups[ng-1].desiredSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutating := func() int64 {
				var n int64
				for op, v := range e.sim.Counters().Snapshot() {
					if !strings.HasPrefix(op, "Describe") && !strings.HasPrefix(op, "List") {
						n += v
					}
				}
				return n
			}
			before := mutating()
			name := "base"
			if tt.cluster != nil {
				c := tt.cluster()
				name = c.Name
				c.Namespace = e.ns
				if err := mgmt.Client.Create(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			} else {
				orig := e.get("base").Spec.EKSConfig.DeepCopy()
				e.edit("base", tt.existing)
				t.Cleanup(func() { e.edit("base", func(c *v1.EKSClusterConfig) { *c = *orig }); e.settle("base") })
			}
			_, _ = e.reconcile(name)
			c := e.get(name)
			got := cond(c, tt.cond)
			if got.Status != metav1.ConditionFalse || got.Reason != tt.reason || !strings.Contains(got.Message, tt.field) {
				t.Fatalf("%s condition = %+v, want False/%s naming %s", tt.cond, got, tt.reason, tt.field)
			}
			if after := mutating(); after != before {
				t.Fatalf("%d mutating call(s) were sent for bad input", after-before)
			}
		})
	}

	t.Run("duplicate node group names are refused by the API", func(t *testing.T) {
		c := created("dup")
		c.Namespace = e.ns
		c.Spec.EKSConfig.NodeGroups = append(c.Spec.EKSConfig.NodeGroups, c.Spec.EKSConfig.NodeGroups[0])
		err := mgmt.Client.Create(context.Background(), c)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "nodeGroups") {
			t.Fatalf("got %v, want Invalid naming nodeGroups", err)
		}
	})
}

// TestActiveRightAfterAnUpdateIsNotIdle: EKS reports ACTIVE for a while after accepting an update,
// before the new value shows. Treating that as idle would adopt the old value back into the
// config and undo the user's change (the incumbent's eks-operator#752). drover follows the
// update it started with DescribeUpdate instead.
func TestActiveRightAfterAnUpdateIsNotIdle(t *testing.T) {
	t.Parallel()
	e := newEKSEnvWith(t, &eksHarness{statusLag: 3 * simDelay})
	e.create(created("laggy"))
	e.edit("laggy", func(c *v1.EKSClusterConfig) { c.KubernetesVersion = ptr.To("1.33") })
	if _, err := e.reconcile("laggy"); err != nil { // pushes UpdateClusterVersion
		t.Fatal(err)
	}
	if st := e.simCluster("laggy"); st.Status != "ACTIVE" || st.Version != "1.32" {
		t.Fatalf("precondition: want EKS to report ACTIVE on 1.32 during the lag, got %s %s", st.Status, st.Version)
	}
	e.clock.Step(refresh * 2)
	if _, err := e.reconcile("laggy"); err != nil { // a refresh while EKS says ACTIVE, still on 1.32
		t.Fatal(err)
	}
	c := e.get("laggy")
	if *c.Spec.EKSConfig.KubernetesVersion != "1.33" {
		t.Fatalf("the old version was adopted back while the update ran: config %s", *c.Spec.EKSConfig.KubernetesVersion)
	}
	if c.Status.Phase != v1.PhaseUpdating || len(c.Status.PendingOperations) != 1 {
		t.Fatalf("phase %q pending %v, want updating with the update tracked", c.Status.Phase, c.Status.PendingOperations)
	}
	if c = e.settle("laggy"); e.simCluster("laggy").Version != "1.33" || *c.Spec.EKSConfig.KubernetesVersion != "1.33" {
		t.Fatalf("after the update: EKS %s, config %s", e.simCluster("laggy").Version, *c.Spec.EKSConfig.KubernetesVersion)
	}
}
