package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestTwoBundlesOneObject: a Bundle deploying an object another Bundle already deploys to the
// same cluster is refused for that object, naming the other Bundle (its other objects are
// applied); the object keeps the first Bundle's version. Deleting the second Bundle then leaves
// the object alone; deleting the first prunes it, and the second takes it over on its next try.
func TestTwoBundlesOneObject(t *testing.T) {
	ctx := t.Context()
	unique := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	shared, onlyB := unique+"-shared", unique+"-b"
	mk := func(name string, objs ...runtime.Object) *fleetv1alpha1.Bundle {
		t.Helper()
		b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
			Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, objs...), Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
		if err := mgmt.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	value := func(name string) string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cm); err != nil {
			if isNotFound(err) {
				return ""
			}
			t.Fatal(err)
		}
		return cm.Data["from"]
	}

	a := mk(unique+"-a", configMap("default", shared, map[string]string{"from": "a"}))
	waitBundle(t, a, 60*time.Second, bundleReadyOn1)
	b := mk(unique+"-b", configMap("default", shared, map[string]string{"from": "b"}), configMap("default", onlyB, map[string]string{"from": "b"}))
	waitBundleDeployment(t, plainName, b.Name, 60*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "already deployed by Bundle "+a.Name) {
			return fmt.Errorf("Applied condition %+v, want the shared object refused naming Bundle %s", c, a.Name)
		}
		return nil
	})
	if got := value(shared); got != "a" {
		t.Errorf("shared object from %q, want Bundle a's version", got)
	}
	if got := value(onlyB); got != "b" {
		t.Errorf("b's own object: %q, want applied", got)
	}

	// Deleting b prunes its own object, not the one a deploys.
	if err := mgmt.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if _, err := bundleDeployment(t, plainName, b.Name); !isNotFound(err) {
			return fmt.Errorf("b's BundleDeployment still there: %w", err)
		}
		if value(onlyB) != "" {
			return fmt.Errorf("b's own object not pruned yet")
		}
		return nil
	})
	if got := value(shared); got != "a" {
		t.Fatalf("after deleting Bundle b the shared object is %q, want still Bundle a's", got)
	}

	// With a gone, a new Bundle may take the object.
	c := mk(unique+"-c", configMap("default", shared, map[string]string{"from": "c"}))
	if err := mgmt.Client.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, func() error {
		if got := value(shared); got != "c" {
			return fmt.Errorf("shared object from %q, want Bundle c's once a is gone", got)
		}
		return nil
	})
	if err := mgmt.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultNamespaceCreated: a Bundle whose defaultNamespace does not exist on the cluster gets
// it created (as Fleet does) and its objects placed there; deleting the Bundle prunes the objects
// and leaves the namespace, which others may use.
func TestDefaultNamespaceCreated(t *testing.T) {
	ctx := t.Context()
	ns := "created-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "default-namespace"},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("", "settings", map[string]string{"k": "v"})), DefaultNamespace: ns,
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, b, 60*time.Second, bundleReadyOn1)
	if !present(t, ns, "settings")[plainName] {
		t.Fatalf("ConfigMap not in the created namespace %s", ns)
	}
	if err := mgmt.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if present(t, ns, "settings")[plainName] {
			return fmt.Errorf("ConfigMap not pruned yet")
		}
		return nil
	})
	if err := plain.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
		t.Errorf("namespace %s after the Bundle's deletion: %v, want kept", ns, err)
	}
}

// TestGitRepoLabelOnBundleDeployments: a GitRepo's BundleDeployments carry its name label, on
// creation and on update, so they can be selected across cluster namespaces as Fleet users do
// (kubectl get bd -A -l fleet.drover.io/gitrepo-name=NAME).
func TestGitRepoLabelOnBundleDeployments(t *testing.T) {
	name := unique("from-repo")
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name, Labels: map[string]string{fleetv1alpha1.GitRepoNameLabel: "apps"}},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("default", name, map[string]string{"k": "v1"})),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	createBundle(t, b)
	labelled := func(want string) func(*fleetv1alpha1.BundleDeployment) error {
		return func(bd *fleetv1alpha1.BundleDeployment) error {
			if got := bd.Labels[fleetv1alpha1.GitRepoNameLabel]; got != want {
				return fmt.Errorf("label %s=%q, want %q", fleetv1alpha1.GitRepoNameLabel, got, want)
			}
			return nil
		}
	}
	waitBundleDeployment(t, plainName, name, 30*time.Second, labelled("apps"))
	patchBundle(t, b, func(b *fleetv1alpha1.Bundle) {
		b.Labels[fleetv1alpha1.GitRepoNameLabel] = "renamed"
		b.Spec.Resources = raw(t, configMap("default", name, map[string]string{"k": "v2"}))
	})
	waitBundleDeployment(t, plainName, name, 30*time.Second, labelled("renamed"))
}

// TestPendingSaysWhy: a cluster that has its BundleDeployment but whose agent says nothing (it
// never checked in here) is shown pending with its Cluster's reason, not a bare "Pending".
func TestPendingSaysWhy(t *testing.T) {
	ctx := t.Context()
	ghost := unique("ghost")
	c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: ghost}}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), c) })
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: unique("to-ghost")},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("default", "ghost", map[string]string{"k": "v"})),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: ghost}}}}
	createBundle(t, b)
	waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
		s := got.Status.Summary
		if s.Pending != 1 || len(s.NonReadyClusters) != 1 || !strings.Contains(s.NonReadyClusters[0].Message, "Cluster not ready ("+fleetv1alpha1.ReasonWaitCheckIn+")") {
			return fmt.Errorf("summary %+v, want the cluster pending with its reason", s)
		}
		return nil
	})
}

// TestMissingNamespaceSaysWhatToDo: a resource in a namespace the cluster lacks (and the Bundle
// neither carries nor names as its defaultNamespace) fails with what to do about it.
func TestMissingNamespaceSaysWhatToDo(t *testing.T) {
	ns := unique("nowhere")
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: unique("no-ns")},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap(ns, "settings", map[string]string{"k": "v"})),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	createBundle(t, b)
	waitBundleDeployment(t, plainName, b.Name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
		if c == nil || c.Reason != fleetv1alpha1.ReasonApplyFailed || !strings.Contains(c.Message, `add a Namespace "`+ns+`" to the Bundle`) ||
			!strings.Contains(c.Message, "--default-namespace "+ns) {
			return fmt.Errorf("Applied %+v, want the missing namespace and what to do", c)
		}
		return nil
	})
}
