package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/deployer"
)

// TestDiffIgnore: with spec.diff.ignore naming a Deployment's /spec/replicas, replicas changed
// downstream by another field manager (an HPA) are not drift and stay, even with correctDrift
// and across a new deployment ID, while a change of another field of the same Deployment is
// still reported Modified and corrected.
func TestDiffIgnore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := unique("hpa")
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"team": "shop"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}}}}}}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: name, Resources: raw(t, ns, d),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}},
			Diff: &fleetv1alpha1.BundleDiff{Ignore: []fleetv1alpha1.BundleDiffIgnore{
				{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", JSONPointers: []string{"/spec/replicas"}}}}}}
	createBundle(t, b)
	applied := func() *fleetv1alpha1.BundleDeployment {
		t.Helper()
		var out *fleetv1alpha1.BundleDeployment
		waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
			if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
				return fmt.Errorf("not applied: %+v", bd.Status)
			}
			out = bd
			return nil
		})
		return out
	}
	first := applied()
	if first.Spec.Options.Diff == nil || len(first.Spec.Options.Diff.Ignore) != 1 {
		t.Fatalf("BundleDeployment options %+v do not carry spec.diff", first.Spec.Options)
	}
	key := client.ObjectKey{Namespace: name, Name: "web"}
	live := func(t *testing.T) *appsv1.Deployment {
		t.Helper()
		got := &appsv1.Deployment{}
		if err := plain.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if r := live(t).Spec.Replicas; r == nil || *r != 2 {
		t.Fatalf("created with replicas %v, want the manifest's 2", r)
	}
	// scale sets replicas as an HPA does (an update by its own field manager), and annotate
	// edits another field by hand.
	scale := func(t *testing.T, n int32) {
		t.Helper()
		eventually(t, 10*time.Second, func() error {
			got := live(t)
			patch := client.MergeFrom(got.DeepCopy())
			got.Spec.Replicas = ptr.To(n)
			return plain.Client.Patch(ctx, got, patch, client.FieldOwner("horizontal-pod-autoscaler"))
		})
	}
	annotate := func(t *testing.T, v string) {
		t.Helper()
		eventually(t, 10*time.Second, func() error {
			got := live(t)
			patch := client.MergeFrom(got.DeepCopy())
			got.Annotations["team"] = v
			return plain.Client.Patch(ctx, got, patch, client.FieldOwner("kubectl-edit"))
		})
	}
	wantReplicas := func(t *testing.T, n int32) {
		t.Helper()
		if r := live(t).Spec.Replicas; r == nil || *r != n {
			t.Fatalf("replicas %v downstream, want %d (the HPA's)", ptr.Deref(r, -1), n)
		}
	}

	t.Run("ignored field is not drift, another field is", func(t *testing.T) {
		scale(t, 5)
		annotate(t, "hacked")
		waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
			if bd.Status.NonModified || len(bd.Status.Resources) != 2 {
				return fmt.Errorf("drift not reported: %+v", bd.Status)
			}
			r := bd.Status.Resources[1]
			if r.State != deployer.StateModified || !strings.Contains(r.Message, `metadata.annotations.team: want "shop", have "hacked"`) {
				return fmt.Errorf("resource %s %q", r.State, r.Message)
			}
			if strings.Contains(r.Message, "replicas") {
				t.Fatalf("ignored field reported as drift: %q", r.Message)
			}
			return nil
		})
		wantReplicas(t, 5)
	})
	t.Run("correctDrift (new deployment ID) keeps the ignored field", func(t *testing.T) {
		patchBundle(t, b, func(b *fleetv1alpha1.Bundle) { b.Spec.CorrectDrift = true })
		// The new deployment ID is applied with force: the annotation comes back, the replicas
		// the HPA set stay.
		waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
			if bd.Spec.DeploymentID == first.Spec.DeploymentID || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || !bd.Status.NonModified {
				return fmt.Errorf("not applied and unmodified: %+v", bd.Status)
			}
			return nil
		})
		if got := live(t); got.Annotations["team"] != "shop" {
			t.Fatalf("annotation %q, want it corrected to %q", got.Annotations["team"], "shop")
		}
		wantReplicas(t, 5)
	})
	t.Run("drift correction of another field keeps the ignored field", func(t *testing.T) {
		scale(t, 7)
		annotate(t, "hacked-again")
		// The drift check corrects the annotation with a forced apply; the replicas stay.
		eventually(t, 30*time.Second, func() error {
			if got := live(t); got.Annotations["team"] != "shop" {
				return fmt.Errorf("annotation %q not corrected yet", got.Annotations["team"])
			}
			return nil
		})
		wantReplicas(t, 7)
		waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
			if !bd.Status.NonModified {
				return fmt.Errorf("still modified: %+v", bd.Status)
			}
			return nil
		})
		wantReplicas(t, 7)
	})
}
