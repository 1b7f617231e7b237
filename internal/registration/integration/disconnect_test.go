package integration

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
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

// TestDownstreamUnreachableReported: an agent that keeps checking in while its own cluster's API
// server does not answer (a control plane down, the nodes up) reports it with its heartbeat;
// its Cluster is Ready=False DownstreamUnreachable with the error, a Warning Event and the
// drover_fleet_clusters{state=unreachable} metric, and Ready again once the API server answers.
func TestDownstreamUnreachableReported(t *testing.T) {
	t.Parallel()
	ws := mgmt.Namespace(t)
	values := newToken(t, ws, "token", time.Hour)
	agentNS := downstreamNamespace(t, values)
	// The agent's downstream connection, which the test can cut.
	var cut atomic.Bool
	cfg := rest.CopyConfig(downstream.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if cut.Load() {
				return nil, errors.New("dial tcp: connect: connection refused (cut by the test)")
			}
			return rt.RoundTrip(r)
		})
	}
	clientID := "unreachable-" + ws
	startAgent(t, cfg, agentNS, clientID, func(o *agent.Options) { o.HeartbeatInterval = 500 * time.Millisecond })
	cred := credential(t, downstream.Client, agentNS)
	name := string(cred[fleetv1alpha1.KeyClusterName])
	ready := func(reason string, status metav1.ConditionStatus) *metav1.Condition {
		var cond *metav1.Condition
		eventually(t, 60*time.Second, func() error {
			cond = conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionReady)
			if cond == nil || cond.Reason != reason || cond.Status != status {
				return fmt.Errorf("Ready %+v, want %s/%s", cond, status, reason)
			}
			return nil
		})
		return cond
	}
	ready(fleetv1alpha1.ReasonSucceeded, metav1.ConditionTrue)

	cut.Store(true)
	cond := ready(fleetv1alpha1.ReasonDownstreamUnreachable, metav1.ConditionFalse)
	for _, want := range []string{"cannot reach its own cluster's API server", "connection refused (cut by the test)", "check the cluster's control plane"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Ready message %q lacks %q", cond.Message, want)
		}
	}
	waitEvent(t, ws, name, fleetv1alpha1.ReasonDownstreamUnreachable)
	if got := metric(t, "drover_fleet_clusters", map[string]string{"state": "unreachable"}); got < 1 {
		t.Errorf("drover_fleet_clusters{state=unreachable} = %v, want at least 1", got)
	}

	cut.Store(false)
	ready(fleetv1alpha1.ReasonSucceeded, metav1.ConditionTrue)
	if e := getCluster(t, ws, name).Status.Agent.DownstreamError; e != "" {
		t.Errorf("status.agent.downstreamError %q after recovery, want none", e)
	}
	waitEvent(t, ws, name, fleetv1alpha1.EventDownstreamReachable)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAgentReportsNotTrusted: what an agent writes into its Cluster's status cannot keep the
// cluster connected for ever (a lastSeen in the future counts from when drover first saw it),
// nor reach terminals as escape sequences (control characters in downstreamError are replaced
// in the condition drover writes, which kubectl describe prints raw).
func TestAgentReportsNotTrusted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	report := func(name string, agent fleetv1alpha1.AgentStatus) {
		c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}
		if err := mgmt.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		// A merge patch, as an agent checks in: the cluster controller writes the status too.
		before := c.DeepCopy()
		c.Status.Agent = agent
		if err := mgmt.Client.Status().Patch(ctx, c, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(name, reason string) *metav1.Condition {
		var cond *metav1.Condition
		eventually(t, 30*time.Second, func() error {
			cond = conditionOf(getCluster(t, ws, name).Status.Conditions, fleetv1alpha1.ConditionReady)
			if cond == nil || cond.Reason != reason {
				return fmt.Errorf("Ready %+v, want reason %s", cond, reason)
			}
			return nil
		})
		return cond
	}
	future := metav1.NewTime(time.Now().Add(10 * 365 * 24 * time.Hour))
	report("future", fleetv1alpha1.AgentStatus{LastSeen: &future})
	ready("future", fleetv1alpha1.ReasonAgentDisconnected)

	now := metav1.Now()
	report("escapes", fleetv1alpha1.AgentStatus{LastSeen: &now, DownstreamError: "\x1b[2J\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 refused"})
	cond := ready("escapes", fleetv1alpha1.ReasonDownstreamUnreachable)
	if strings.ContainsAny(cond.Message, "\x1b\x07") || !strings.Contains(cond.Message, "?[2J") {
		t.Errorf("Ready message %q, want control characters replaced", cond.Message)
	}
}
