package cli

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
)

// TestGetShowsOwnEvents: a hosted Cluster and the fleet Cluster it joined as share a name; each
// get shows the Events about its own object only.
func TestGetShowsOwnEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	hostedCl := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"},
		Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "shared", Region: "us-west-2", CredentialSecret: "aws", KubernetesVersion: ptr.To("1.32")}}}
	fleetCl := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}}
	for _, o := range []client.Object{hostedCl, fleetCl} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	event := func(o client.Object, gv, reason, note string) {
		ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "shared-"},
			EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "drover", ReportingInstance: "drover-1", Action: "Test",
			Reason: reason, Type: corev1.EventTypeNormal, Note: note,
			Regarding: corev1.ObjectReference{APIVersion: gv, Kind: "Cluster", Namespace: ns, Name: "shared", UID: o.GetUID()}}
		if err := mgmt.Client.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	event(hostedCl, v1.GroupVersion.String(), "Adopted", "eksConfig.tags[cost-center] adopted")
	event(fleetCl, fleetv1alpha1.GroupVersion.String(), fleetv1alpha1.EventAgentReconnected, "The agent checked in again\n1m  Normal  Forged  a row someone wrote")

	for _, tc := range []struct {
		args          []string
		want, notWant string
	}{
		{[]string{"cluster", "get", "shared"}, "Adopted", fleetv1alpha1.EventAgentReconnected},
		{[]string{"fleet", "get", "shared"}, fleetv1alpha1.EventAgentReconnected, "Adopted"},
	} {
		out, errOut, err := drover(ctx, append(tc.args, "--kubeconfig", kc, "-n", ns)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, errOut)
		}
		if !strings.Contains(out, "\nEvents:\n") || !strings.Contains(out, tc.want) || strings.Contains(out, tc.notWant) {
			t.Errorf("%v: want its own %s Event and not %s:\n%s", tc.args, tc.want, tc.notWant, out)
		}
		if strings.Contains(out, "\n1m  Normal  Forged") {
			t.Errorf("%v: an Event's line break started a row of its own:\n%s", tc.args, out)
		}
	}
}
