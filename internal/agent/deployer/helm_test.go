package deployer

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/helmchart"
	"github.com/droverhq/drover/test/envtest"
)

// env is one API server standing for both the management cluster (BundleDeployments,
// BundleContents) and the agent's downstream cluster (Helm releases, records).
var env *envtest.Cluster

func TestMain(m *testing.M) {
	var err error
	if env, err = envtest.Start("deployer", envtest.Options{InstallCRDs: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// TestHelmUpgradeOncePerDeploymentID: a Reconcile that reads a stale BundleDeployment status
// (its deployment ID not recorded as applied yet, as the agent's cache may show right after the
// previous Reconcile deployed it) does not upgrade the release again: the history holds
// exactly one revision per deployment ID, each labelled with it.
func TestHelmUpgradeOncePerDeploymentID(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	chart, err := helmchart.Package(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: settings\nversion: 1.0.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  value: {{ .Values.value | quote }}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	content := func(name, value string) *fleetv1alpha1.BundleContent {
		v, _ := json.Marshal(map[string]any{"value": value})
		c := &fleetv1alpha1.BundleContent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, SHA256: name,
			Helm: &fleetv1alpha1.BundleHelm{Chart: chart, Values: &runtime.RawExtension{Raw: v}}}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1, c2 := content("s-one", "one"), content("s-two", "two")
	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "s-one:a", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: ns},
			Content: &fleetv1alpha1.ContentReference{Namespace: ns, Name: c1.Name}}}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Upstream: env.Client, ContentReader: env.Client, Downstream: env.Client, DownstreamConfig: env.Config,
		RecordNamespace: ns, DriftInterval: defaultDriftPeriod}
	key := types.NamespacedName{Namespace: ns, Name: bd.Name}
	get := func() *fleetv1alpha1.BundleDeployment {
		t.Helper()
		got := &fleetv1alpha1.BundleDeployment{}
		if err := env.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		if got := get(); got.Status.AppliedDeploymentID != got.Spec.DeploymentID {
			t.Fatalf("not applied: %+v", got.Status)
		}
	}
	// reconcileStale reconciles, then twice more as if reading the status written before.
	reconcileStale := func() {
		t.Helper()
		stale := get().Status
		reconcile()
		for range 2 {
			cur := get()
			cur.Status = stale
			if err := env.Client.Status().Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
			reconcile()
		}
	}
	wantHistory := func(ids ...string) {
		t.Helper()
		cfg, err := r.helmConfig(ns)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := action.NewHistory(cfg).Run(helmchart.ReleaseName(bd.Name))
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, h := range hist {
			a, err := release.NewAccessor(h)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d %s %s", a.Version(), a.Status(), a.Labels()[ReleaseDeploymentLabel]))
		}
		for i, id := range ids {
			status := "superseded"
			if i == len(ids)-1 {
				status = "deployed"
			}
			want = append(want, fmt.Sprintf("%d %s %s", i+1, status, deploymentLabel(id)))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("release history %q, want %q (one revision per deployment ID)", got, want)
		}
	}

	t.Run("install", func(t *testing.T) {
		reconcileStale()
		wantHistory("s-one:a")
	})
	t.Run("upgrade", func(t *testing.T) {
		cur := get()
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.DeploymentID, cur.Spec.Content.Name = "s-two:a", c2.Name
		if err := env.Client.Patch(ctx, cur, patch); err != nil {
			t.Fatal(err)
		}
		reconcileStale()
		wantHistory("s-one:a", "s-two:a")
	})
}
