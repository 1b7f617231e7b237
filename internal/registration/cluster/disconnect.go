package cluster

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/api/meta"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/metrics"
	"github.com/droverhq/drover/internal/registration/internal/kube"
)

// DefaultHeartbeatInterval is the agents' default check-in interval (agent.Options
// HeartbeatInterval, drover agent --heartbeat-interval).
const DefaultHeartbeatInterval = time.Minute

// DefaultAgentDisconnectAfter is how long an agent may miss its heartbeats before its Cluster
// is Ready=False with reason AgentDisconnected: three default heartbeat intervals.
const DefaultAgentDisconnectAfter = 3 * DefaultHeartbeatInterval

// connection sets c's Ready condition from the agent's last check-in: False with reason
// AgentDisconnected once the agent has not been seen for r.AgentDisconnectAfter, True again
// when it has (its next heartbeat triggers a reconcile). It returns when the cluster counts as
// disconnected unless the agent checks in before (0: not on its own). It is computed from
// lastSeen and the clock only, so any reconcile — early, late or repeated — gets it right.
func (r *Reconciler) connection(c *fleetv1alpha1.Cluster) time.Duration {
	if c.Status.Agent.LastSeen == nil {
		return 0
	}
	seen := c.Status.Agent.LastSeen.Time
	if now := r.Now(); seen.After(now.Add(clockSkew)) {
		// The agent writes lastSeen: one in the future must not keep its cluster connected
		// for ever. It counts from when this controller first saw it.
		seen = r.firstSeen(c, seen, now)
	}
	if wait := seen.Add(r.AgentDisconnectAfter).Sub(r.Now()); wait > 0 {
		if e := printable(c.Status.Agent.DownstreamError); e != "" {
			kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonDownstreamUnreachable, fmt.Sprintf(
				"The agent checks in but cannot reach its own cluster's API server: %s. Nothing drover deploys gets there until it answers: "+
					"check the cluster's control plane. It is Ready again at the agent's first check-in after it answers.", e))
			return wait
		}
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "Agent checked in")
		return wait
	}
	ns := c.Status.Agent.Namespace
	if ns == "" {
		ns = "the agent's namespace"
	}
	kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonAgentDisconnected, fmt.Sprintf(
		"The agent last checked in at %s and has missed its heartbeats for longer than %s (drover server --agent-disconnect-after): "+
			"check the agent's pod and the ConfigMap drover-agent-status in %s downstream. Rollouts do not wait for this cluster; "+
			"it is Ready again at the agent's next check-in.",
		seen.UTC().Format(time.RFC3339), r.AgentDisconnectAfter, ns))
	return 0
}

// connectionState is c's state for the drover_fleet_clusters metric.
func connectionState(c *fleetv1alpha1.Cluster) string {
	switch {
	case c.Status.Agent.LastSeen == nil:
		return metrics.StateWaiting
	case Disconnected(c):
		return metrics.StateDisconnected
	case Unreachable(c):
		return metrics.StateUnreachable
	}
	return metrics.StateConnected
}

// Disconnected reports whether c's agent checked in before but is now disconnected (Ready=False,
// reason AgentDisconnected).
func Disconnected(c *fleetv1alpha1.Cluster) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	return cond != nil && cond.Reason == fleetv1alpha1.ReasonAgentDisconnected
}

// Unreachable reports whether c's agent checks in but cannot reach its own cluster's API server
// (Ready=False, reason DownstreamUnreachable).
func Unreachable(c *fleetv1alpha1.Cluster) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	return cond != nil && cond.Reason == fleetv1alpha1.ReasonDownstreamUnreachable
}

// clockSkew is how far in the future an agent's lastSeen may be before it is not believed.
const clockSkew = time.Minute

// firstSeen is when this controller first saw c's agent report lastSeen seen.
func (r *Reconciler) firstSeen(c *fleetv1alpha1.Cluster, seen, now time.Time) time.Time {
	type observation struct{ seen, at time.Time }
	if v, ok := r.futureSeen.Load(c.UID); ok && v.(observation).seen.Equal(seen) {
		return v.(observation).at
	}
	r.futureSeen.Store(c.UID, observation{seen: seen, at: now})
	return now
}

// printable replaces control characters (terminal escape sequences among them) in text an
// agent wrote, before drover copies it into conditions and Events that kubectl prints raw.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return '?'
		}
		return r
	}, s)
}
