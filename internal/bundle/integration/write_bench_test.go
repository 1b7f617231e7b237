package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/test/envtest"
)

// BenchmarkBundleDeploymentWrite measures the management API server's (and its etcd's) CPU per
// change of a BundleDeployment's spec — what a commit costs per changed Bundle and cluster — for
// each way the bundle controller could send it: an update (what it does), an update without
// managedFields, an optimistic-locked JSON merge patch and a JSON patch with a resourceVersion
// test. 2,000 BundleDeployments shaped as the controller writes them, each changed once per
// iteration, 8 writers, on an API server nothing else uses. Run with:
//
//	go test ./internal/bundle/integration -run '^$' -bench BundleDeploymentWrite -benchtime 3x
func BenchmarkBundleDeploymentWrite(b *testing.B) {
	ctx := context.Background()
	// An API server of its own: the suite's runs controllers that would delete these
	// BundleDeployments (they belong to no Bundle) and add their own work to its CPU.
	api, err := envtest.Start("write-bench", envtest.Options{InstallCRDs: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = api.Stop() }()
	c := api.Client
	const namespaces, perNamespace = 20, 100
	var bds []*fleetv1alpha1.BundleDeployment
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-write-"}}
		if err := c.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		for j := range perNamespace {
			name := fmt.Sprintf("gitrepo-app-%02d", j)
			bds = append(bds, &fleetv1alpha1.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: map[string]string{
					bundle.BundleNameLabel: name, bundle.BundleNamespaceLabel: "fleet-default",
					fleetv1alpha1.ClusterLabel: fmt.Sprintf("cluster-%04d", i), fleetv1alpha1.ClusterNamespaceLabel: "fleet-default",
					fleetv1alpha1.ClusterUIDLabel: "0b5d7c52-1111-2222-3333-444455556666", fleetv1alpha1.ManagedLabel: "true"}},
				Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "s-0:0", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: "default"},
					Content: &fleetv1alpha1.ContentReference{Namespace: "fleet-default", Name: "s-0"}},
			})
		}
	}
	each := func(f func(*fleetv1alpha1.BundleDeployment) error) {
		envtest.Parallel(len(bds), 8, func(i int) {
			if err := f(bds[i]); err != nil {
				b.Error(err)
			}
		})
	}
	each(func(bd *fleetv1alpha1.BundleDeployment) error {
		return c.Create(ctx, bd, client.FieldOwner(bundle.FieldOwner))
	})
	round := 0
	next := func(bd *fleetv1alpha1.BundleDeployment) {
		id := fmt.Sprintf("s-%064x", round)
		bd.Spec.DeploymentID, bd.Spec.Content.Name = id+":1", id
	}
	shapes := []struct {
		name  string
		write func(*fleetv1alpha1.BundleDeployment) error
	}{
		{"update", func(bd *fleetv1alpha1.BundleDeployment) error {
			next(bd)
			return c.Update(ctx, bd, client.FieldOwner(bundle.FieldOwner))
		}},
		{"update-without-managedFields", func(bd *fleetv1alpha1.BundleDeployment) error {
			next(bd)
			bd.ManagedFields = nil
			return c.Update(ctx, bd, client.FieldOwner(bundle.FieldOwner))
		}},
		{"merge-patch", func(bd *fleetv1alpha1.BundleDeployment) error {
			before := bd.DeepCopy()
			next(bd)
			return c.Patch(ctx, bd, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(bundle.FieldOwner))
		}},
		{"json-patch", func(bd *fleetv1alpha1.BundleDeployment) error {
			next(bd)
			p := fmt.Sprintf(`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"replace","path":"/spec/deploymentID","value":%q},{"op":"replace","path":"/spec/content/name","value":%q}]`,
				bd.ResourceVersion, bd.Spec.DeploymentID, bd.Spec.Content.Name)
			return c.Patch(ctx, bd, client.RawPatch(types.JSONPatchType, []byte(p)), client.FieldOwner(bundle.FieldOwner))
		}},
	}
	cpu := func() float64 {
		m := envtest.ProcessCPU(map[string]string{"write-bench": api.Config.Host})
		return m["write-bench kube-apiserver"] + m["write-bench etcd"]
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			start, writes := cpu(), 0
			for b.Loop() {
				round++
				each(s.write)
				writes += len(bds)
			}
			b.ReportMetric((cpu()-start)*1000/float64(writes), "apiserver+etcd-cpu-ms/write")
		})
	}
}
