package integration

import (
	"fmt"
	"github.com/droverhq/drover/internal/metrics/metricstest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
)

// metric reads a metric as drover server serves it.
var metric = metricstest.Value

// events lists the Events of namespace ns about the object named name.
func events(t *testing.T, ns, name string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := mgmt.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// waitEventOf waits for an Event with reason about the object ns/name and returns it.
func waitEventOf(t *testing.T, ns, name, reason string) eventsv1.Event {
	t.Helper()
	var ev eventsv1.Event
	eventually(t, 30*time.Second, func() error {
		evs := events(t, ns, name)
		i := slices.IndexFunc(evs, func(e eventsv1.Event) bool { return e.Reason == reason })
		if i < 0 {
			return fmt.Errorf("no %s event about %s/%s among %d", reason, ns, name, len(evs))
		}
		ev = evs[i]
		return nil
	})
	return ev
}

// TestRegistrationEventsAndMetrics registers an agent, registers it again with a new token that
// an admin allowed (a superseded registration whose identity is revoked), and sends a registration that is denied:
// each records its Event with a stable reason, no Event holds a token, and the registration
// metrics scraped from the registry count them.
func TestRegistrationEventsAndMetrics(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	clientID := "events-" + ws
	granted := map[string]string{"result": "granted", "reason": fleetv1alpha1.ReasonSucceeded}
	denied := map[string]string{"result": "denied", "reason": fleetv1alpha1.ReasonReservedLabel}
	grantedBefore, deniedBefore := metric(t, "drover_registrations_total", granted), metric(t, "drover_registrations_total", denied)
	latencyBefore := metric(t, "drover_registration_grant_duration_seconds", nil)

	values := newToken(t, ws, "token", time.Hour)
	agentNS := downstreamNamespace(t, values)
	a := startAgent(t, downstream.Config, agentNS, clientID)
	cred := credential(t, downstream.Client, agentNS)
	name := string(cred[fleetv1alpha1.KeyClusterName])
	waitEventOf(t, ws, name, fleetv1alpha1.EventRegistrationGranted)
	var regs fleetv1alpha1.ClusterRegistrationList
	if err := mgmt.Client.List(ctx, &regs, client.InNamespace(ws)); err != nil || len(regs.Items) != 1 {
		t.Fatalf("registrations: %v, %d", err, len(regs.Items))
	}
	first := regs.Items[0].Name
	eventually(t, 30*time.Second, func() error {
		if cr := (&fleetv1alpha1.ClusterRegistration{}); mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: first}, cr) != nil || !cr.Status.Granted {
			return fmt.Errorf("registration %s not granted yet", first)
		}
		return nil
	})
	waitEventOf(t, ws, first, fleetv1alpha1.EventRegistrationGranted)

	// Registered again from scratch (new token, no credential): the first registration is
	// superseded and its request identity revoked.
	a.stop()
	if err := downstream.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: manifests.CredentialSecret}}); err != nil {
		t.Fatal(err)
	}
	second := newToken(t, ws, "second", time.Hour)
	allowToken(t, ws, name, "second") // the cluster is registered with "token"
	putBootstrap(t, downstream.Client, agentNS, second)
	startAgent(t, downstream.Config, agentNS, clientID)
	waitEventOf(t, ws, first, fleetv1alpha1.EventRegistrationSuperseded)
	revoked := waitEventOf(t, ws, name, fleetv1alpha1.EventCredentialRevoked)
	if !strings.Contains(revoked.Note, first) {
		t.Errorf("CredentialRevoked note %q does not name the registration %s", revoked.Note, first)
	}

	// Denied: a label in drover's own prefix.
	imp := tokenClient(t, values[fleetv1alpha1.KeyToken])
	cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
		Labels: map[string]string{fleetv1alpha1.TokenLabel: "token"}},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "denied-" + ws, ClientRandom: "0123456789abcdef0123",
			ClusterLabels: map[string]string{fleetv1alpha1.ManagedLabel: "false"}}}
	if err := imp.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if ev := waitEventOf(t, ws, cr.Name, fleetv1alpha1.EventRegistrationDenied); ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, fleetv1alpha1.ReasonReservedLabel) {
		t.Errorf("denied event %s %q, want a Warning naming %s", ev.Type, ev.Note, fleetv1alpha1.ReasonReservedLabel)
	}

	// No Event carries a token.
	var all eventsv1.EventList
	if err := mgmt.Client.List(ctx, &all, client.InNamespace(ws)); err != nil {
		t.Fatal(err)
	}
	secrets := [][]byte{values[fleetv1alpha1.KeyToken], second[fleetv1alpha1.KeyToken], cred[fleetv1alpha1.KeyToken], cred[fleetv1alpha1.KeyRenewalToken]}
	for _, e := range all.Items {
		for _, s := range secrets {
			if len(s) > 0 && strings.Contains(e.Note, string(s)) {
				t.Errorf("event %s (%s) holds a token", e.Name, e.Reason)
			}
		}
	}

	// Metrics: both grants, the denial, two grant latencies, a connected cluster.
	if got := metric(t, "drover_registrations_total", granted); got < grantedBefore+2 {
		t.Errorf("drover_registrations_total%v = %v, want at least %v", granted, got, grantedBefore+2)
	}
	if got := metric(t, "drover_registrations_total", denied); got < deniedBefore+1 {
		t.Errorf("drover_registrations_total%v = %v, want at least %v", denied, got, deniedBefore+1)
	}
	if got := metric(t, "drover_registration_grant_duration_seconds", nil); got < latencyBefore+2 {
		t.Errorf("drover_registration_grant_duration_seconds count = %v, want at least %v", got, latencyBefore+2)
	}
	eventually(t, 30*time.Second, func() error {
		if got := metric(t, "drover_fleet_clusters", map[string]string{"state": "connected"}); got < 1 {
			return fmt.Errorf("drover_fleet_clusters{state=connected} = %v", got)
		}
		return nil
	})
}
