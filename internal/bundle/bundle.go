// Package bundle deploys Bundles: for every Cluster a Bundle targets it keeps one
// BundleDeployment in the cluster's namespace, referencing the Bundle's content stored once
// (content-addressed) as a BundleContent in the workspace namespace. It also keeps, per
// cluster, the Role that lets the cluster's request identity get exactly the BundleContents its
// BundleDeployments reference, and summarises the BundleDeployments in the Bundle's status.
package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle/agentmgmt"
	"github.com/droverhq/drover/internal/bundle/content"
)

// Labels on BundleDeployments naming their Bundle.
const (
	BundleNameLabel      = fleetv1alpha1.LabelPrefix + "bundle-name"
	BundleNamespaceLabel = fleetv1alpha1.LabelPrefix + "bundle-namespace"
	// CustomizationLabel on a BundleDeployment names the Bundle's target customization its
	// cluster gets (absent: the Bundle's own version).
	CustomizationLabel = fleetv1alpha1.LabelPrefix + "target-customization"
	// FieldOwner is the bundle controllers' field manager.
	FieldOwner = content.FieldOwner
)

// Options configure the bundle controllers.
type Options struct {
	// Workers is the number of concurrent BundleDeployment writes per Bundle (default 32).
	Workers int
	// ManageAgents keeps a drover-agent-<cluster> Bundle per registered Cluster (package agentmgmt).
	ManageAgents bool
	// AgentImage is the agent image of Clusters without spec.agentImage (default
	// manifests.DefaultImage()); it must match registration.Options.AgentImage.
	AgentImage string
	// AgentRolloutMaxUnavailable bounds the fleet's agent upgrades in flight
	// (agentmgmt.Reconciler.MaxUnavailable; nil: no bound).
	AgentRolloutMaxUnavailable *intstr.IntOrString
	// NotReadyGrace: how long workloads may stay not ready before a ResourcesNotReady Event
	// (default 2m).
	NotReadyGrace time.Duration
}

// Setup adds the bundle controllers to mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := (&Reconciler{Client: mgr.GetClient(), Workers: opts.Workers, NotReadyGrace: opts.NotReadyGrace, Recorder: mgr.GetEventRecorder("drover-bundle")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up bundle controller: %w", err)
	}
	if opts.ManageAgents {
		if err := (&agentmgmt.Reconciler{Client: mgr.GetClient(), AgentImage: opts.AgentImage, MaxUnavailable: opts.AgentRolloutMaxUnavailable,
			Recorder: mgr.GetEventRecorder("drover-agent-bundle")}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up agent bundle controller: %w", err)
		}
	}
	return nil
}

// Controllers returns a function for server.Options.Controllers.
func Controllers(opts Options) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error { return Setup(mgr, opts) }
}

// Disconnected reports whether c's agent checked in before but has missed its heartbeats for
// longer than drover server's --agent-disconnect-after (Ready=False, reason AgentDisconnected).
func Disconnected(c *fleetv1alpha1.Cluster) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	return cond != nil && cond.Reason == fleetv1alpha1.ReasonAgentDisconnected
}

func shortHash(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:12]
}
