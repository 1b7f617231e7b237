package deployer

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestConditionMessageOneLine: joined errors (one per line) become one line in a condition
// message, which kubectl, the CLI's tables and Events show on one.
func TestConditionMessageOneLine(t *testing.T) {
	bd := &fleetv1alpha1.BundleDeployment{}
	err := errors.Join(errors.New("ConfigMap a/x: conflict"), errors.New("ConfigMap a/y: forbidden"))
	setCond(bd, fleetv1alpha1.ConditionApplied, false, fleetv1alpha1.ReasonApplyFailed, err.Error()+"\n")
	if got, want := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied).Message, "ConfigMap a/x: conflict; ConfigMap a/y: forbidden"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
