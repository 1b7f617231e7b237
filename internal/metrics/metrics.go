// Package metrics holds drover's domain metrics. Every metric is registered on
// controller-runtime's metrics.Registry, so drover server's metrics endpoint
// (--metrics-bind-address) and the agent's /metrics serve them next to controller-runtime's own.
//
// Labels are bounded: providers, phases, states, outcomes, stable condition reasons and API
// operation names, never a cluster, Bundle or namespace name. Gauges that count objects are
// kept by the controllers that own those objects (a Tracker per kind), so with leader election
// only the leader reports them. docs/metrics.md lists every metric.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const namespace = "drover"

// Registration and the fleet.
var (
	// Registrations counts ClusterRegistrations answered, by result ("granted", "denied") and
	// reason ("Succeeded" for a grant; for a denial the Granted condition's stable reason, such
	// as RegistrationFailed or ClusterConflict).
	Registrations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "registrations_total",
		Help: "ClusterRegistrations answered, by result (granted, denied) and the Granted condition's reason.",
	}, []string{"result", "reason"})

	// GrantDuration is the time from a ClusterRegistration's creation to its grant (the
	// registration secret written and the registration marked granted), in seconds.
	GrantDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "registration_grant_duration_seconds",
		Help:    "Time from a ClusterRegistration's creation to its grant.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	})

	// FleetClusters counts fleet Clusters (clusters.fleet.drover.io) by the state of their
	// agent: "connected" (checked in within --agent-disconnect-after), "disconnected"
	// (Ready=False, AgentDisconnected) or "waiting" (never checked in).
	FleetClusters = NewTracker(namespace+"_fleet_clusters",
		"Fleet Clusters by agent state (connected, disconnected, waiting).", "state")

	// AgentUpgradesWaiting is the number of fleet Clusters whose agent upgrade waits for the
	// fleet's agent rollout budget (drover server --agent-rollout-max-unavailable).
	AgentUpgradesWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "agent_upgrades_waiting",
		Help: "Fleet Clusters whose agent upgrade waits for the agent rollout budget (--agent-rollout-max-unavailable).",
	})
)

// Fleet cluster states (FleetClusters' state label).
const (
	StateConnected    = "connected"
	StateDisconnected = "disconnected"
	StateUnreachable  = "unreachable"
	StateWaiting      = "waiting"
)

// Bundles.
var (
	// Bundles counts Bundles by readiness: "ready" (every targeted cluster ready) or
	// "not_ready", and the Ready condition's reason (Succeeded, Pending, ApplyFailed).
	Bundles = NewTracker(namespace+"_bundles",
		"Bundles by readiness (ready, not_ready) and the Ready condition's reason.", "state", "reason")

	// BundleDeployments counts the BundleDeployments of all Bundles by the state their
	// Bundle's summary gives them: ready, not_ready, pending, modified, err_applied,
	// out_of_date. Rollout progress is out_of_date falling to 0.
	BundleDeployments = NewTracker(namespace+"_bundle_deployments",
		"BundleDeployments by state (ready, not_ready, pending, modified, err_applied, out_of_date), from the Bundles' summaries.", "state")

	// BundleEvents counts rollout and drift happenings seen by the bundle controller, by the
	// reason of the Event recorded for each: RolloutHalted, ResourcesNotReady, DriftCorrected.
	BundleEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "bundle_events_total",
		Help: "Bundle Events recorded, by reason (RolloutHalted, ResourcesNotReady, DriftCorrected).",
	}, []string{"reason"})
)

// GitRepos.
var (
	// GitRepos counts GitRepos by the state of their last sync: "synced" (the revision's latest
	// commit is deployed), "not_synced" (fetching or rendering failed; the last good commit stays
	// deployed) or "paused", and the Synced condition's reason (Succeeded, AuthFailed,
	// ClientSecretInvalid, RevisionNotFound, FetchFailed, RenderFailed, Paused).
	GitRepos = NewTracker(namespace+"_gitrepos",
		"GitRepos by sync state (synced, not_synced, paused) and the Synced condition's reason.", "state", "reason")

	// GitRepoFetches counts the GitRepo controller's fetches of a revision by result:
	// "deployed" (a new commit rendered into Bundles), "unchanged" (the commit deployed is still
	// the latest) or "failed".
	GitRepoFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "gitrepo_fetches_total",
		Help: "GitRepo fetches by result (deployed: a new commit rendered into Bundles; unchanged; failed).",
	}, []string{"result"})

	// WebhookThrottled counts the push webhook deliveries the receiver refused with 429, before
	// reading their body or the webhook Secret, by the limit hit: "rate" (its token bucket)
	// or "concurrency" (as many deliveries as it processes at once already being processed).
	WebhookThrottled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "gitrepo_webhook_throttled_total",
		Help: "Push webhook deliveries refused with 429, by the limit hit (rate, concurrency).",
	}, []string{"limit"})
)

// GitRepo sync states (GitRepos' state label).
const (
	GitRepoSynced    = "synced"
	GitRepoNotSynced = "not_synced"
	GitRepoPaused    = "paused"
)

func init() {
	register(Registrations, GrantDuration, FleetClusters, AgentUpgradesWaiting, Bundles, BundleDeployments, BundleEvents, GitRepos, GitRepoFetches, WebhookThrottled)
}

// all are drover's domain metrics (TestEveryMetricIsDocumented checks docs/metrics.md).
var all []prometheus.Collector

// register registers cs on controller-runtime's registry.
func register(cs ...prometheus.Collector) {
	all = append(all, cs...)
	ctrlmetrics.Registry.MustRegister(cs...)
}

// Cloud-provider migrations.
var (
	// Migrations counts CloudProviderMigrations by phase (Pending, Running, Succeeded,
	// Failed, RollingBack, RolledBack).
	Migrations = NewTracker(namespace+"_migrations", "CloudProviderMigrations by phase.", "phase")

	// MigrationSteps counts the steps recorded in the migrations' status by outcome (their
	// phase: Pending, Running, Applied, Succeeded, Failed, Skipped, RolledBack).
	MigrationSteps = NewTracker(namespace+"_migration_steps",
		"Steps of CloudProviderMigrations by outcome (Pending, Running, Applied, Succeeded, Failed, Skipped, RolledBack).", "outcome")
)

func init() { register(Migrations, MigrationSteps) }
