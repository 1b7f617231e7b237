package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle/content"
	"github.com/droverhq/drover/internal/registration/names"
)

// TestContentSlots: a Bundle's versions alternate between its two content slots, so a commit
// writes a cluster's BundleDeployment and not its access Role (which names both slots from the
// start); the agent applies each version, never an older one a reused slot held before; a
// cluster whose agent does not check slots gets each version content-addressed, under the same
// deployment ID; deleting the Bundle deletes its slots.
func TestContentSlots(t *testing.T) {
	ctx := t.Context()
	const oldName = "slots-old-agent"
	fakeAgent(t, oldName)("")
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: unique("slots")},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default",
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}, {ClusterName: oldName}}}}
	setColor := func(b *fleetv1alpha1.Bundle, color string) {
		b.Spec.Resources = raw(t, configMap("", b.Name, map[string]string{"color": color}))
	}
	setColor(b, "white")
	createBundle(t, b)
	base := content.SlotBase(b.Name, "")
	slots := []string{content.SlotName(base, 0), content.SlotName(base, 1)}
	roleKey := client.ObjectKey{Namespace: ws, Name: names.ClusterAccessRole(plainName)}

	var roleVersion, lastSlot, lastSum string
	for i, color := range []string{"white", "blue", "green", "blue", "red"} {
		if i > 0 {
			patchBundle(t, b, func(b *fleetv1alpha1.Bundle) { setColor(b, color) })
		}
		eventually(t, 60*time.Second, func() error {
			cm := &corev1.ConfigMap{}
			if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: b.Name}, cm); err != nil {
				return err
			}
			if cm.Data["color"] != color {
				return fmt.Errorf("color %q downstream, want %q", cm.Data["color"], color)
			}
			return nil
		})
		bd, err := bundleDeployment(t, plainName, b.Name)
		if err != nil {
			t.Fatal(err)
		}
		ref := bd.Spec.Content
		if ref == nil || !slices.Contains(slots, ref.Name) || ref.SHA256 == "" || ref.Name == lastSlot {
			t.Fatalf("%s: content %+v, want the other of slots %v than %q, with its sha256", color, ref, slots, lastSlot)
		}
		lastSlot, lastSum = ref.Name, ref.SHA256
		bc := &fleetv1alpha1.BundleContent{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: ref.Name}, bc); err != nil {
			t.Fatal(err)
		}
		if bc.SHA256 != ref.SHA256 {
			t.Errorf("%s: slot %s holds %s, the BundleDeployment names %s", color, ref.Name, bc.SHA256, ref.SHA256)
		}

		// The old agent's cluster: the same version, content-addressed.
		waitBundleDeployment(t, oldName, b.Name, 30*time.Second, func(old *fleetv1alpha1.BundleDeployment) error {
			if old.Spec.DeploymentID != bd.Spec.DeploymentID {
				return fmt.Errorf("deployment %s, want %s", old.Spec.DeploymentID, bd.Spec.DeploymentID)
			}
			if r := old.Spec.Content; r == nil || r.Name != "s-"+ref.SHA256 || r.SHA256 != "" {
				return fmt.Errorf("content %+v, want s-%s without a slot's sha256", r, ref.SHA256)
			}
			return nil
		})

		// The access Role names both slots once the first version is out, and no commit
		// changes it.
		role := &rbacv1.Role{}
		if i == 0 {
			eventually(t, 30*time.Second, func() error {
				if err := mgmt.Client.Get(ctx, roleKey, role); err != nil {
					return err
				}
				for _, rule := range role.Rules {
					if slices.Contains(rule.Resources, "bundlecontents") && slices.Contains(rule.ResourceNames, slots[0]) && slices.Contains(rule.ResourceNames, slots[1]) {
						return nil
					}
				}
				return fmt.Errorf("rules %+v, want both slots %v", role.Rules, slots)
			})
			roleVersion = role.ResourceVersion
			continue
		}
		if err := mgmt.Client.Get(ctx, roleKey, role); err != nil {
			t.Fatal(err)
		}
		if role.ResourceVersion != roleVersion {
			t.Errorf("%s: the access Role was written (resourceVersion %s -> %s): rules %+v", color, roleVersion, role.ResourceVersion, role.Rules)
		}
	}

	// Only the slot in use is kept; deleting the Bundle deletes it.
	inUse := func() ([]string, error) {
		var list fleetv1alpha1.BundleContentList
		if err := mgmt.Client.List(ctx, &list, client.InNamespace(ws), client.MatchingLabels{content.BundleLabel: b.Name}); err != nil {
			return nil, err
		}
		var out []string
		for _, c := range list.Items {
			out = append(out, c.Name)
		}
		return out, nil
	}
	eventually(t, 30*time.Second, func() error {
		got, err := inUse()
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{lastSlot}) {
			return fmt.Errorf("slots %v, want only %s", got, lastSlot)
		}
		return nil
	})
	if err := mgmt.Client.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got, err := inUse()
		if err != nil {
			return err
		}
		if len(got) > 0 {
			return fmt.Errorf("slots %v after the Bundle's deletion", got)
		}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "s-" + lastSum}, &fleetv1alpha1.BundleContent{}); !isNotFound(err) {
			return fmt.Errorf("the old agent's content s-%s after the Bundle's deletion: %w", lastSum, err)
		}
		return nil
	})
}

// TestBundleNameLength: a Bundle's name labels its BundleDeployments and content slots, so one
// over 63 characters is refused when it is created, naming why; one of 63 is deployed.
func TestBundleNameLength(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	long := unique("name") + "-" + strings.Repeat("x", 63)
	spec := fleetv1alpha1.BundleSpec{DefaultNamespace: "default", Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}
	tooLong := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: long[:64]}, Spec: spec}
	tooLong.Spec.Resources = raw(t, configMap("", "too-long", nil))
	if err := mgmt.Client.Create(ctx, tooLong); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at most 63 characters") {
		t.Fatalf("a 64-character name: %v, want Invalid saying at most 63 characters", err)
	}
	ok := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: long[:63]}, Spec: spec}
	ok.Spec.Resources = raw(t, configMap("", "long-name", nil))
	createBundle(t, ok)
	waitBundleDeployment(t, plainName, ok.Name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || bd.Spec.Content == nil || bd.Spec.Content.SHA256 == "" {
			return fmt.Errorf("deployment %s applied %s, content %+v: want applied from a slot", bd.Spec.DeploymentID, bd.Status.AppliedDeploymentID, bd.Spec.Content)
		}
		return nil
	})
}
