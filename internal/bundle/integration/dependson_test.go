package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// neverReady is a Deployment that never becomes ready on the plain cluster (no controllers run
// there, so nothing ever reports it rolled out).
func neverReady(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c:1"}}}}}}
}

// wantHeld waits until Bundle name is Ready=False/DependencyNotReady with a message containing
// every part, then checks for a while that its BundleDeployment on the plain cluster stays as
// check says (held).
func wantHeld(t *testing.T, name string, check func() error, parts ...string) {
	t.Helper()
	ctx := t.Context()
	eventually(t, 30*time.Second, func() error {
		b := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: name}, b); err != nil {
			return err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonDependencyNotReady || c.ObservedGeneration != b.Generation {
			return fmt.Errorf("Ready condition %+v, want False/DependencyNotReady", c)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("Ready message %q does not name %q", c.Message, p)
			}
		}
		return nil
	})
	// Held: the dependency never becomes ready, so nothing moves.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("while its dependency is not ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDependsOn: a Bundle whose dependency is not ready on a cluster gets no BundleDeployment
// there, and its Ready condition names the dependency and the cluster; once the dependency is
// ready it is deployed. Later, with the dependency not ready again, an update of the Bundle is
// held at the version deployed. A dependency that does not exist holds it too, saying so.
func TestDependsOn(t *testing.T) {
	ctx := t.Context()
	target := []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}
	base := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "dep-base"},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, neverReady("dep-base")), Targets: target}}
	app := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "dep-app"},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("default", "dep-app", map[string]string{"v": "one"})), Targets: target,
			DependsOn: []fleetv1alpha1.BundleDependency{{Name: base.Name}}}}
	orphan := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "dep-orphan"},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("default", "dep-orphan", nil)), Targets: target,
			DependsOn: []fleetv1alpha1.BundleDependency{{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}}, {Name: "no-such-bundle"}}}}
	for _, b := range []*fleetv1alpha1.Bundle{base, app, orphan} {
		if err := mgmt.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })
	}
	noDeployment := func(name string) func() error {
		return func() error {
			if _, err := bundleDeployment(t, plainName, name); !isNotFound(err) {
				return fmt.Errorf("BundleDeployment %s exists (%w)", name, err)
			}
			if present(t, "default", name)[plainName] {
				return fmt.Errorf("ConfigMap %s deployed", name)
			}
			return nil
		}
	}

	// The dependency is applied but its Deployment never becomes ready.
	waitBundleDeployment(t, plainName, base.Name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || bd.Status.Ready {
			return fmt.Errorf("want applied and not ready: %+v", bd.Status)
		}
		return nil
	})
	wantHeld(t, app.Name, noDeployment(app.Name), "Bundle dep-base is not ready", "cluster "+plainName)
	wantHeld(t, orphan.Name, noDeployment(orphan.Name), "Bundle no-such-bundle does not exist")
	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(app), b); err != nil {
		t.Fatal(err)
	}
	if s := b.Status.Summary; s.DesiredReady != 1 || s.Pending != 1 || len(s.NonReadyClusters) != 1 || s.NonReadyClusters[0].State != "DependencyNotReady" {
		t.Errorf("summary %+v, want the cluster pending, DependencyNotReady", s)
	}

	// The dependency becomes ready: the Bundle is deployed.
	patchBundle(t, base, func(b *fleetv1alpha1.Bundle) {
		b.Spec.Resources = raw(t, configMap("default", "dep-base", map[string]string{"ready": "yes"}))
	})
	eventually(t, 30*time.Second, func() error {
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ConditionReady) {
			return fmt.Errorf("dep-app not ready: %+v", got.Status.Conditions)
		}
		if !present(t, "default", "dep-app")[plainName] {
			return fmt.Errorf("dep-app not deployed")
		}
		return nil
	})

	// Not ready again: an update of the dependent is held at the version deployed.
	patchBundle(t, base, func(b *fleetv1alpha1.Bundle) { b.Spec.Resources = raw(t, neverReady("dep-base")) })
	waitBundleDeployment(t, plainName, base.Name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || bd.Status.Ready {
			return fmt.Errorf("want applied and not ready: %+v", bd.Status)
		}
		return nil
	})
	// dep-app is at its version already: nothing is held, it stays Ready (dependsOn gates
	// deployments, not readiness).
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("dep-app, deployed and ready at its version, reported %+v once its dependency was not ready", c)
		}
		time.Sleep(200 * time.Millisecond) //nolint:forbidigo // watching that nothing changes for a while, not waiting for a change
	}
	patchBundle(t, app, func(b *fleetv1alpha1.Bundle) {
		b.Spec.Resources = raw(t, configMap("default", "dep-app", map[string]string{"v": "two"}))
	})
	wantHeld(t, app.Name, func() error {
		cm := &corev1.ConfigMap{}
		if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "dep-app"}, cm); err != nil {
			return err
		}
		if cm.Data["v"] != "one" {
			return fmt.Errorf("dep-app updated to %q while its dependency is not ready", cm.Data["v"])
		}
		return nil
	}, "Bundle dep-base is not ready", "cluster "+plainName)
}
