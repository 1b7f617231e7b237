package crds_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/test/envtest"
)

// cluster is a real kube-apiserver without drover's CRDs; the tests apply them.
var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if cluster, err = envtest.Start("crds", envtest.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	return m.Run()
}

const (
	gitRepos = "gitrepos.fleet.drover.io"
	// newField is in the embedded GitRepo CRD (added recently); futureField stands for a field
	// a newer drover adds.
	newField    = "forceSyncGeneration"
	futureField = "futureField"
)

// embeddedGitRepos returns a copy of the GitRepo CRD this binary embeds.
func embeddedGitRepos(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	all, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if crd.Name == gitRepos {
			return crd
		}
	}
	t.Fatalf("no embedded CRD %s", gitRepos)
	return nil
}

func specProps(crd *apiextensionsv1.CustomResourceDefinition) map[string]apiextensionsv1.JSONSchemaProps {
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
}

// applyAsDrover server-side applies crd as drover does (field manager drover, forced), stamped
// with stamp ("": no stamp, as a drover before stamps applied it), and waits until it is served.
func applyAsDrover(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, stamp string) {
	t.Helper()
	ctx := context.Background()
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	delete(crd.Annotations, crds.VersionAnnotation)
	if stamp != "" {
		crd.Annotations[crds.VersionAnnotation] = stamp
	}
	crd.ManagedFields, crd.ResourceVersion = nil, ""
	if err := cluster.Client.Patch(ctx, crd, client.Apply, client.FieldOwner("drover"), client.ForceOwnership); err != nil { //nolint:staticcheck // as Install does
		t.Fatalf("apply %s: %v", crd.Name, err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("%s not established", crd.Name)
	})
}

// running makes the binary report v as its version for the test.
func running(t *testing.T, v string) {
	old := version.Version
	version.Version = v
	t.Cleanup(func() { version.Version = old })
}

// TestInstallDowngradeGuard: Install upgrades the cluster's GitRepo CRD when it was applied by
// an older drover (or one before the stamp), and leaves it when a newer drover applied it,
// when it has a field this binary lacks (unless an older release applied it), or when this is
// a development build and a release applied it.
func TestInstallDowngradeGuard(t *testing.T) {
	for _, tc := range []struct {
		name, stamp, running string
		// schema of the cluster's CRD: "future" (embedded plus futureField), "older"
		// (embedded without forceSyncGeneration) or "same".
		schema string
		kept   bool
	}{
		{name: "newer release with an extra field is kept", stamp: "v1.3.0", running: "v1.2.0", schema: "future", kept: true},
		{name: "newer release with the same schema is kept", stamp: "v1.3.0", running: "v1.2.1", schema: "same", kept: true},
		{name: "newer release by git describe is kept", stamp: "v1.3.0-2-gabcdef0", running: "v1.2.0-9-g1234567-dirty", schema: "future", kept: true},
		{name: "older release is upgraded", stamp: "v1.1.0", running: "v1.2.0", schema: "older", kept: false},
		{name: "older release is upgraded even with a field since dropped", stamp: "v1.1.0", running: "v1.2.0", schema: "future", kept: false},
		{name: "unstamped is upgraded", stamp: "", running: "v1.2.0", schema: "older", kept: false},
		{name: "unstamped with a field this build lacks is kept", stamp: "", running: "v1.2.0", schema: "future", kept: true},
		{name: "later build of the same release with an extra field is kept", stamp: "v1.2.0-4-gabcdef0", running: "v1.2.0", schema: "future", kept: true},
		{name: "same release is re-applied", stamp: "v1.2.0", running: "v1.2.0-4-gabcdef0", schema: "older", kept: false},
		{name: "development build leaves a release's CRD", stamp: "v1.1.0", running: version.Dev, schema: "older", kept: true},
		{name: "development build upgrades an unstamped CRD", stamp: "", running: "v0.0.0-dev-abc1234", schema: "older", kept: false},
		{name: "development build upgrades a development build's CRD", stamp: "v0.0.0-dev-abc1234", running: version.Dev, schema: "older", kept: false},
		{name: "development build keeps a development build's extra field", stamp: "v0.0.0-dev-abc1234", running: version.Dev, schema: "future", kept: true},
		{name: "release upgrades a development build's CRD", stamp: "v0.0.0-dev-abc1234", running: "v1.2.0", schema: "older", kept: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			in := embeddedGitRepos(t)
			switch tc.schema {
			case "future":
				specProps(in)[futureField] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
			case "older":
				delete(specProps(in), newField)
			}
			applyAsDrover(t, in, tc.stamp)
			running(t, tc.running)

			if err := crds.Install(ctx, cluster.Client); err != nil {
				t.Fatal(err)
			}

			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := cluster.Client.Get(ctx, client.ObjectKey{Name: gitRepos}, got); err != nil {
				t.Fatal(err)
			}
			stamp, stamped := got.Annotations[crds.VersionAnnotation]
			_, hasFuture := specProps(got)[futureField]
			_, hasNew := specProps(got)[newField]
			if tc.kept {
				if stamp != tc.stamp || stamped != (tc.stamp != "") {
					t.Errorf("stamp %q (set: %v), want the cluster's %q kept", stamp, stamped, tc.stamp)
				}
				if hasFuture != (tc.schema == "future") || hasNew != (tc.schema != "older") {
					t.Errorf("schema changed: %s %v, %s %v; want the cluster's (%s) kept", futureField, hasFuture, newField, hasNew, tc.schema)
				}
				return
			}
			if stamp != tc.running {
				t.Errorf("stamp %q, want %q", stamp, tc.running)
			}
			if hasFuture || !hasNew {
				t.Errorf("schema not the embedded one: %s %v, %s %v", futureField, hasFuture, newField, hasNew)
			}
		})
	}
}

// TestInstallOlderKeepsFieldValues: the data loss the guard prevents. A newer drover's CRD has
// a field and a GitRepo sets it; an older drover starts (Install), then an unrelated write to
// the GitRepo: the value is still there.
func TestInstallOlderKeepsFieldValues(t *testing.T) {
	ctx := context.Background()
	newer := embeddedGitRepos(t)
	specProps(newer)[futureField] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	applyAsDrover(t, newer, "v1.3.0")
	ns := cluster.Namespace(t)
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleet.drover.io/v1alpha1", "kind": "GitRepo",
		"metadata": map[string]any{"namespace": ns, "name": "apps"},
		"spec":     map[string]any{"repo": "https://git.example.com/apps.git", futureField: int64(7)},
	}}
	if err := cluster.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}

	running(t, "v1.2.0")
	if err := crds.Install(ctx, cluster.Client); err != nil {
		t.Fatal(err)
	}
	repo.SetLabels(map[string]string{"team": "web"})
	if err := cluster.Client.Update(ctx, repo); err != nil {
		t.Fatal(err)
	}

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(repo.GroupVersionKind())
	if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(repo), got); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(got.Object, "spec", futureField); v != 7 {
		t.Errorf("spec.%s = %d after an older drover started and the GitRepo was written, want 7 kept", futureField, v)
	}
}
