package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/deployer"
	"github.com/droverhq/drover/internal/bundle/content"
	clusterctrl "github.com/droverhq/drover/internal/registration/cluster"
	"github.com/droverhq/drover/internal/registration/names"
)

// unique returns prefix with a random suffix: names of these tests do not collide with an
// earlier run's leftovers (-count > 1) or with each other.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%05x", prefix, rand.Uint32()&0xfffff)
}

func createBundle(t *testing.T, b *fleetv1alpha1.Bundle) {
	t.Helper()
	if err := mgmt.Client.Create(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	// t.Context() is cancelled before cleanups run.
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })
}

// TestSecretDriftIsRedacted: a drifted downstream Secret is reported by field path, and its
// values (old or new, plain or base64) appear neither in the BundleDeployment's status nor in
// the Bundle's.
func TestSecretDriftIsRedacted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := unique("creds")
	const oldValue, newValue = "initial-s3cret-value", "hand-edited-s3cret-value"
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: name},
		Data: map[string][]byte{"password": []byte(oldValue), "user": []byte("admin")}}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default", Resources: raw(t, secret),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	createBundle(t, b)
	waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if !bd.Status.Ready || !bd.Status.NonModified || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
			return fmt.Errorf("not applied: %+v", bd.Status)
		}
		return nil
	})
	live := &corev1.Secret{}
	if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, live); err != nil {
		t.Fatal(err)
	}
	live.Data["password"] = []byte(newValue)
	if err := plain.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	leaks := func(v any) error {
		j, err := json.Marshal(v)
		if err != nil {
			return err
		}
		for _, s := range []string{oldValue, newValue} {
			for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
				if strings.Contains(string(j), form) {
					return fmt.Errorf("status shows a Secret value (%q): %s", form, j)
				}
			}
		}
		return nil
	}
	waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if err := leaks(bd.Status); err != nil {
			t.Fatal(err)
		}
		if bd.Status.NonModified || len(bd.Status.Resources) != 1 {
			return fmt.Errorf("drift not reported: %+v", bd.Status)
		}
		if r := bd.Status.Resources[0]; r.State != deployer.StateModified || r.Message != "data.password" {
			return fmt.Errorf("resource state %s %q, want %s %q", r.State, r.Message, deployer.StateModified, "data.password")
		}
		return nil
	})
	waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
		if err := leaks(got.Status); err != nil {
			t.Fatal(err)
		}
		if s := got.Status.Summary; s.Modified != 1 || len(s.NonReadyClusters) != 1 || !strings.Contains(s.NonReadyClusters[0].Message, "Secret default/"+name+" Modified: data.password") {
			return fmt.Errorf("bundle summary %+v", s)
		}
		return nil
	})
}

// TestCRDAndCustomResource: a Bundle holding a custom resource, its CRD and its Namespace (in
// that order) becomes ready: the agent applies the CRD and the Namespace first, waits for the
// CRD, then applies the custom resource.
func TestCRDAndCustomResource(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := unique("crd")
	group := name + ".test.drover.io"
	crd := testCRD(group, "Widget", "Namespaced", false)
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3)},
	}}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: name, Resources: raw(t, widget, crd, ns),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	createBundle(t, b)
	waitBundleDeployment(t, plainName, name, 60*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if !bd.Status.Ready || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || len(bd.Status.Resources) != 3 {
			return fmt.Errorf("not applied: %+v", bd.Status)
		}
		return nil
	})
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(widget.GroupVersionKind())
	if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "w"}, got); err != nil {
		t.Fatalf("custom resource downstream: %v", err)
	}
	waitBundle(t, b, 30*time.Second, bundleReadyOn1)
}

// TestUnknownKindIsRetried: a custom resource whose CRD is not in the cluster leaves its
// BundleDeployment not ready with reason UnknownKind (pending in the Bundle, not an error);
// once the CRD appears, the agent applies it without any change to the Bundle.
func TestUnknownKindIsRetried(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	name := unique("late-crd")
	group := name + ".test.drover.io"
	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"},
	}}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default", Resources: raw(t, gadget),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	createBundle(t, b)
	waitBundleDeployment(t, plainName, name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionReady)
		if bd.Status.Ready || c == nil || c.Reason != fleetv1alpha1.ReasonUnknownKind || !strings.Contains(c.Message, "Gadget."+group+"/v1") {
			return fmt.Errorf("status %+v", bd.Status)
		}
		return nil
	})
	waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
		if s := got.Status.Summary; s.Pending != 1 || s.ErrApplied != 0 || len(s.NonReadyClusters) != 1 || !strings.Contains(s.NonReadyClusters[0].Message, "Gadget") {
			return fmt.Errorf("bundle summary %+v", s)
		}
		return nil
	})
	// Past the grace (3 s in this suite, 2 min by default) it is no longer a rollout on its way:
	// the Bundle says so (drover check lists it), and a Warning Event names the cluster.
	waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
		if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Reason != fleetv1alpha1.ReasonResourcesNotReady ||
			!strings.Contains(c.Message, "1 not ready (or waiting for a kind the cluster does not serve)") {
			return fmt.Errorf("Ready condition %+v, want %s", c, fleetv1alpha1.ReasonResourcesNotReady)
		}
		return nil
	})
	if ev := bundleEvent(t, name, fleetv1alpha1.EventResourcesNotReady); !strings.Contains(ev.Note, "Cluster "+plainName) || !strings.Contains(ev.Note, "Gadget") {
		t.Errorf("ResourcesNotReady event %q, want the cluster and the kind", ev.Note)
	}
	// The CRD arrives by other means.
	crd := testCRD(group, "Gadget", "Cluster", false)
	if err := plain.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Client.Delete(context.Background(), crd) })
	waitBundleDeployment(t, plainName, name, 60*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if !bd.Status.Ready || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
			return fmt.Errorf("not applied: %+v", bd.Status)
		}
		return nil
	})
}

// TestContentAccessRoleRepaired: a cluster's content-access Role edited by hand (here: an
// escalation to list every BundleContent) or deleted is written back.
func TestContentAccessRoleRepaired(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	key := client.ObjectKey{Namespace: ws, Name: names.ClusterAccessRole(fullName)}
	// The rules the Role must have: the status rule and get on the contents the cluster's
	// BundleDeployments reference now.
	expected := func() ([]rbacv1.PolicyRule, error) {
		c := getCluster(t, fullName)
		var bds fleetv1alpha1.BundleDeploymentList
		if err := mgmt.Client.List(ctx, &bds, client.InNamespace(c.Status.Namespace)); err != nil {
			return nil, err
		}
		var contents []string
		for _, bd := range bds.Items {
			if ref := bd.Spec.Content; ref != nil {
				for _, n := range content.Grants(*ref) {
					if !slices.Contains(contents, n) {
						contents = append(contents, n)
					}
				}
			}
		}
		slices.Sort(contents)
		return clusterctrl.AccessRules(c, contents...), nil
	}
	repaired := func() error {
		role := &rbacv1.Role{}
		if err := mgmt.Client.Get(ctx, key, role); err != nil {
			return err
		}
		want, err := expected()
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(role.Rules, want) {
			return fmt.Errorf("role rules %+v, want %+v", role.Rules, want)
		}
		return nil
	}
	eventually(t, 30*time.Second, repaired)

	t.Run("edited", func(t *testing.T) {
		eventually(t, 10*time.Second, func() error {
			role := &rbacv1.Role{}
			if err := mgmt.Client.Get(ctx, key, role); err != nil {
				return err
			}
			role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"bundlecontents"}, Verbs: []string{"get", "list", "watch"}}}
			return mgmt.Client.Update(ctx, role)
		})
		eventually(t, 30*time.Second, repaired)
	})
	t.Run("deleted", func(t *testing.T) {
		if err := mgmt.Client.Delete(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, repaired)
	})
}
