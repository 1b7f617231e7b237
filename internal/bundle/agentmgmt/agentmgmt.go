// Package agentmgmt keeps, for every registered Cluster, the Bundle drover-agent-<cluster> that
// carries the cluster's agent (Namespace, ServiceAccount, RBAC, Deployment), built by
// internal/agent/manifests from the Cluster's agent settings exactly as the importer builds it.
// Changing spec.agentImage/agentEnv/agentTolerations/agentResources updates the Bundle, and the
// agent applies its own new Deployment.
//
// The Bundle leaves out what belongs to installation rather than to settings: the bootstrap
// secret, the agent ConfigMap (clientID, labels) and the pod template's config-hash annotation,
// which the importer owns. Server-side apply leaves fields it does not mention to their owner,
// so adopting an agent whose settings did not change gives an identical pod template: same
// ReplicaSet, same pod, no restart.
package agentmgmt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/metrics"
	"github.com/droverhq/drover/internal/registration/names"
)

// OptOutAnnotation set to "false" on a Cluster leaves its agent unmanaged.
const OptOutAnnotation = fleetv1alpha1.LabelPrefix + "agent-managed"

// BundleName is the agent Bundle of a cluster.
func BundleName(cluster string) string { return names.SafeConcat("drover-agent", cluster) }

// Reconciler keeps the agent Bundles.
type Reconciler struct {
	Client client.Client
	// AgentImage is the image of Clusters without spec.agentImage (default
	// manifests.DefaultImage()), the importer's too.
	AgentImage string
	// MaxUnavailable bounds the fleet's agent upgrades: an agent Bundle's manifests change only
	// while fewer agent Bundles than this (a number, or a percentage of the connected clusters'
	// unpaused agent Bundles, rounded up, at least 1) are not ready, so a new agent that does
	// not come up stops the rollout at a few clusters instead of reaching every one at once.
	// Paused agent Bundles and disconnected clusters neither count nor hold it. nil: no bound.
	MaxUnavailable *intstr.IntOrString
	// Recorder, when set, records an AgentUpgradeWaiting Event on a Cluster whose agent upgrade
	// waits for the budget (once per upgrade).
	Recorder events.EventRecorder

	mu sync.Mutex
	// written: agent Bundles this process upgraded, by the resourceVersion its write gave them,
	// counted as not ready until the cache shows a later version (the bundle controller's
	// status for the new generation).
	written map[client.ObjectKey]string
	// told: the Clusters told their upgrade waits, by the hash of the agent manifests it waits
	// to get.
	told map[client.ObjectKey]string
	// counted is the last count of the fleet's agent Bundles (O(clusters)), reused for
	// budgetMemo by the other held upgrades instead of counting again for each.
	counted struct {
		at                  time.Time
		unavailable, budget int
	}

	waitingMu sync.Mutex
	// waiting are the Clusters whose upgrade waits for the budget (metrics.AgentUpgradesWaiting).
	waiting map[client.ObjectKey]bool
}

// setWaiting records whether the agent upgrade of the Cluster key waits for the budget.
func (r *Reconciler) setWaiting(key client.ObjectKey, waits bool) {
	r.waitingMu.Lock()
	defer r.waitingMu.Unlock()
	if waits == r.waiting[key] {
		return
	}
	if r.waiting == nil {
		r.waiting = map[client.ObjectKey]bool{}
	}
	if waits {
		r.waiting[key] = true
	} else {
		delete(r.waiting, key)
	}
	metrics.AgentUpgradesWaiting.Set(float64(len(r.waiting)))
}

// budgetMemo is how long one count of the fleet's agent Bundles serves.
const budgetMemo = 2 * time.Second

// budgetRetry is how soon an upgrade held by MaxUnavailable is tried again.
const budgetRetry = 10 * time.Second

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.AgentImage == "" {
		r.AgentImage = manifests.DefaultImage()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("agentbundle").
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		For(&fleetv1alpha1.Cluster{}).
		Owns(&fleetv1alpha1.Bundle{}).
		Complete(r)
}

// The agent management Bundle of each Cluster.
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundles,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile writes the Cluster's agent Bundle.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &fleetv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.setWaiting(req.NamespacedName, false)
			r.mu.Lock()
			delete(r.told, req.NamespacedName) // a Cluster of that name later is told again
			r.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	waits := false
	defer func() { r.setWaiting(req.NamespacedName, waits) }()
	// Managed once registered: imported (the importer installed the agent) or checked in.
	if !c.DeletionTimestamp.IsZero() || c.Status.Namespace == "" || c.Annotations[OptOutAnnotation] == "false" ||
		c.Spec.KubeConfigSecret == "" && c.Status.Agent.LastSeen == nil {
		return ctrl.Result{}, nil
	}
	resources, err := Resources(c, r.AgentImage)
	if err != nil {
		return ctrl.Result{}, err
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: BundleName(c.Name)}}
	upgrade := false // held against the budget: r.mu is held until the end
	if r.MaxUnavailable != nil {
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(b), b); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		if upgrade = b.ResourceVersion != "" && !b.Spec.Rollout.Paused && !equality.Semantic.DeepEqual(b.Spec.Resources, resources); upgrade {
			// Upgrades one at a time against the budget: the count and the write must not
			// interleave with another worker's.
			r.mu.Lock()
			defer r.mu.Unlock()
			unavailable, budget, err := r.budget(ctx)
			if err != nil {
				return ctrl.Result{}, err
			}
			if unavailable >= budget {
				ctrl.LoggerFrom(ctx).V(1).Info("Agent upgrade waits: the fleet's agent rollout budget is used",
					"bundle", b.Name, "notReady", unavailable, "maxUnavailable", budget)
				r.tellWaiting(c, resources, unavailable, budget)
				waits = true
				return ctrl.Result{RequeueAfter: budgetRetry}, nil
			}
		}
	}
	before := b.ResourceVersion
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, b, func() error {
		if b.Labels == nil {
			b.Labels = map[string]string{}
		}
		b.Labels[fleetv1alpha1.ClusterLabel] = c.Name
		b.Labels[fleetv1alpha1.ManagedLabel] = "true"
		// An operator's pause (hold this cluster's agent at its version while drover is upgraded)
		// and redeploy are theirs: rewriting the spec must not undo them.
		paused, redeploys := b.Spec.Rollout.Paused, b.Spec.ForceSyncGeneration
		b.Spec = fleetv1alpha1.BundleSpec{
			Rollout:             fleetv1alpha1.BundleRollout{Paused: paused},
			ForceSyncGeneration: redeploys,
			Resources:           resources,
			Targets:             []fleetv1alpha1.BundleTarget{{ClusterName: c.Name}},
			// The importer applied the same fields with its own field manager.
			ForceConflicts: true,
			CorrectDrift:   true,
			// Deleting the Bundle (the Cluster is going away) must not make the agent delete itself.
			KeepResources: true,
		}
		return controllerutil.SetControllerReference(c, b, r.Client.Scheme())
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("write agent bundle: %w", err)
	}
	if op != controllerutil.OperationResultNone {
		ctrl.LoggerFrom(ctx).Info("Agent bundle written", "bundle", b.Name, "operation", op)
		if upgrade && op == controllerutil.OperationResultUpdated && before != "" {
			if r.written == nil {
				r.written = map[client.ObjectKey]string{}
			}
			r.written[client.ObjectKeyFromObject(b)] = b.ResourceVersion
			r.counted.unavailable++ // this upgrade, in the count reused until budgetMemo is up
		}
	}
	return ctrl.Result{}, nil
}

// tellWaiting records, once per cluster and upgrade, that c's agent upgrade waits.
func (r *Reconciler) tellWaiting(c *fleetv1alpha1.Cluster, resources []runtime.RawExtension, unavailable, budget int) {
	if r.Recorder == nil {
		return
	}
	b, _ := json.Marshal(resources)
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:8])
	key := client.ObjectKeyFromObject(c)
	if r.told[key] == hash {
		return
	}
	if r.told == nil {
		r.told = map[client.ObjectKey]string{}
	}
	r.told[key] = hash
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, fleetv1alpha1.EventAgentUpgradeWaiting, "AgentUpgrade",
		"The agent upgrade waits: %d agents are being upgraded or not ready, and --agent-rollout-max-unavailable allows %d at once; "+
			"it goes ahead as they become ready (not-ready agent Bundles: drover bundle list -A -l %s=true)", unavailable, budget, fleetv1alpha1.ManagedLabel)
}

// budget counts the agent Bundles not ready now and returns MaxUnavailable scaled to the
// agent Bundles that count (connected clusters, not paused). A count younger than budgetMemo
// is reused (the upgrades written since are counted in it).
func (r *Reconciler) budget(ctx context.Context) (unavailable, budget int, err error) {
	if time.Since(r.counted.at) < budgetMemo {
		return r.counted.unavailable, r.counted.budget, nil
	}
	unavailable, budget, err = r.count(ctx)
	if err == nil {
		r.counted.at, r.counted.unavailable, r.counted.budget = time.Now(), unavailable, budget
	}
	return unavailable, budget, err
}

// count counts the fleet's agent Bundles (see budget), reading the cache without copies.
func (r *Reconciler) count(ctx context.Context) (unavailable, budget int, err error) {
	var bundles fleetv1alpha1.BundleList
	if err := r.Client.List(ctx, &bundles, client.HasLabels{fleetv1alpha1.ClusterLabel}, client.MatchingLabels{fleetv1alpha1.ManagedLabel: "true"},
		client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, fmt.Errorf("list agent bundles: %w", err)
	}
	var clusters fleetv1alpha1.ClusterList
	if err := r.Client.List(ctx, &clusters, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, fmt.Errorf("list clusters: %w", err)
	}
	byKey := make(map[client.ObjectKey]*fleetv1alpha1.Cluster, len(clusters.Items))
	for i := range clusters.Items {
		byKey[client.ObjectKeyFromObject(&clusters.Items[i])] = &clusters.Items[i]
	}
	total := 0
	seen := map[client.ObjectKey]bool{}
	for i := range bundles.Items {
		b := &bundles.Items[i]
		key := client.ObjectKeyFromObject(b)
		seen[key] = true
		if b.Name != BundleName(b.Labels[fleetv1alpha1.ClusterLabel]) || b.Spec.Rollout.Paused {
			continue
		}
		c := byKey[client.ObjectKey{Namespace: b.Namespace, Name: b.Labels[fleetv1alpha1.ClusterLabel]}]
		if c == nil || disconnected(c) {
			continue
		}
		total++
		ready := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
		switch rv, ok := r.written[key]; {
		case ok && rv == b.ResourceVersion:
			unavailable++ // the cache does not show what the bundle controller made of the upgrade yet
		case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != b.Generation:
			unavailable++
		}
		if rv, ok := r.written[key]; ok && rv != b.ResourceVersion {
			delete(r.written, key)
		}
	}
	for key := range r.written {
		if !seen[key] {
			delete(r.written, key)
		}
	}
	budget, err = intstr.GetScaledValueFromIntOrPercent(r.MaxUnavailable, total, true)
	if err != nil {
		return 0, 0, fmt.Errorf("agent rollout budget: %w", err)
	}
	return unavailable, max(budget, 1), nil
}

// disconnected is bundle.Disconnected (which imports this package).
func disconnected(c *fleetv1alpha1.Cluster) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	return cond != nil && cond.Reason == fleetv1alpha1.ReasonAgentDisconnected
}

// AgentNamespace is the downstream namespace of c's agent.
func AgentNamespace(c *fleetv1alpha1.Cluster) string {
	switch {
	case c.Spec.AgentNamespace != "":
		return c.Spec.AgentNamespace
	case c.Status.Agent.Namespace != "":
		return c.Status.Agent.Namespace
	}
	return manifests.DefaultNamespace
}

// Resources are the manifests of c's agent Bundle; defaultImage is used when c sets no image.
// An agent-initiated cluster without spec.agentRBAC keeps the RBAC it was installed with
// (the Helm chart's rbac values may have narrowed it): the Bundle then carries no RBAC
// objects, so it never widens the agent's rights.
func Resources(c *fleetv1alpha1.Cluster, defaultImage string) ([]runtime.RawExtension, error) {
	keepInstalledRBAC := c.Spec.KubeConfigSecret == "" && c.Spec.AgentRBAC == nil
	o := manifests.ForCluster(c)
	o.Namespace = AgentNamespace(c)
	if o.Image == "" {
		o.Image = defaultImage
	}
	objs, err := manifests.Objects(o)
	if err != nil {
		return nil, err
	}
	var out []runtime.RawExtension
	for _, u := range objs {
		switch u.GetKind() {
		case "Secret", "ConfigMap":
			continue
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if keepInstalledRBAC {
				continue
			}
		case "Deployment":
			unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "annotations")
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		out = append(out, runtime.RawExtension{Raw: b})
	}
	return out, nil
}
