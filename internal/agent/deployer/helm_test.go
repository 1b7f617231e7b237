package deployer

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

// TestHelmValuesFrom: helm.valuesFrom's ConfigMap and Secret keys, read on the downstream
// cluster, are merged in order over the values (the Secret's last); a missing Secret or key is
// ApplyFailed naming it, and a Secret's values never appear in the status, whatever their key.
func TestHelmValuesFrom(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	chart, err := helmchart.Package(map[string][]byte{
		"Chart.yaml": []byte("apiVersion: v2\nname: settings\nversion: 1.0.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n" +
			"  color: {{ .Values.color | quote }}\n  size: {{ .Values.size | quote }}\n  host: {{ .Values.db.host | quote }}\n" +
			"{{- if .Values.failWith }}{{ fail (printf \"refusing %s\" .Values.failWith) }}{{ end }}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	const secretValue = "Db-Host-Only-The-Cluster-Knows"
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site"}, Data: map[string]string{"values.yaml": "color: green\nsize: large\n"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Data: map[string][]byte{"custom": []byte("db:\n  host: " + secretValue + "\nsize: small\n")}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reconciler{Upstream: env.Client, ContentReader: env.Client, Downstream: env.Client, DownstreamConfig: env.Config,
		RecordNamespace: ns, DriftInterval: defaultDriftPeriod}
	deploy := func(name string, values map[string]any, from []fleetv1alpha1.HelmValuesFrom) *fleetv1alpha1.BundleDeployment {
		t.Helper()
		v, _ := json.Marshal(values)
		c := &fleetv1alpha1.BundleContent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s-" + name}, SHA256: name,
			Helm: &fleetv1alpha1.BundleHelm{Chart: chart, Values: &runtime.RawExtension{Raw: v}, ValuesFrom: from}}
		bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: c.Name + ":a", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: ns},
				Content: &fleetv1alpha1.ContentReference{Namespace: ns, Name: c.Name}}}
		for _, o := range []client.Object{c, bd} {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(bd)}); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
			t.Fatal(err)
		}
		return bd
	}
	site := &fleetv1alpha1.ValuesKeyRef{Name: "site"}
	db := &fleetv1alpha1.ValuesKeyRef{Name: "db", Namespace: ns, Key: "custom"}

	bd := deploy("merged", map[string]any{"color": "red", "size": "medium", "db": map[string]any{"host": "localhost"}},
		[]fleetv1alpha1.HelmValuesFrom{{ConfigMapKeyRef: site, SecretKeyRef: db}})
	if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
		t.Fatalf("not applied: %+v", bd.Status.Conditions)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: helmchart.ReleaseName("merged") + "-cfg"}, cm); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"color": "green", "size": "small", "host": secretValue}; !maps.Equal(cm.Data, want) {
		t.Errorf("the release's ConfigMap has %v, want %v (values, then the ConfigMap's, then the Secret's)", cm.Data, want)
	}

	for _, tc := range []struct {
		name   string
		values map[string]any
		from   []fleetv1alpha1.HelmValuesFrom
		want   string
	}{
		{"missing-secret", nil, []fleetv1alpha1.HelmValuesFrom{{SecretKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "nope"}}}, "valuesFrom: Secret " + ns + "/nope key \"values.yaml\": "},
		{"missing-key", nil, []fleetv1alpha1.HelmValuesFrom{{ConfigMapKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "site", Key: "other.yaml"}}}, "valuesFrom: ConfigMap " + ns + "/site key \"other.yaml\": no such key"},
		// A chart's message quoting a Secret's value, under a key no one would call secret
		// (values and valuesFrom set below, with that Secret).
		{"quoted", nil, nil, "refusing (redacted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "quoted" {
				// The failing value itself comes from the Secret.
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fail"}, Data: map[string][]byte{"values.yaml": []byte("failWith: " + secretValue + "\n")}}
				if err := env.Client.Create(ctx, s); err != nil {
					t.Fatal(err)
				}
				tc.values, tc.from = map[string]any{"db": map[string]any{"host": "x"}}, []fleetv1alpha1.HelmValuesFrom{{SecretKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "fail"}}}
			}
			bd := deploy(tc.name, tc.values, tc.from)
			c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
			if c == nil || c.Reason != fleetv1alpha1.ReasonApplyFailed || !strings.Contains(c.Message, tc.want) {
				t.Fatalf("Applied %+v, want ApplyFailed with %q", c, tc.want)
			}
			if strings.Contains(fmt.Sprint(bd.Status), secretValue) {
				t.Errorf("a Secret's value is in the status: %+v", bd.Status)
			}
		})
	}
}
