// Package heartbeat checks the agent in: it patches Cluster.status.agent (lastSeen, and the
// agent's namespace, version and features) with the request identity, which may patch its own Cluster's
// status and nothing more.
package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/text"
	"github.com/droverhq/drover/internal/version"
)

// Features are what this agent reports it can do (fleetv1alpha1.AgentFeature*).
var Features = []string{fleetv1alpha1.AgentFeatureHelmValues, fleetv1alpha1.AgentFeatureHelmValuesFrom, fleetv1alpha1.AgentFeatureContentSlots}

// Beat patches the Cluster's agent status once; downstreamErr is why the agent's own cluster's
// API server did not answer ("": it did).
func Beat(ctx context.Context, c client.Client, workspace, cluster, agentNamespace, downstreamErr string, now time.Time) error {
	seen := ptrTime(now)
	agent := map[string]any{"lastSeen": seen, "namespace": agentNamespace, "downstreamError": nil, "features": Features, "featuresSeen": seen}
	if v := reportedVersion(version.Get().Version); v != "" {
		agent["version"] = v
	}
	if downstreamErr != "" {
		agent["downstreamError"] = text.Clip(downstreamErr, 512)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"agent": agent}})
	if err != nil {
		return fmt.Errorf("encode heartbeat: %w", err)
	}
	obj := &fleetv1alpha1.Cluster{}
	obj.Namespace, obj.Name = workspace, cluster
	if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("heartbeat for cluster %s/%s: %w", workspace, cluster, err)
	}
	return nil
}

// versionChars is what the Cluster CRD accepts in status.agent.version.
var versionChars = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)

// reportedVersion is v, or nothing when the CRD would refuse it: a build with an odd version
// string must not lose its heartbeats.
func reportedVersion(v string) string {
	if versionChars.MatchString(v) {
		return v
	}
	return ""
}

// RightsGrace is how long after it starts Run retries a Forbidden beat while the credential
// still works: right after a registration the right to patch the Cluster's status may still be
// on its way (drover writes it after every agent of a registration storm has its credential).
const RightsGrace = 5 * time.Minute

// Run beats every interval until ctx ends. A beat rejected as Unauthorized ends it with that
// error (the credential is no longer valid); so does Forbidden, unless it comes within
// RightsGrace and the credential can still list the agent's BundleDeployments in
// deploymentNamespace, read through live (uncached: the right every answered registration has).
// Other failures are retried.
func Run(ctx context.Context, c client.Client, live client.Reader, workspace, cluster, agentNamespace, deploymentNamespace string, interval time.Duration, probe func(context.Context) error) error {
	start := time.Now()
	for {
		wait := interval
		downstreamErr := ""
		if probe != nil {
			if err := probe(ctx); err != nil && ctx.Err() == nil {
				downstreamErr = err.Error()
				ctrl.LoggerFrom(ctx).Info("Cannot reach this cluster's API server; reporting it with the check-in", "error", downstreamErr)
			}
		}
		err := Beat(ctx, c, workspace, cluster, agentNamespace, downstreamErr, time.Now())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			rightOnItsWay := apierrors.IsForbidden(err) && time.Since(start) < RightsGrace && canList(ctx, live, deploymentNamespace)
			switch {
			case rightOnItsWay:
				// Expected right after registering: not an error, and retried sooner than
				// the next beat so the Cluster shows the agent as soon as it may.
				ctrl.LoggerFrom(ctx).Info("Not allowed to check in yet; the right is on its way", "error", err.Error())
				wait = min(interval, rightsRetry)
			case isAuth(err):
				// The agent logs why its work ended, and registers again.
				return err
			default:
				// Retried at the next beat: one line, no stack trace (an Error would get one).
				ctrl.LoggerFrom(ctx).Info("Checking in failed, retrying", "error", err.Error(), "retryIn", wait)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// rightsRetry is how soon a beat refused while the right is on its way is retried.
const rightsRetry = 2 * time.Second

func canList(ctx context.Context, c client.Reader, namespace string) bool {
	return c.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(namespace), client.Limit(1)) == nil
}
