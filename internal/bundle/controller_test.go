package bundle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/server"
)

// cluster is a registered Cluster whose agent checked in reporting content slots.
func cluster(name string, labels map[string]string) *fleetv1alpha1.Cluster {
	seen := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	return &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: name, Labels: labels, UID: types.UID("uid-" + name)},
		Status: fleetv1alpha1.ClusterStatus{Namespace: "cluster-" + name, Agent: fleetv1alpha1.AgentStatus{LastSeen: &seen, FeaturesSeen: &seen,
			Features: []string{fleetv1alpha1.AgentFeatureContentSlots}}}}
}

func TestTargets(t *testing.T) {
	sel := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	c := cluster("a", map[string]string{"env": "prod", "region": "eu"})
	for _, tc := range []struct {
		name             string
		targets, exclude []fleetv1alpha1.BundleTarget
		want             bool
	}{
		{"no targets", nil, nil, false},
		{"empty target matches nothing", []fleetv1alpha1.BundleTarget{{}}, nil, false},
		{"by name", []fleetv1alpha1.BundleTarget{{ClusterName: "a"}}, nil, true},
		{"other name", []fleetv1alpha1.BundleTarget{{ClusterName: "b"}}, nil, false},
		{"by label", []fleetv1alpha1.BundleTarget{{ClusterSelector: sel("env", "prod")}}, nil, true},
		{"label mismatch", []fleetv1alpha1.BundleTarget{{ClusterSelector: sel("env", "dev")}}, nil, false},
		{"name and label both required", []fleetv1alpha1.BundleTarget{{ClusterName: "a", ClusterSelector: sel("env", "dev")}}, nil, false},
		{"any target", []fleetv1alpha1.BundleTarget{{ClusterName: "b"}, {ClusterSelector: sel("region", "eu")}}, nil, true},
		{"excluded", []fleetv1alpha1.BundleTarget{{ClusterSelector: sel("env", "prod")}}, []fleetv1alpha1.BundleTarget{{ClusterName: "a"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fleetv1alpha1.Bundle{Spec: fleetv1alpha1.BundleSpec{Targets: tc.targets, Exclude: tc.exclude}}
			got, err := Targets(b, c)
			if err != nil || got != tc.want {
				t.Errorf("Targets = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestRollout: updates are held while paused and limited by maxUnavailable, counting the
// clusters that are not ready (an update that never becomes ready halts the rollout; a cluster
// already not ready is updated first and does not use up the budget); new clusters get the
// current version regardless.
func TestRollout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rollout fleetv1alpha1.BundleRollout
		// notReady says which BundleDeployments their agents report applied but not ready.
		notReady func(bd *fleetv1alpha1.BundleDeployment, first string) bool
		// disconnected is a cluster whose agent is disconnected: it reports nothing after the
		// first version (readyBefore: it had reported that one ready).
		disconnected    string
		readyBefore     bool
		wantUpdatedEach []int // updated BundleDeployments after each pass; agents report in between
	}{
		{"default: all at once", fleetv1alpha1.BundleRollout{}, nil, "", false, []int{4}},
		{"maxUnavailable 1", fleetv1alpha1.BundleRollout{MaxUnavailable: ptrIntStr(intstr.FromInt32(1))}, nil, "", false, []int{1, 2, 3, 4}},
		{"maxUnavailable 50%", fleetv1alpha1.BundleRollout{MaxUnavailable: ptrIntStr(intstr.FromString("50%"))}, nil, "", false, []int{2, 4}},
		{"paused", fleetv1alpha1.BundleRollout{Paused: true}, nil, "", false, []int{0, 0}},
		{"maxUnavailable 1, new version never ready: halts", fleetv1alpha1.BundleRollout{MaxUnavailable: ptrIntStr(intstr.FromInt32(1))},
			func(bd *fleetv1alpha1.BundleDeployment, first string) bool { return bd.Spec.DeploymentID != first }, "", false, []int{1, 1, 1}},
		{"maxUnavailable 2, one cluster never ready: updated first, counted", fleetv1alpha1.BundleRollout{MaxUnavailable: ptrIntStr(intstr.FromInt32(2))},
			func(bd *fleetv1alpha1.BundleDeployment, _ string) bool {
				return bd.Labels[fleetv1alpha1.ClusterLabel] == "c3"
			}, "", false, []int{2, 3, 4, 4}},
		{"maxUnavailable 1, a disconnected cluster never applied: not counted, held", fleetv1alpha1.BundleRollout{MaxUnavailable: ptrIntStr(intstr.FromInt32(1))},
			nil, "c3", false, []int{1, 2, 3, 3}},
		{"maxUnavailable 1, a disconnected cluster reported ready before: held, does not halt", fleetv1alpha1.BundleRollout{MaxUnavailable: ptrIntStr(intstr.FromInt32(1))},
			nil, "c0", true, []int{1, 2, 3, 3}},
		{"default: a disconnected cluster is updated with the others", fleetv1alpha1.BundleRollout{}, nil, "c3", false, []int{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			objs := []client.Object{}
			for i := range 4 {
				c := cluster(fmt.Sprintf("c%d", i), map[string]string{"all": "yes"})
				if c.Name == tc.disconnected {
					c.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonAgentDisconnected}}
				}
				objs = append(objs, c)
			}
			b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "app", UID: "bundle-uid"},
				Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"all": "yes"}}}},
					Resources: rawCM(t, "v1")}}
			c := fake.NewClientBuilder().WithScheme(server.Scheme()).WithObjects(append(objs, b)...).
				WithStatusSubresource(&fleetv1alpha1.Bundle{}, &fleetv1alpha1.BundleDeployment{}).
				WithIndex(&fleetv1alpha1.BundleDeployment{}, bundleIndex, func(o client.Object) []string { return []string{bundleKey(o)} }).Build()
			r := &Reconciler{Client: c, Workers: 4}
			first := ""
			pass := func() {
				t.Helper()
				if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
					t.Fatal(err)
				}
				if first == "" {
					first = currentID(t, ctx, c, b)
				}
				agentsReport(t, ctx, c, func(bd *fleetv1alpha1.BundleDeployment) bool {
					return bd.Labels[fleetv1alpha1.ClusterLabel] == tc.disconnected && (!tc.readyBefore || bd.Spec.DeploymentID != first)
				}, func(bd *fleetv1alpha1.BundleDeployment) bool {
					return tc.notReady != nil && tc.notReady(bd, first)
				})
			}
			pass()
			if n := countAt(t, ctx, c, first); n != 4 {
				t.Fatalf("%d/4 BundleDeployments created", n)
			}
			// A new version, with the rollout options.
			if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				t.Fatal(err)
			}
			b.Spec.Resources, b.Spec.Rollout = rawCM(t, "v2"), tc.rollout
			if err := c.Update(ctx, b); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.wantUpdatedEach {
				pass()
				if got := 4 - countAt(t, ctx, c, first); got != want {
					t.Fatalf("pass %d: %d BundleDeployments updated, want %d", i, got, want)
				}
			}
		})
	}
}

func ptrIntStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func rawCM(t *testing.T, v string) []runtime.RawExtension {
	t.Helper()
	return []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"v":"` + v + `"}}`)}}
}

// agentsReport marks every BundleDeployment applied, and ready unless notReady says otherwise,
// as agents would; silent ones (disconnected agents) are left as they are.
func agentsReport(t *testing.T, ctx context.Context, c client.Client, silent, notReady func(*fleetv1alpha1.BundleDeployment) bool) {
	t.Helper()
	var list fleetv1alpha1.BundleDeploymentList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		bd := &list.Items[i]
		if silent(bd) {
			continue
		}
		bd.Status.AppliedDeploymentID, bd.Status.Ready, bd.Status.NonModified = bd.Spec.DeploymentID, !notReady(bd), true
		if err := c.Status().Update(ctx, bd); err != nil {
			t.Fatal(err)
		}
	}
}

func currentID(t *testing.T, ctx context.Context, c client.Client, b *fleetv1alpha1.Bundle) string {
	t.Helper()
	got := &fleetv1alpha1.Bundle{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	return got.Status.DeploymentID
}

func countAt(t *testing.T, ctx context.Context, c client.Client, id string) int {
	t.Helper()
	var list fleetv1alpha1.BundleDeploymentList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, bd := range list.Items {
		if bd.Spec.DeploymentID == id {
			n++
		}
	}
	return n
}

// TestSummary: the Bundle summary (readable by anyone who can read Bundles) never shows a
// Secret's values, even from an agent that reported them, and a BundleDeployment waiting for
// its cluster to serve a kind is pending, not failed.
func TestSummary(t *testing.T) {
	const id = "s-1:x"
	bd := func(cluster string, st fleetv1alpha1.BundleDeploymentStatus) *fleetv1alpha1.BundleDeployment {
		return &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{fleetv1alpha1.ClusterLabel: cluster}},
			Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: id}, Status: st}
	}
	s := summarize([]*fleetv1alpha1.BundleDeployment{
		bd("a", fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: id, Ready: true, Resources: []fleetv1alpha1.ResourceState{
			{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "creds", State: "Modified", Message: `data.password: want "czNjcmV0", have "bGVha2Vk"; data.user`},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm", State: "Modified", Message: `data.color: want "blue", have "red"`},
		}}),
		bd("b", fleetv1alpha1.BundleDeploymentStatus{Conditions: []metav1.Condition{{Type: fleetv1alpha1.ConditionApplied, Status: metav1.ConditionFalse,
			Reason: fleetv1alpha1.ReasonUnknownKind, Message: "Waiting for the cluster to serve Widget.example.com/v1; retrying"}}}),
	}, func(*fleetv1alpha1.BundleDeployment) string { return id }, 2)
	if s.Modified != 1 || s.Pending != 1 || s.ErrApplied != 0 || len(s.NonReadyClusters) != 2 {
		t.Fatalf("summary %+v", s)
	}
	if got, want := s.NonReadyClusters[0].Message, `Secret ns/creds Modified: data.password; data.user; ConfigMap ns/cm Modified: data.color: want "blue", have "red"`; got != want {
		t.Errorf("modified message\n got %s\nwant %s", got, want)
	}
	if got := s.NonReadyClusters[1]; got.State != "Pending" || !strings.Contains(got.Message, "Widget.example.com/v1") {
		t.Errorf("unknown kind: %+v", got)
	}
}

// TestTargetCustomizations: clusters matching different target customizations get their own
// content (stored once per distinct content, listed in status.contents) and deployment IDs;
// the first matching customization wins; a cluster matching none gets the Bundle's own; and
// changing one customization rewrites only its clusters' BundleDeployments.
func TestTargetCustomizations(t *testing.T) {
	ctx := t.Context()
	sel := func(env string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}
	}
	objs := []client.Object{
		cluster("dev1", map[string]string{"env": "dev", "all": "yes"}),
		cluster("prod1", map[string]string{"env": "prod", "all": "yes"}),
		cluster("prod2", map[string]string{"env": "prod", "all": "yes"}),
		cluster("other", map[string]string{"all": "yes"}),
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "app", UID: "bundle-uid"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"all": "yes"}}}},
			Resources: rawCM(t, "default"), DefaultNamespace: "apps",
			TargetCustomizations: []fleetv1alpha1.BundleTargetCustomization{
				{Name: "prod2-only", ClusterName: "prod2", DefaultNamespace: "special"},
				{Name: "prod", ClusterSelector: sel("prod"), Resources: rawCM(t, "prod")},
				{Name: "prod-again", ClusterSelector: sel("prod"), Resources: rawCM(t, "never")},
				{Name: "dev", ClusterSelector: sel("dev"), Resources: rawCM(t, "dev"), DefaultNamespace: "dev-ns"},
			}}}
	c := fake.NewClientBuilder().WithScheme(server.Scheme()).WithObjects(append(objs, b)...).
		WithStatusSubresource(&fleetv1alpha1.Bundle{}, &fleetv1alpha1.BundleDeployment{}).
		WithIndex(&fleetv1alpha1.BundleDeployment{}, bundleIndex, func(o client.Object) []string { return []string{bundleKey(o)} }).Build()
	r := &Reconciler{Client: c, Workers: 4}
	reconcileOnce := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
			t.Fatal(err)
		}
	}
	deployments := func() map[string]fleetv1alpha1.BundleDeployment {
		t.Helper()
		var list fleetv1alpha1.BundleDeploymentList
		if err := c.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]fleetv1alpha1.BundleDeployment{}
		for _, bd := range list.Items {
			out[bd.Labels[fleetv1alpha1.ClusterLabel]] = bd
		}
		return out
	}
	contentOf := func(bd fleetv1alpha1.BundleDeployment) string {
		t.Helper()
		bc := &fleetv1alpha1.BundleContent{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ws", Name: bd.Spec.Content.Name}, bc); err != nil {
			t.Fatal(err)
		}
		return string(bc.Manifests[0].Raw)
	}
	reconcileOnce()
	bds := deployments()
	for _, tc := range []struct {
		cluster, customization, data, namespace string
	}{
		{"other", "", "default", "apps"},
		{"dev1", "dev", "dev", "dev-ns"},
		{"prod1", "prod", "prod", "apps"},             // the first matching customization, not prod-again
		{"prod2", "prod2-only", "default", "special"}, // matched first by name: only the namespace changes
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			bd := bds[tc.cluster]
			if got := bd.Labels[CustomizationLabel]; got != tc.customization {
				t.Errorf("customization label %q, want %q", got, tc.customization)
			}
			if got := contentOf(bd); !strings.Contains(got, `"v":"`+tc.data+`"`) {
				t.Errorf("content %s, want data %s", got, tc.data)
			}
			if bd.Spec.Options.DefaultNamespace != tc.namespace {
				t.Errorf("defaultNamespace %q, want %q", bd.Spec.Options.DefaultNamespace, tc.namespace)
			}
		})
	}
	ids := map[string]bool{}
	for _, bd := range bds {
		ids[bd.Spec.DeploymentID] = true
	}
	if len(ids) != 4 {
		t.Errorf("%d distinct deployment IDs for 4 different versions", len(ids))
	}
	got := &fleetv1alpha1.Bundle{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	// Four versions in use (default, prod2-only, prod, dev), each stored once, in its own
	// content slot, and kept by status.contents.
	var contents fleetv1alpha1.BundleContentList
	if err := c.List(ctx, &contents); err != nil {
		t.Fatal(err)
	}
	if len(contents.Items) != 4 || len(got.Status.Contents) != 4 {
		t.Errorf("%d BundleContents, status.contents %v; want 4", len(contents.Items), got.Status.Contents)
	}
	if n := len(got.Status.Customizations); n != 3 { // prod-again is used by no cluster
		t.Errorf("status.customizations %+v", got.Status.Customizations)
	}
	for name, bd := range bds {
		if want := WantedDeploymentID(got, &bd); bd.Spec.DeploymentID != want {
			t.Errorf("%s: WantedDeploymentID %s, BundleDeployment has %s", name, want, bd.Spec.DeploymentID)
		}
	}

	// The agents report every cluster ready: the Bundle is ready (each against its own ID).
	agentsReport(t, ctx, c, func(*fleetv1alpha1.BundleDeployment) bool { return false }, func(*fleetv1alpha1.BundleDeployment) bool { return false })
	reconcileOnce()
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	if s := got.Status.Summary; s.Ready != 4 || s.DesiredReady != 4 {
		t.Fatalf("summary %+v, want 4/4 ready", s)
	}

	// Changing the dev customization rewrites dev1's BundleDeployment only.
	before := deployments()
	got.Spec.TargetCustomizations[3].Resources = rawCM(t, "dev-2")
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	reconcileOnce()
	after := deployments()
	for name, bd := range after {
		changed := bd.ResourceVersion != before[name].ResourceVersion
		if changed != (name == "dev1") {
			t.Errorf("%s: BundleDeployment written: %v", name, changed)
		}
	}
	if got := contentOf(after["dev1"]); !strings.Contains(got, `"v":"dev-2"`) {
		t.Errorf("dev1 content %s", got)
	}
	// The old dev content is released once no BundleDeployment references it.
	if err := c.List(ctx, &contents); err != nil {
		t.Fatal(err)
	}
	if len(contents.Items) != 4 {
		t.Errorf("%d BundleContents after the change, want 4", len(contents.Items))
	}
}

// TestDeletedBundleForgotten: what the controller remembers per BundleDeployment (announced
// drift corrections, not-ready spells, pending writes) goes with a deleted Bundle's
// BundleDeployments, not only with those a live Bundle stops targeting.
func TestDeletedBundleForgotten(t *testing.T) {
	ctx := t.Context()
	objs := []client.Object{cluster("c0", map[string]string{"all": "yes"}), cluster("c1", map[string]string{"all": "yes"})}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "app", UID: "bundle-uid"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"all": "yes"}}}},
			Resources: rawCM(t, "v1")}}
	c := fake.NewClientBuilder().WithScheme(server.Scheme()).WithObjects(append(objs, b)...).
		WithStatusSubresource(&fleetv1alpha1.Bundle{}, &fleetv1alpha1.BundleDeployment{}).
		WithIndex(&fleetv1alpha1.BundleDeployment{}, bundleIndex, func(o client.Object) []string { return []string{bundleKey(o)} }).Build()
	r := &Reconciler{Client: c, Workers: 2}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var bds fleetv1alpha1.BundleDeploymentList
	if err := c.List(ctx, &bds); err != nil || len(bds.Items) != 2 {
		t.Fatalf("%d BundleDeployments (%v), want 2", len(bds.Items), err)
	}
	for _, bd := range bds.Items {
		r.corrections.Store(bd.UID, time.Now())
		r.notReady.Store(bd.UID, time.Now())
		r.pending.wrote(bd.UID, "1")
	}
	if err := c.Get(ctx, req.NamespacedName, b); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, bd := range bds.Items {
		_, corr := r.corrections.Load(bd.UID)
		_, nr := r.notReady.Load(bd.UID)
		_, pend := r.pending.m.Load(bd.UID)
		if corr || nr || pend {
			t.Errorf("BundleDeployment %s/%s of the deleted Bundle still remembered: correction %v, not-ready %v, pending %v", bd.Namespace, bd.Name, corr, nr, pend)
		}
	}
}
