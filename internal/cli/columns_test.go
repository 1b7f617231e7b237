package cli

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/test/envtest"
)

// TestKubectlColumns: `kubectl get` shows drover's objects' columns as a user reads them: zero
// counts as 0 (not blank), a refused registration as not granted, a token's expiry as its time
// (kubectl shows a future date column as <invalid>).
func TestKubectlColumns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	dir, err := envtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), append(args, "--kubeconfig", kc, "-n", ns, "--no-headers")...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "edge"}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status.Summary = fleetv1alpha1.BundleSummary{DesiredReady: 2, Pending: 2}
	if err := mgmt.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	if out := kubectl("get", "bundles.fleet.drover.io", "web"); !regexp.MustCompile(`^web\s+0\s+2\s+0\s+`).MatchString(out) {
		t.Errorf("kubectl get bundles: %q, want web 0 2 0 AGE", out)
	}
	cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "request-x"},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "c", ClientRandom: "0123456789abcdef0123"}}
	if err := mgmt.Client.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	cr.Status.ClusterName = "edge"
	if err := mgmt.Client.Status().Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if out := kubectl("get", "clusterregistrations.fleet.drover.io", "request-x", "-o", "custom-columns=G:.status.granted"); out != "false\n" {
		t.Errorf("granted of a registration not granted: %q, want false", out)
	}
	tok := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}}
	if err := mgmt.Client.Create(ctx, tok); err != nil {
		t.Fatal(err)
	}
	exp := metav1.NewTime(time.Now().Add(time.Hour).UTC().Truncate(time.Second))
	tok.Status.Expires = &exp
	if err := mgmt.Client.Status().Update(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if out := kubectl("get", "clusterregistrationtokens.fleet.drover.io", "edge"); !regexp.MustCompile(`\s` + regexp.QuoteMeta(exp.Format(time.RFC3339)) + `\s`).MatchString(out) {
		t.Errorf("kubectl get clusterregistrationtokens: %q, want the expiry %s", out, exp.Format(time.RFC3339))
	}
}
