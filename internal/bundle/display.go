package bundle

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/text"
)

// DisplayReady is StateReady as status.display.state spells it.
const DisplayReady = "Ready"

// Bounds of status.display's strings (the CRD's maxLength).
const (
	maxDisplayMessage        = 512
	maxDisplayDriftCorrected = 1100
)

// Display is the status.display the agent writes with every status write of bd: its state
// against its own spec.deploymentID (DeploymentState; never OutOfDate, which compares with
// the Bundle), the message saying why it is not ready (never a Secret value, at most 512
// bytes), and when and how drift was last corrected. bd's status must be the one being written.
func Display(bd *fleetv1alpha1.BundleDeployment) *fleetv1alpha1.BundleDeploymentDisplay {
	state, msg := DeploymentState(bd, bd.Spec.DeploymentID)
	if state == StateReady {
		state = DisplayReady
	}
	d := &fleetv1alpha1.BundleDeploymentDisplay{DeploymentID: bd.Spec.DeploymentID, State: state, Message: text.Clip(msg, maxDisplayMessage)}
	if c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionDriftCorrected); c != nil && c.Status == metav1.ConditionTrue {
		d.DriftCorrected = text.Clip(c.LastTransitionTime.UTC().Format(time.RFC3339)+": "+c.Message, maxDisplayDriftCorrected)
	}
	return d
}

// DisplayState is a BundleDeployment's state against its Bundle's current deployment ID
// wanted (WantedDeploymentID), as DeploymentState computes it, read from status.display: for
// a BundleDeployment that may carry nothing else of its status (listed as a Table). Its
// deployment ID not the wanted one: OutOfDate; no display, or one computed for another
// spec.deploymentID (the agent has not reported on this one yet): Pending.
func DisplayState(bd *fleetv1alpha1.BundleDeployment, wanted string) (state, msg string) {
	d := bd.Status.Display
	switch {
	case bd.Spec.DeploymentID != wanted:
		return StateOutOfDate, ""
	case d == nil || d.DeploymentID != bd.Spec.DeploymentID || d.State == "":
		return StatePending, ""
	case d.State == DisplayReady:
		return StateReady, ""
	}
	return d.State, d.Message
}
