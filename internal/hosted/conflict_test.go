package hosted

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestRequeueOnConflict: a pass whose spec or status write met a newer Cluster (the user's edit
// won the optimistic lock) is retried shortly without an error (which controller-runtime would
// log as a reconciler error and back off); other errors and results pass through.
func TestRequeueOnConflict(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "management.drover.io", Resource: "clusters"}, "billing-eks", errors.New("the object has been modified"))
	other := errors.New("describe cluster: throttled")
	for _, tc := range []struct {
		name    string
		res     reconcile.Result
		err     error
		wantRes reconcile.Result
		wantErr error
	}{
		{"conflict while adopting", reconcile.Result{}, fmt.Errorf("adopt upstream changes into the spec: %w", conflict), reconcile.Result{RequeueAfter: conflictRetry}, nil},
		{"conflict joined with the status patch", reconcile.Result{}, errors.Join(fmt.Errorf("adopt: %w", conflict), fmt.Errorf("patch status: %w", conflict)), reconcile.Result{RequeueAfter: conflictRetry}, nil},
		{"other error", reconcile.Result{}, other, reconcile.Result{}, other},
		{"success", reconcile.Result{RequeueAfter: time.Minute}, nil, reconcile.Result{RequeueAfter: time.Minute}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := requeueOnConflict(t.Context(), tc.res, tc.err)
			if res != tc.wantRes || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("got (%+v, %v), want (%+v, %v)", res, err, tc.wantRes, tc.wantErr)
			}
		})
	}
}
