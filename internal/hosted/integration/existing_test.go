package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// TestExistingClusterNotTakenOver: a Cluster to create that names a cluster which already
// exists at the provider (a copied manifest with only metadata.name changed) neither changes it
// nor, when deleted, deletes it; an import's first pass adopts, never pushes; a Cluster that lost its status (a restore without status) is
// refused the same way until annotated adopt, and then takes the provider's settings, reverting
// nothing; an orphan annotation leaves the cloud cluster running when the Cluster is deleted.
func TestExistingClusterNotTakenOver(t *testing.T) {
	t.Parallel()
	forEachProvider(t, func(t *testing.T, h harness) {
		ctx := context.Background()
		e := newEnv(t, h)
		e.create(h.created("shop"))
		h.consoleTag(t, "shop", "owner", "terraform")
		e.simTime.Advance(simDelay)

		refused := func(name string) {
			t.Helper()
			for range 3 {
				if _, err := e.reconcile(name); err != nil {
					t.Fatalf("reconcile %s: %v", name, err)
				}
			}
			c := e.get(name)
			if r := cond(c, hosted.CondReady); r.Reason != v1.ReasonAlreadyExists || !strings.Contains(r.Message, hosted.AdoptAnnotation) || c.Status.Phase != "" {
				t.Fatalf("%s: phase %q, Ready %+v; want AlreadyExists naming the adopt annotation and no phase", name, c.Status.Phase, r)
			}
			if tags := h.tags(t, "shop"); tags["team"] != "platform" || tags["owner"] != "terraform" {
				t.Fatalf("the existing cluster was changed: tags %v", tags)
			}
		}

		cp := h.created("shop")
		cp.Name, cp.Namespace = "copy", e.ns
		h.setCfgTag(cp, "team", "copied")
		if err := mgmt.Client.Create(ctx, cp); err != nil {
			t.Fatal(err)
		}
		refused("copy")
		if !strings.Contains(e.events.String(), v1.ReasonAlreadyExists) {
			t.Errorf("no %s event: %s", v1.ReasonAlreadyExists, e.events)
		}
		if err := mgmt.Client.Delete(ctx, e.get("copy")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.reconcile("copy"); err != nil {
			t.Fatal(err)
		}
		if err := mgmt.Client.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "copy"}, &v1.Cluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("refused Cluster not deleted: %v", err)
		}
		h.tags(t, "shop") // still there at the provider

		// Importing it with a config that differs (a restored imported Cluster, or a manifest
		// with fields set) changes nothing at the provider: the first pass adopts.
		imp := h.created("shop")
		imp.Name, imp.Namespace = "imp", e.ns
		h.setCfgTag(imp, "team", "stale")
		switch {
		case imp.Spec.EKSConfig != nil:
			imp.Spec.EKSConfig.Imported = true
		case imp.Spec.AKSConfig != nil:
			imp.Spec.AKSConfig.Imported = true
		case imp.Spec.GKEConfig != nil:
			imp.Spec.GKEConfig.Imported = true
		}
		if err := mgmt.Client.Create(ctx, imp); err != nil {
			t.Fatal(err)
		}
		if got := e.settle("imp"); got.Status.Phase != v1.PhaseActive || h.cfgTags(got)["team"] != "platform" {
			t.Errorf("import with a differing tag: phase %q, config tags %v; want active with the provider's tags adopted", got.Status.Phase, h.cfgTags(got))
		}
		if tags := h.tags(t, "shop"); tags["team"] != "platform" || tags["owner"] != "terraform" {
			t.Fatalf("importing changed the cluster: tags %v", tags)
		}
		if err := mgmt.Client.Delete(ctx, e.get("imp")); err != nil {
			t.Fatal(err)
		}
		if c := e.settle("imp"); c != nil {
			t.Fatal("imported Cluster not forgotten")
		}

		// A restore without status.
		shop := e.get("shop")
		if err := mgmt.Client.Status().Patch(ctx, shop, client.RawPatch(types.MergePatchType, []byte(`{"status":null}`))); err != nil {
			t.Fatal(err)
		}
		refused("shop")
		e.editCluster("shop", func(c *v1.Cluster) { c.Annotations = map[string]string{hosted.AdoptAnnotation: "true"} })
		got := e.settle("shop")
		if got.Status.Phase != v1.PhaseActive {
			t.Fatalf("adopted cluster: phase %q, Ready %+v", got.Status.Phase, cond(got, hosted.CondReady))
		}
		if tags := h.tags(t, "shop"); tags["owner"] != "terraform" {
			t.Errorf("adopting reverted the console's change: provider tags %v", tags)
		}
		if tags := h.cfgTags(got); tags["owner"] != "terraform" {
			t.Errorf("adopting did not take the provider's settings: config tags %v", tags)
		}

		// Orphan: deleting leaves the cloud cluster running.
		e.editCluster("shop", func(c *v1.Cluster) { c.Annotations[hosted.OrphanAnnotation] = "true" })
		if err := mgmt.Client.Delete(ctx, e.get("shop")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.reconcile("shop"); err != nil {
			t.Fatal(err)
		}
		if err := mgmt.Client.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "shop"}, &v1.Cluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("orphaned Cluster not deleted: %v", err)
		}
		if tags := h.tags(t, "shop"); tags["owner"] != "terraform" {
			t.Errorf("orphaned cloud cluster: tags %v", tags)
		}
		if !strings.Contains(e.events.String(), "Orphaned") {
			t.Errorf("no Orphaned event: %s", e.events)
		}
	})
}
