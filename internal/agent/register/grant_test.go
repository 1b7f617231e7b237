package register

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestGrantWatchReportsRefusalOncePerChange: a waiting agent that may read its
// ClusterRegistration reports and logs its refusal (reason and message) once per change, however
// often it reads it; one that may not read it stops trying after the first refusal of the read.
func TestGrantWatchReportsRefusalOncePerChange(t *testing.T) {
	cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-default", Name: "request-abcde"}}
	c := fake.NewClientBuilder().WithScheme(Scheme).WithObjects(cr).WithStatusSubresource(cr).Build()
	var logs strings.Builder
	ctx := ctrl.LoggerInto(context.Background(), funcr.New(func(p, a string) { fmt.Fprintln(&logs, p, a) }, funcr.Options{}))
	var reports []string
	g := newGrantWatch(c, cr, func(_ context.Context, reason, msg string) { reports = append(reports, reason+": "+msg) })
	check := func() {
		t.Helper()
		g.next = time.Time{} // as if grantCheckInterval had passed
		g.check(ctx)
	}
	refuse := func(reason, msg string) {
		t.Helper()
		meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionGranted, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
		if err := c.Status().Update(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}

	g.waiting(ctx)
	check()
	refuse(fleetv1alpha1.ReasonTokenMaxClusters, "token edge is full")
	check()
	check()
	refuse(fleetv1alpha1.ReasonClusterRegistered, "registered with another token")
	check()
	check()
	want := []string{
		"Pending: Waiting for the management cluster to grant ClusterRegistration drover-default/request-abcde. " +
			"If it is refused, its Granted condition on the management cluster says why: kubectl -n drover-default describe clusterregistration request-abcde",
		"TokenMaxClustersReached: ClusterRegistration drover-default/request-abcde was refused by the management cluster (TokenMaxClustersReached): token edge is full",
		"ClusterAlreadyRegistered: ClusterRegistration drover-default/request-abcde was refused by the management cluster (ClusterAlreadyRegistered): registered with another token",
	}
	if fmt.Sprint(reports) != fmt.Sprint(want) {
		t.Errorf("reports\n%q\nwant\n%q", reports, want)
	}
	if n := strings.Count(logs.String(), "Registration refused by the management cluster"); n != 2 {
		t.Errorf("%d refusal log lines, want 2:\n%s", n, &logs)
	}
	reason, err := g.refusal(fleetv1alpha1.ReasonRegistrationFailed, context.DeadlineExceeded)
	if reason != fleetv1alpha1.ReasonClusterRegistered || !strings.Contains(err.Error(), "registered with another token") {
		t.Errorf("refusal: %s, %v; want the last refusal", reason, err)
	}

	// drover's import identity may only create registrations: one refused read, then none.
	gets := 0
	forbidden := fake.NewClientBuilder().WithScheme(Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			gets++
			return apierrors.NewForbidden(schema.GroupResource{Group: fleetv1alpha1.GroupVersion.Group, Resource: "clusterregistrations"}, cr.Name, fmt.Errorf("no get"))
		}}).Build()
	g = newGrantWatch(forbidden, cr, nil)
	for range 3 {
		check()
	}
	if gets != 1 {
		t.Errorf("%d reads of a registration the identity may not read, want 1", gets)
	}
}
