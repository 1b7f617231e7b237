package deployer

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
)

// TestStatusDisplay: the agent writes status.display with the status it reports, in the same
// write: Ready for the deployment ID it applied, ErrApplied with the error when applying fails,
// Pending with the kinds it waits for; a drift check adds it to a status an older agent wrote.
func TestStatusDisplay(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	r := &Reconciler{Upstream: env.Client, ContentReader: env.Client, Downstream: env.Client, DownstreamConfig: env.Config,
		RecordNamespace: ns, DriftInterval: defaultDriftPeriod}
	manifest := func(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
	for _, tc := range []struct {
		name, manifest string
		state, msgHas  string
		// olderAgent: the status is written again without a display, then the drift check runs.
		olderAgent bool
	}{
		{"applied and ready", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"blue"}}`, bundle.DisplayReady, "", false},
		{"drift check after an older agent", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"older"}}`, bundle.DisplayReady, "", true},
		{"apply failed", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"` + ns + `-missing"}}`,
			bundle.StateErrApplied, `namespaces "` + ns + `-missing" not found`, false},
		{"kind not served", `{"apiVersion":"example.com/v1","kind":"Database","metadata":{"name":"orders"}}`,
			bundle.StatePending, "Waiting for the cluster to serve Database.example.com/v1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: name + ":1", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: ns},
					Manifests: []runtime.RawExtension{manifest(tc.manifest)}}}
			if err := env.Client.Create(ctx, bd); err != nil {
				t.Fatal(err)
			}
			key := types.NamespacedName{Namespace: ns, Name: name}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			got := &fleetv1alpha1.BundleDeployment{}
			if err := env.Client.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			if tc.olderAgent {
				// A drift check first, so the status is the drift check's; then without a display.
				if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
					t.Fatal(err)
				}
				if err := env.Client.Get(ctx, key, got); err != nil {
					t.Fatal(err)
				}
				got.Status.Display = nil
				if err := env.Client.Status().Update(ctx, got); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
					t.Fatal(err)
				}
				if err := env.Client.Get(ctx, key, got); err != nil {
					t.Fatal(err)
				}
			}
			d := got.Status.Display
			if d == nil {
				t.Fatalf("no status.display in %+v", got.Status)
			}
			if d.DeploymentID != name+":1" || d.State != tc.state || !strings.Contains(d.Message, tc.msgHas) || (tc.msgHas == "" && d.Message != "") {
				t.Errorf("display %+v, want deployment ID %s, state %s, message with %q", *d, name+":1", tc.state, tc.msgHas)
			}
			// It is what the Bundle summary counts for the full status.
			state, msg := bundle.DeploymentState(got, got.Spec.DeploymentID)
			if want, _ := bundle.DisplayState(got, got.Spec.DeploymentID); state != want || msg != d.Message {
				t.Errorf("display %+v, DeploymentState %q %q", *d, state, msg)
			}
		})
	}
}
