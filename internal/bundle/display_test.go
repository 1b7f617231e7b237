package bundle

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestDisplayState: a BundleDeployment carrying only what a Table lists (spec.deploymentID and
// the status.display the agent computed with Display) has the state and message
// DeploymentState gives the full object, for every state the Bundle summary counts.
func TestDisplayState(t *testing.T) {
	applied := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: fleetv1alpha1.ConditionApplied, Status: status, Reason: reason, Message: msg, ObservedGeneration: 3}
	}
	bd := func(id string, st fleetv1alpha1.BundleDeploymentStatus) *fleetv1alpha1.BundleDeployment {
		return &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster-a", Name: "app", Generation: 3},
			Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: id}, Status: st}
	}
	ok := applied(metav1.ConditionTrue, fleetv1alpha1.ReasonSucceeded, "Applied 2 resources")
	for _, tc := range []struct {
		name string
		bd   *fleetv1alpha1.BundleDeployment
		// next, when set, is the spec.deploymentID the BundleDeployment gets after the agent
		// wrote its status (and display) for bd's.
		next, wanted string
		state        string
		msgHas       string
	}{
		{name: "ready", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "d1", Ready: true, NonModified: true,
			Conditions: []metav1.Condition{ok}}), wanted: "d1", state: StateReady},
		{name: "pending: never applied", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{}), wanted: "d1", state: StatePending},
		{name: "pending: a new deployment ID the agent has not reported on", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{
			AppliedDeploymentID: "d1", Ready: true, NonModified: true, Conditions: []metav1.Condition{ok}}), next: "d2", wanted: "d2", state: StatePending},
		{name: "err applied", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{Conditions: []metav1.Condition{
			applied(metav1.ConditionFalse, fleetv1alpha1.ReasonApplyFailed, `namespaces "web" not found`)}}), wanted: "d1",
			state: StateErrApplied, msgHas: `namespaces "web" not found`},
		{name: "pending: unknown kind", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{Conditions: []metav1.Condition{
			applied(metav1.ConditionFalse, fleetv1alpha1.ReasonUnknownKind, "Waiting for the cluster to serve Database.example.com/v1; retrying")}}),
			wanted: "d1", state: StatePending, msgHas: "Database.example.com/v1"},
		{name: "modified, a Secret's drift by path only", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "d1", Ready: true,
			Conditions: []metav1.Condition{ok}, Resources: []fleetv1alpha1.ResourceState{
				{APIVersion: "v1", Kind: "Secret", Namespace: "web", Name: "db", State: "Modified", Message: `data.password: want "hunter2", have "x"`},
				{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "settings", State: "Modified", Message: `data.color: want "blue", have "red"`}}}),
			wanted: "d1", state: StateModified, msgHas: `Secret web/db Modified: data.password; ConfigMap web/settings Modified: data.color: want "blue", have "red"`},
		{name: "not ready", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "d1", NonModified: true, Conditions: []metav1.Condition{ok,
			{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonResourcesNotReady, Message: "Deployment web/api: 0/3 replicas available"}}}),
			wanted: "d1", state: StateNotReady, msgHas: "0/3 replicas available"},
		{name: "out of date", bd: bd("d1", fleetv1alpha1.BundleDeploymentStatus{AppliedDeploymentID: "d1", Ready: true, NonModified: true,
			Conditions: []metav1.Condition{ok}}), wanted: "d2", state: StateOutOfDate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := tc.bd.DeepCopy()
			full.Status.Display = Display(full) // as the agent writes it
			if full.Status.Display.State == StateReady || full.Status.Display.State == StateOutOfDate {
				t.Errorf("display state %q: the agent writes Ready spelled out and never OutOfDate", full.Status.Display.State)
			}
			if tc.next != "" {
				full.Spec.DeploymentID, full.Generation = tc.next, full.Generation+1
			}
			// What a Table row carries.
			listed := &fleetv1alpha1.BundleDeployment{Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: full.Spec.DeploymentID},
				Status: fleetv1alpha1.BundleDeploymentStatus{Display: full.Status.Display}}
			wantState, wantMsg := DeploymentState(full, tc.wanted)
			state, msg := DisplayState(listed, tc.wanted)
			if state != wantState || msg != wantMsg {
				t.Errorf("DisplayState = %q %q, DeploymentState = %q %q", state, msg, wantState, wantMsg)
			}
			if state != tc.state || !strings.Contains(msg, tc.msgHas) {
				t.Errorf("state %q %q, want %q with %q", state, msg, tc.state, tc.msgHas)
			}
			if strings.Contains(full.Status.Display.Message, "hunter2") {
				t.Errorf("the display shows a Secret value: %q", full.Status.Display.Message)
			}
		})
	}
}

// TestDisplayFields: the display's message is at most 512 bytes of valid UTF-8, and
// driftCorrected is the True DriftCorrected condition's time and message.
func TestDisplayFields(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	long := strings.Repeat("é", 400)
	for _, tc := range []struct {
		name       string
		conds      []metav1.Condition
		msg, drift string
	}{
		{"long message clipped", []metav1.Condition{{Type: fleetv1alpha1.ConditionApplied, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonApplyFailed,
			Message: long}}, strings.Repeat("é", 254) + "...", ""},
		{"drift corrected", []metav1.Condition{{Type: fleetv1alpha1.ConditionDriftCorrected, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.EventDriftCorrected,
			Message: "Re-applied after changes downstream: ConfigMap web/settings", LastTransitionTime: at}},
			"", "2026-01-02T15:04:05Z: Re-applied after changes downstream: ConfigMap web/settings"},
		{"drift correction no longer true", []metav1.Condition{{Type: fleetv1alpha1.ConditionDriftCorrected, Status: metav1.ConditionFalse, Reason: "None",
			LastTransitionTime: at}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := &fleetv1alpha1.BundleDeployment{Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "d1"},
				Status: fleetv1alpha1.BundleDeploymentStatus{Conditions: tc.conds}}
			d := Display(bd)
			if d.Message != tc.msg || d.DriftCorrected != tc.drift {
				t.Errorf("display message %q, driftCorrected %q; want %q, %q", d.Message, d.DriftCorrected, tc.msg, tc.drift)
			}
			if len(d.Message) > 512 || !utf8.ValidString(d.Message) {
				t.Errorf("message of %d bytes, valid UTF-8 %v", len(d.Message), utf8.ValidString(d.Message))
			}
		})
	}
}
