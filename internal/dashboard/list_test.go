package dashboard_test

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/dashboard"
)

// TestDecodeList: the dashboard's streaming decoder reads every kind's list, as the real API
// server sends it, into the same objects as the API machinery's decoder, less what it skips
// (managed fields, a BundleDeployment's inline manifests).
func TestDecodeList(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	f := newFleet(t, ns)
	// A BundleDeployment with inline manifests and a content reference, in the fixture's namespace.
	withManifests := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inline",
		Labels: map[string]string{"a": "b", bundle.BundleNameLabel: "app", bundle.BundleNamespaceLabel: ns, bundle.CustomizationLabel: "eu"}},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "x", Manifests: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)}},
			Content: &fleetv1alpha1.ContentReference{Namespace: ns, Name: "s-1"}}}
	createAll(t, withManifests)
	// ... ready, with a drift correction.
	withManifests.Status = fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "x", Ready: true, NonModified: true, Conditions: []metav1.Condition{
		cond(fleetv1alpha1.ConditionDriftCorrected, "True", fleetv1alpha1.EventDriftCorrected, "Re-applied after changes downstream: ConfigMap x/c")}}
	withManifests.Status.Display = bundle.Display(withManifests)
	setStatus(t, withManifests)
	rc := kubernetes.NewForConfigOrDie(mgmt.Config).CoreV1().RESTClient()
	decoder := serializer.NewCodecFactory(mgmt.Client.Scheme()).UniversalDeserializer()
	for _, tc := range []struct {
		kind, ns string
		list     client.ObjectList
		want     int
	}{
		{"hosted", ns, &managementv1alpha1.ClusterList{}, 3},
		{"fleet", ns, &fleetv1alpha1.ClusterList{}, 3},
		{"bundles", ns, &fleetv1alpha1.BundleList{}, 2},
		{"bundledeployments", f.edge1.Status.Namespace, &fleetv1alpha1.BundleDeploymentList{}, 2},
		{"bundledeployments", ns, &fleetv1alpha1.BundleDeploymentList{}, 1},
		{"migrations", ns, &migrationv1alpha1.CloudProviderMigrationList{}, 1},
		{"events", ns, &corev1.EventList{}, 2},
	} {
		t.Run(tc.kind+" in "+tc.ns, func(t *testing.T) {
			raw, err := rc.Get().AbsPath(dashboard.KindURL(tc.kind, tc.ns)).SetHeader("Accept", "application/json").DoRaw(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got, rv, err := dashboard.DecodeList(bytes.NewReader(raw), tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := decoder.Decode(raw, nil, tc.list); err != nil {
				t.Fatal(err)
			}
			items, err := meta.ExtractList(tc.list)
			if err != nil {
				t.Fatal(err)
			}
			if rv == "" || rv != tc.list.GetResourceVersion() {
				t.Errorf("resourceVersion %q, want %q", rv, tc.list.GetResourceVersion())
			}
			if len(got) != tc.want || len(items) != tc.want {
				t.Fatalf("decoded %d objects, the API machinery %d, want %d", len(got), len(items), tc.want)
			}
			for _, it := range items {
				want := it.(client.Object)
				if len(want.GetManagedFields()) == 0 {
					t.Errorf("%s has no managed fields: the test would not show that they are skipped", want.GetName())
				}
				want.SetManagedFields(nil)
				if bd, ok := want.(*fleetv1alpha1.BundleDeployment); ok {
					// Only what the pages read (see TestDecodeTable).
					want = dashboard.Trim(bd)
					if bd.Status.Display == nil && bd.Status.AppliedDeploymentID != "" {
						t.Errorf("%s has a status but no display: the fixture does not write it as the agent would", bd.Name)
					}
				}
				have := got[want.GetNamespace()+"/"+want.GetName()]
				if !equality.Semantic.DeepEqual(have, want) {
					w, _ := json.Marshal(want)
					h, _ := json.Marshal(have)
					t.Errorf("%s decoded differently:\nwant %s\nhave %s", want.GetName(), w, h)
				}
			}
		})
	}
}

// TestDecodeTable: BundleDeployments listed as the real API server's Table without the
// objects (the printer columns of the CRD) decode into the same objects as their JSON list
// (and as a watch's objects: both are trimmed alike), each with its labels, deployment ID and
// status.display; a Table without a column the dashboard reads (an older CRD) is listed as
// JSON instead.
func TestDecodeTable(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	f := newFleet(t, ns)
	// And one with every label the pages read and a drift correction, in the fixture's namespace.
	full := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "corrected",
		Labels: map[string]string{"a": "b", bundle.BundleNameLabel: "app", bundle.BundleNamespaceLabel: ns, bundle.CustomizationLabel: "eu",
			fleetv1alpha1.ClusterLabel: "edge-1", fleetv1alpha1.ClusterNamespaceLabel: ns}},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "x"}}
	createAll(t, full)
	full.Status = fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "x", Ready: false, NonModified: true, Conditions: []metav1.Condition{
		cond(fleetv1alpha1.ConditionReady, "False", fleetv1alpha1.ReasonResourcesNotReady, "Deployment web/api: 0/3 replicas available"),
		cond(fleetv1alpha1.ConditionDriftCorrected, "True", fleetv1alpha1.EventDriftCorrected, "Re-applied after changes downstream: ConfigMap x/c")}}
	full.Status.Display = bundle.Display(full)
	setStatus(t, full)
	rc := kubernetes.NewForConfigOrDie(mgmt.Config).CoreV1().RESTClient()
	for _, tc := range []struct {
		ns string
		n  int
	}{{f.edge1.Status.Namespace, 2}, {f.edge2.Status.Namespace, 2}, {ns, 1}} {
		bdNS := tc.ns
		t.Run(bdNS, func(t *testing.T) {
			raw, err := rc.Get().AbsPath(dashboard.KindURL("bundledeployments", bdNS)).SetHeader("Accept", "application/json").DoRaw(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := dashboard.DecodeList(bytes.NewReader(raw), "bundledeployments")
			if err != nil {
				t.Fatal(err)
			}
			table, err := rc.Get().AbsPath(dashboard.KindURL("bundledeployments", bdNS)).Param("includeObject", "None").
				SetHeader("Accept", dashboard.TableAccept).DoRaw(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(table, []byte(`"kind":"Table"`)) || bytes.Contains(table, []byte("managedFields")) {
				t.Fatalf("not a Table without the objects: %.300s", table)
			}
			got, rv, err := dashboard.DecodeTable(bytes.NewReader(table), "bundledeployments")
			if err != nil {
				t.Fatal(err)
			}
			if rv == "" {
				t.Error("no resourceVersion")
			}
			if len(want) != tc.n || !equality.Semantic.DeepEqual(got, want) {
				w, _ := json.Marshal(want)
				h, _ := json.Marshal(got)
				t.Errorf("the Table decoded differently from the list:\nlist  %s\ntable %s", w, h)
			}
			for k, o := range got {
				bd := o.(*fleetv1alpha1.BundleDeployment)
				if bd.Labels[bundle.BundleNameLabel] == "" || bd.Labels[fleetv1alpha1.ClusterLabel] == "" || bd.Spec.DeploymentID == "" {
					t.Errorf("%s: labels %v, deployment ID %q", k, bd.Labels, bd.Spec.DeploymentID)
				}
			}
			older, _, err := dashboard.ListWithColumn(t.Context(), rc, "bundledeployments", bdNS, "Not-A-Column")
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(older, want) {
				t.Errorf("listed without the columns: %v, want %v", older, want)
			}
		})
	}
}
