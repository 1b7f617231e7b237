package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// TestAgentDisconnectedAndBack stops a registered agent: its Cluster becomes Ready=False with
// reason AgentDisconnected (the last-seen time in the message, a Warning Event) within the
// suite's disconnect window, and Ready again with an AgentReconnected Event once the agent runs
// again.
func TestAgentDisconnectedAndBack(t *testing.T) {
	t.Parallel()
	ws := mgmt.Namespace(t)
	clientID := "disconnect-" + ws
	agentNS, cred, a := registerAgent(t, ws, clientID)
	name := string(cred[fleetv1alpha1.KeyClusterName])
	ready := func() (*fleetv1alpha1.Cluster, *metav1.Condition) {
		c := getCluster(t, ws, name)
		return c, conditionOf(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	}
	eventually(t, 60*time.Second, func() error {
		if _, cond := ready(); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v, want True", cond)
		}
		return nil
	})

	a.stop()
	stopped := time.Now()
	var cond *metav1.Condition
	var c *fleetv1alpha1.Cluster
	eventually(t, 30*time.Second, func() error {
		if c, cond = ready(); cond == nil || cond.Reason != fleetv1alpha1.ReasonAgentDisconnected || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready %+v, want False/%s", cond, fleetv1alpha1.ReasonAgentDisconnected)
		}
		return nil
	})
	// Within the window (plus the last heartbeat's second and scheduling slack), not at once.
	if took := time.Since(stopped); took > testAgentDisconnectAfter+10*time.Second {
		t.Errorf("AgentDisconnected %s after the agent stopped, window %s", took, testAgentDisconnectAfter)
	}
	if seen := c.Status.Agent.LastSeen.UTC().Format(time.RFC3339); !strings.Contains(cond.Message, seen) {
		t.Errorf("message %q does not say when the agent was last seen (%s)", cond.Message, seen)
	}
	waitEvent(t, ws, name, fleetv1alpha1.ReasonAgentDisconnected)
	if got := metric(t, "drover_fleet_clusters", map[string]string{"state": "disconnected"}); got < 1 {
		t.Errorf("drover_fleet_clusters{state=disconnected} = %v, want at least 1", got)
	}

	startAgent(t, downstream.Config, agentNS, clientID)
	eventually(t, 60*time.Second, func() error {
		if _, cond = ready(); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != fleetv1alpha1.ReasonSucceeded {
			return fmt.Errorf("Ready %+v after the agent restarted, want True/%s", cond, fleetv1alpha1.ReasonSucceeded)
		}
		return nil
	})
	waitEvent(t, ws, name, fleetv1alpha1.EventAgentReconnected)
}
