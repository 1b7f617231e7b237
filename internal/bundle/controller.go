package bundle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle/content"
	"github.com/droverhq/drover/internal/metrics"
	"github.com/droverhq/drover/internal/text"
)

// Finalizer keeps a Bundle until its BundleDeployments and unused contents are deleted: they
// live in other namespaces, so owner references cannot clean them up, and a Bundle deleted
// while drover is down would otherwise leave them behind.
const Finalizer = "fleet.drover.io/bundle"

// bundleIndex indexes BundleDeployments by "<bundle namespace>/<bundle name>".
const bundleIndex = "bundle"

// Reconciler keeps a Bundle's BundleDeployments and status.
type Reconciler struct {
	Client client.Client
	// Workers is the number of concurrent BundleDeployment writes per Bundle (default 32).
	Workers int
	// Concurrency is the number of Bundles reconciled at once (default 8).
	Concurrency int
	// Recorder, when set, records Events on Bundles: RolloutHalted, ResourcesNotReady,
	// DriftCorrected (names and states only, never a resource's values).
	Recorder events.EventRecorder
	// NotReadyGrace is how long a cluster's workloads may stay not ready (a rollout in
	// progress) before a ResourcesNotReady Event is recorded (default 2m).
	NotReadyGrace time.Duration
	// now is the clock (time.Now unless a test sets it).
	now func() time.Time

	// corrections holds, per BundleDeployment UID, the last drift correction announced; started
	// is when this controller started (corrections before it are not announced again).
	corrections sync.Map
	started     time.Time
	// pending holds this controller's BundleDeployment updates the cache may not show yet.
	pending pendingWrites
	// notReady holds, per BundleDeployment UID, the not-ready spell (its Ready condition's
	// transition time) already announced.
	notReady sync.Map
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Workers == 0 {
		r.Workers = 32
	}
	if r.Concurrency == 0 {
		r.Concurrency = 8
	}
	if r.NotReadyGrace == 0 {
		r.NotReadyGrace = 2 * time.Minute
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.started = r.now()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &fleetv1alpha1.BundleDeployment{}, bundleIndex, func(o client.Object) []string {
		if k := bundleKey(o); k != "" {
			return []string{k}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index BundleDeployments by bundle: %w", err)
	}
	if err := indexDependencies(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("bundle").
		For(&fleetv1alpha1.Bundle{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Concurrency}).
		Watches(&fleetv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.bundlesOfCluster), builder.WithPredicates(clusterTargetingChanged)).
		Watches(&fleetv1alpha1.BundleDeployment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if o.GetLabels()[BundleNameLabel] == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetLabels()[BundleNamespaceLabel], Name: o.GetLabels()[BundleNameLabel]}}}
		})).
		// Bundles waiting for another (spec.dependsOn) look again when it or its
		// BundleDeployments change.
		Watches(&fleetv1alpha1.BundleDeployment{}, handler.EnqueueRequestsFromMapFunc(r.dependentsOfDeployment)).
		Watches(&fleetv1alpha1.Bundle{}, handler.EnqueueRequestsFromMapFunc(r.dependentsOfBundle)).
		// A BundleDeployment deleted before the cache showed its creation is created again by
		// the next pass, not held as pending.
		Watches(&fleetv1alpha1.BundleDeployment{}, handler.Funcs{DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.pending.deleted(e.Object.GetNamespace(), e.Object.GetName())
		}}).
		Complete(r)
}

func bundleKey(o client.Object) string {
	l := o.GetLabels()
	if l[BundleNameLabel] == "" {
		return ""
	}
	return l[BundleNamespaceLabel] + "/" + l[BundleNameLabel]
}

// clusterTargetingChanged passes the Cluster events that can change which Bundles target it or
// what it gets (its agent's features, its template values): not heartbeats.
var clusterTargetingChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*fleetv1alpha1.Cluster), e.ObjectNew.(*fleetv1alpha1.Cluster)
		return !labels.Equals(o.Labels, n.Labels) || o.Status.Namespace != n.Status.Namespace ||
			o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() || o.UID != n.UID ||
			Disconnected(o) != Disconnected(n) || !slices.Equal(o.Status.Agent.ReportedFeatures(), n.Status.Agent.ReportedFeatures()) ||
			!equality.Semantic.DeepEqual(o.Spec.TemplateValues, n.Spec.TemplateValues)
	},
}

func (r *Reconciler) bundlesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1alpha1.BundleList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		// Bundles aimed at other clusters by name only (such as every other cluster's agent
		// Bundle) cannot change: skipping them keeps a cluster event O(bundles it concerns).
		if names := byNameOnly(&b); names != nil && !slices.Contains(names, o.GetName()) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
	}
	return reqs
}

// byNameOnly returns the cluster names b targets if every target is by name only, else nil.
func byNameOnly(b *fleetv1alpha1.Bundle) []string {
	if len(b.Spec.Targets) == 0 {
		return nil
	}
	var names []string
	for _, t := range b.Spec.Targets {
		if t.ClusterName == "" || t.ClusterSelector != nil {
			return nil
		}
		names = append(names, t.ClusterName)
	}
	return names
}

// candidates are the Clusters b may target: the named ones, or all of the namespace.
func (r *Reconciler) candidates(ctx context.Context, b *fleetv1alpha1.Bundle) ([]fleetv1alpha1.Cluster, error) {
	if names := byNameOnly(b); names != nil {
		var out []fleetv1alpha1.Cluster
		for _, n := range names {
			c := fleetv1alpha1.Cluster{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: n}, &c); client.IgnoreNotFound(err) != nil {
				return nil, err
			} else if err == nil {
				out = append(out, c)
			}
		}
		return out, nil
	}
	// Read only (a pass never writes a Cluster): the cache's own objects, not a deep copy of
	// every Cluster of the workspace per pass (at 1,000 clusters, 8 concurrent passes held
	// ~18 MB of copies at the heap's peak).
	var list fleetv1alpha1.ClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(b.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Targets reports whether b targets c.
func Targets(b *fleetv1alpha1.Bundle, c *fleetv1alpha1.Cluster) (bool, error) {
	in, err := matchAny(b.Spec.Targets, c)
	if err != nil || !in {
		return false, err
	}
	out, err := matchAny(b.Spec.Exclude, c)
	return !out, err
}

func matchAny(ts []fleetv1alpha1.BundleTarget, c *fleetv1alpha1.Cluster) (bool, error) {
	for _, t := range ts {
		if t.ClusterName == "" && t.ClusterSelector == nil {
			continue
		}
		if t.ClusterName != "" && t.ClusterName != c.Name {
			continue
		}
		if t.ClusterSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(t.ClusterSelector)
			if err != nil {
				return false, fmt.Errorf("invalid clusterSelector: %w", err)
			}
			if !sel.Matches(labels.Set(c.Labels)) {
				continue
			}
		}
		return true, nil
	}
	return false, nil
}

// Bundles, their BundleDeployments and content-addressed BundleContents, targeting Clusters.
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundles,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundles/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundledeployments;bundlecontents,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile makes the BundleDeployments match the Bundle and the targeted clusters.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &fleetv1alpha1.Bundle{}
	var existing fleetv1alpha1.BundleDeploymentList
	if err := r.Client.List(ctx, &existing, client.MatchingFields{bundleIndex: req.Namespace + "/" + req.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil || !b.DeletionTimestamp.IsZero() {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.finalize(ctx, req, b, existing.Items)
	}
	if !controllerutil.ContainsFinalizer(b, Finalizer) {
		patch := client.MergeFrom(b.DeepCopy())
		controllerutil.AddFinalizer(b, Finalizer)
		if err := r.Client.Patch(ctx, b, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}
	p := &pass{r: r, b: b, before: b.DeepCopy(), existing: existing.Items}
	if err := p.target(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if err := p.plan(); err != nil {
		return ctrl.Result{}, err
	}
	if err := p.write(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if err := p.writeStatus(ctx); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	recheck := r.record(b, p.before, p.bds)
	recheck = sooner(recheck, p.recheck)
	for _, bd := range p.remove {
		r.forget(bd.UID)
	}
	// Contents this Bundle stopped using go when no other Bundle lists them.
	var released []string
	for _, c := range p.before.Status.Contents {
		if !slices.Contains(b.Status.Contents, c) {
			released = append(released, c)
		}
	}
	return ctrl.Result{RequeueAfter: recheck}, content.DeleteUnused(ctx, r.Client, b.Namespace, b.Name, released)
}

// forget drops what the controller remembers of a deleted BundleDeployment.
func (r *Reconciler) forget(uid types.UID) {
	r.corrections.Delete(uid)
	r.notReady.Delete(uid)
	r.pending.forget(uid)
}

// finalize deletes the BundleDeployments of a Bundle that is gone or being deleted (they live
// in other namespaces, so no owner GC), and the contents they referenced unless another Bundle
// uses them, then removes the finalizer.
func (r *Reconciler) finalize(ctx context.Context, req ctrl.Request, b *fleetv1alpha1.Bundle, existing []fleetv1alpha1.BundleDeployment) error {
	if err := r.each(ctx, r.eachPtr(existing), func(ctx context.Context, bd *fleetv1alpha1.BundleDeployment) error {
		return client.IgnoreNotFound(r.Client.Delete(ctx, bd))
	}); err != nil {
		return err
	}
	for _, bd := range existing {
		r.forget(bd.UID)
	}
	var unused []string
	for _, bd := range existing {
		if ref := bd.Spec.Content; ref != nil && ref.Namespace == req.Namespace && !slices.Contains(unused, ref.Name) {
			unused = append(unused, ref.Name)
		}
	}
	if err := content.DeleteUnused(ctx, r.Client, req.Namespace, req.Name, unused); err != nil {
		return err
	}
	if err := content.DeleteSlots(ctx, r.Client, req.Namespace, req.Name); err != nil {
		return err
	}
	metrics.Bundles.Delete(req.String())
	metrics.BundleDeployments.Delete(req.String())
	if b.Name != "" && controllerutil.ContainsFinalizer(b, Finalizer) {
		patch := client.MergeFrom(b.DeepCopy())
		controllerutil.RemoveFinalizer(b, Finalizer)
		if err := r.Client.Patch(ctx, b, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("remove finalizer: %w", err)
		}
	}
	return nil
}

// pass is one reconcile of a Bundle, in phases: target (which clusters get which version),
// plan (what to create, update within the rollout budget, and delete), write, writeStatus.
type pass struct {
	r         *Reconciler
	b, before *fleetv1alpha1.Bundle
	existing  []fleetv1alpha1.BundleDeployment

	// target
	def      *want
	targeted map[string]*fleetv1alpha1.Cluster // by cluster namespace
	wants    map[string]*want                  // by cluster namespace
	custom   []fleetv1alpha1.CustomizationStatus
	// addressed: the versions of clusters whose agent reads no content slots.
	addressed addressing
	heldDeps  map[string]string // cluster namespace → why a dependency holds it
	// heldTemplate: cluster namespace → why the Helm values template does not render for it;
	// heldAgent: why its agent cannot be given this version. Such a cluster keeps what it runs.
	heldTemplate, heldAgent map[string]string

	// plan
	create, update, remove, outdated []*fleetv1alpha1.BundleDeployment
	have                             map[string]bool // cluster namespaces with a BundleDeployment
	held                             int             // disconnected clusters not updated

	// writeStatus: the BundleDeployments as they are after this pass's writes, and when to look
	// again for one whose grace (Reconciler.NotReadyGrace) is still running.
	bds     []*fleetv1alpha1.BundleDeployment
	recheck time.Duration
}

// wantID is the deployment ID the cluster of bd must have.
func (p *pass) wantID(bd *fleetv1alpha1.BundleDeployment) string {
	if w := p.wants[bd.Namespace]; w != nil {
		return w.spec.DeploymentID
	}
	return p.def.spec.DeploymentID
}

// target stores the Bundle's content (and its customizations') and finds the clusters it
// targets, what each gets, and which a dependency holds.
func (p *pass) target(ctx context.Context) error {
	// Slots BundleDeployments may reference are not overwritten: those the cached ones do and
	// those the last status listed (a cache that has not seen the last pass's writes yet).
	used := map[string]bool{}
	for _, n := range p.before.Status.Contents {
		used[n] = true
	}
	for i := range p.existing {
		if ref := p.existing[i].Spec.Content; ref != nil && ref.Namespace == p.b.Namespace {
			used[ref.Name] = true
		}
	}
	inUse := func(n string) bool { return used[n] }
	var err error
	if p.def, err = p.r.variant(ctx, p.b, nil, inUse); err != nil {
		return err
	}
	clusters, err := p.r.candidates(ctx, p.b)
	if err != nil {
		return err
	}
	p.targeted = map[string]*fleetv1alpha1.Cluster{}
	for i := range clusters {
		c := &clusters[i]
		if c.Status.Namespace == "" || !c.DeletionTimestamp.IsZero() {
			continue
		}
		ok, err := Targets(p.b, c)
		if err != nil {
			return reconcile.TerminalError(err)
		}
		if ok {
			p.targeted[c.Status.Namespace] = c
		}
	}
	// What each targeted cluster gets: the Bundle's own version, or its first matching target
	// customization's.
	if p.wants, p.custom, p.heldTemplate, p.heldAgent, err = p.r.wanted(ctx, p.b, p.def, p.targeted, inUse); err != nil {
		return err
	}
	for ns, c := range p.targeted {
		if !c.Status.Agent.HasFeature(fleetv1alpha1.AgentFeatureContentSlots) {
			if p.wants[ns], err = p.addressed.of(ctx, p.r.Client, p.b, p.wants[ns]); err != nil {
				return err
			}
		}
	}
	// Clusters on which a dependency is not ready get no new BundleDeployment and no update.
	p.heldDeps, err = p.r.heldByDependencies(ctx, p.b, p.targeted)
	return err
}

// isHeld tells whether the cluster of namespace ns keeps what it runs: a dependency, its values
// template or its agent holds it.
func (p *pass) isHeld(ns string) bool {
	return p.heldDeps[ns] != "" || p.heldTemplate[ns] != "" || p.heldAgent[ns] != ""
}

// plan decides the creates, the deletes and, within the rollout's budget, the updates.
func (p *pass) plan() error {
	b := p.b
	p.have = map[string]bool{}
	unavailable := 0
	limited := b.Spec.Rollout.MaxUnavailable != nil && !b.Spec.Rollout.Paused
	for i := range p.existing {
		bd := &p.existing[i]
		c := p.targeted[bd.Namespace]
		if c == nil || bd.Labels[fleetv1alpha1.ClusterUIDLabel] != string(c.UID) {
			p.remove = append(p.remove, bd)
			continue
		}
		p.have[bd.Namespace] = true
		w := p.wants[bd.Namespace]
		current := equality.Semantic.DeepEqual(bd.Spec, w.spec) && bd.Labels[CustomizationLabel] == w.name
		if current {
			// Already at the version wanted: a dependency not ready now holds nothing here, so
			// it is not reported as held (dependsOn gates deployments, not readiness).
			delete(p.heldDeps, bd.Namespace)
		}
		if limited && Disconnected(c) {
			// A cluster whose agent is disconnected neither counts against maxUnavailable nor
			// is updated: the rollout goes on over the connected clusters, and this one is
			// updated within the budget once its agent is back (docs/registration.md).
			if !current {
				p.held++
			}
			continue
		}
		if !readyAt(bd, bd.Spec.DeploymentID) {
			unavailable++
		}
		stale := p.r.pending.stale(bd) // updated by an earlier pass, which the cache does not show yet
		if !current && !p.isHeld(bd.Namespace) && !stale {
			p.outdated = append(p.outdated, bd)
		}
	}
	for ns, c := range p.targeted {
		// Created by an earlier pass, which the cache does not show yet: not created again.
		if !p.r.pending.creating(ns, b.Name, p.have[ns]) && !p.have[ns] && !p.isHeld(ns) {
			w := p.wants[ns]
			l := bdLabels(b, c)
			if w.name != "" {
				l[CustomizationLabel] = w.name
			}
			p.create = append(p.create, &fleetv1alpha1.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Name, Labels: l},
				Spec:       *w.spec.DeepCopy(),
			})
		}
	}
	// Rollout: updates of existing BundleDeployments are held while paused, and limited so that
	// at most maxUnavailable clusters are updating or not ready at once. Ready ones go first.
	budget := len(p.outdated)
	if b.Spec.Rollout.Paused {
		budget = 0
	} else if mu := b.Spec.Rollout.MaxUnavailable; mu != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(mu, len(p.targeted), false)
		if err != nil {
			return reconcile.TerminalError(fmt.Errorf("maxUnavailable: %w", err))
		}
		budget = max(n, 1) - unavailable
		// Clusters already not ready do not make things worse by being updated.
		for _, bd := range p.outdated {
			if !readyAt(bd, bd.Spec.DeploymentID) {
				budget++
			}
		}
	}
	sort.SliceStable(p.outdated, func(i, j int) bool {
		return !readyAt(p.outdated[i], p.outdated[i].Spec.DeploymentID) && readyAt(p.outdated[j], p.outdated[j].Spec.DeploymentID)
	})
	for _, bd := range p.outdated {
		if budget <= 0 {
			break
		}
		budget--
		w := p.wants[bd.Namespace]
		bd.Spec = *w.spec.DeepCopy()
		if bd.Labels == nil {
			bd.Labels = map[string]string{}
		}
		if w.name != "" {
			bd.Labels[CustomizationLabel] = w.name
		} else {
			delete(bd.Labels, CustomizationLabel)
		}
		setRepoLabel(bd.Labels, b)
		p.update = append(p.update, bd)
	}
	return nil
}

// write makes the planned creates, updates and deletes, Workers at a time, and remembers them
// until the cache shows them.
func (p *pass) write(ctx context.Context) error {
	r := p.r
	if len(p.create)+len(p.update)+len(p.remove) > 0 {
		ctrl.LoggerFrom(ctx).Info("Syncing BundleDeployments", "create", len(p.create), "update", len(p.update), "delete", len(p.remove),
			"heldDisconnected", p.held, "heldDependencies", len(p.heldDeps))
	}
	return errors.Join(
		r.each(ctx, p.create, func(ctx context.Context, bd *fleetv1alpha1.BundleDeployment) error {
			if err := r.Client.Create(ctx, bd, client.FieldOwner(FieldOwner)); client.IgnoreAlreadyExists(err) != nil {
				return err
			}
			r.pending.wroteCreate(bd.Namespace, bd.Name)
			return nil
		}),
		r.each(ctx, p.update, func(ctx context.Context, bd *fleetv1alpha1.BundleDeployment) error {
			from := bd.ResourceVersion
			if err := r.Client.Update(ctx, bd, client.FieldOwner(FieldOwner)); err != nil {
				return err
			}
			r.pending.wrote(bd.UID, from)
			return nil
		}),
		r.each(ctx, p.remove, func(ctx context.Context, bd *fleetv1alpha1.BundleDeployment) error {
			return client.IgnoreNotFound(r.Client.Delete(ctx, bd))
		}),
	)
}

// writeStatus sets the Bundle's status from what the BundleDeployments were before this pass's
// writes plus those writes, and patches it when it changed.
func (p *pass) writeStatus(ctx context.Context) error {
	b := p.b
	for i := range p.existing {
		if !slices.Contains(p.remove, &p.existing[i]) {
			p.bds = append(p.bds, &p.existing[i])
		}
	}
	p.bds = append(p.bds, p.create...)
	b.Status.ObservedGeneration, b.Status.Content, b.Status.DeploymentID = b.Generation, p.def.spec.Content.Name, p.def.spec.DeploymentID
	b.Status.Customizations = p.custom
	b.Status.Summary = summarize(p.bds, p.wantID, len(p.targeted))
	explainPending(&b.Status.Summary, p.targeted)
	readyCond(b)
	var n int
	n, p.recheck = p.r.stalled(p.bds, p.wantID)
	if n > 0 {
		stalledCond(b, n, p.r.grace())
	}
	halted := !b.Spec.Rollout.Paused && len(p.outdated) > len(p.update) && len(p.update) == 0 && failedAt(p.bds, p.wantID) > 0
	if halted {
		s := b.Status.Summary
		meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: fleetv1alpha1.EventRolloutHalted, ObservedGeneration: b.Generation, Message: fmt.Sprintf(
				"Rollout halted: %d clusters held at the previous version because %d clusters failed to apply this one and maxUnavailable is reached; "+
					"fix the Bundle (see status.summary.nonReadyClusters) or raise rollout.maxUnavailable", len(p.outdated)-len(p.update), s.ErrApplied)})
	}
	holdStatus(b, p.heldDeps, p.targeted, p.have)
	templateStatus(b, p.heldTemplate, p.targeted, p.have)
	agentStatus(b, p.heldAgent, p.targeted, p.have)
	b.Status.Contents = []string{p.def.spec.Content.Name}
	names := slices.Clone(p.addressed.stored)
	for _, c := range p.custom {
		names = append(names, c.Content)
	}
	for _, n := range names {
		if !slices.Contains(b.Status.Contents, n) {
			b.Status.Contents = append(b.Status.Contents, n)
		}
	}
	for _, bd := range p.bds {
		if ref := bd.Spec.Content; ref != nil && ref.Namespace == b.Namespace && !slices.Contains(b.Status.Contents, ref.Name) {
			b.Status.Contents = append(b.Status.Contents, ref.Name)
		}
	}
	if equality.Semantic.DeepEqual(p.before.Status, b.Status) {
		return nil
	}
	return p.r.Client.Status().Patch(ctx, b, client.MergeFrom(p.before))
}

func bdLabels(b *fleetv1alpha1.Bundle, c *fleetv1alpha1.Cluster) map[string]string {
	l := map[string]string{
		BundleNameLabel: b.Name, BundleNamespaceLabel: b.Namespace,
		fleetv1alpha1.ClusterLabel: c.Name, fleetv1alpha1.ClusterNamespaceLabel: c.Namespace,
		fleetv1alpha1.ClusterUIDLabel: string(c.UID), fleetv1alpha1.ManagedLabel: "true",
	}
	setRepoLabel(l, b)
	return l
}

// setRepoLabel copies the Bundle's GitRepo label, so a GitRepo's BundleDeployments can be
// selected across cluster namespaces (kubectl get bd -A -l fleet.drover.io/gitrepo-name=NAME).
// It is set with writes the controller makes anyway, never with a write of its own.
func setRepoLabel(l map[string]string, b *fleetv1alpha1.Bundle) {
	if repo := b.Labels[fleetv1alpha1.GitRepoNameLabel]; repo != "" {
		l[fleetv1alpha1.GitRepoNameLabel] = repo
	} else {
		delete(l, fleetv1alpha1.GitRepoNameLabel)
	}
}

// each runs f for every BundleDeployment, r.Workers at a time.
func (r *Reconciler) each(ctx context.Context, bds []*fleetv1alpha1.BundleDeployment, f func(context.Context, *fleetv1alpha1.BundleDeployment) error) error {
	if len(bds) == 0 {
		return nil
	}
	var g errgroup.Group
	g.SetLimit(r.Workers)
	for _, bd := range bds {
		g.Go(func() error { return f(ctx, bd) })
	}
	return g.Wait()
}

func (r *Reconciler) eachPtr(items []fleetv1alpha1.BundleDeployment) []*fleetv1alpha1.BundleDeployment {
	out := make([]*fleetv1alpha1.BundleDeployment, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// want is what a targeted cluster's BundleDeployment must be.
type want struct {
	// name is the target customization's ("" for the Bundle's own version).
	name string
	spec fleetv1alpha1.BundleDeploymentSpec
	// The content, for storing it content-addressed too (agents without content slots).
	resources []runtime.RawExtension
	helm      *fleetv1alpha1.BundleHelm
}

// variant stores the content of b's version for the clusters of customization tc (nil: the
// Bundle's own) in one of its content slots, never one inUse, and returns their
// BundleDeployment spec.
func (r *Reconciler) variant(ctx context.Context, b *fleetv1alpha1.Bundle, tc *fleetv1alpha1.BundleTargetCustomization, inUse func(string) bool) (*want, error) {
	resources, helm, opts := Variant(&b.Spec, tc)
	w := &want{resources: resources, helm: helm}
	if tc != nil {
		w.name = tc.Name
	}
	slot, sum, err := content.StoreSlot(ctx, r.Client, b, w.name, resources, helm, inUse)
	if err != nil {
		return nil, err
	}
	w.spec = fleetv1alpha1.BundleDeploymentSpec{
		Options: opts,
		Content: &fleetv1alpha1.ContentReference{Namespace: b.Namespace, Name: slot, SHA256: sum},
	}
	// The content's address, wherever it is stored: the same version has the same ID.
	w.spec.DeploymentID = "s-" + sum[:12] + ":" + shortHash(w.spec.Options)
	return w, nil
}

// addressing gives clusters whose agent does not check a content slot's sha256
// (fleetv1alpha1.AgentFeatureContentSlots) their version with its content stored
// content-addressed (immutable): such an agent keeps what it read by name and would apply an
// older version from a reused slot.
type addressing struct {
	refs   map[string]*fleetv1alpha1.ContentReference // slot@sha256 → content-addressed
	wants  map[*want]*want
	stored []string // the content-addressed names used
}

// of returns w as such a cluster gets it.
func (a *addressing) of(ctx context.Context, c client.Client, b *fleetv1alpha1.Bundle, w *want) (*want, error) {
	if out := a.wants[w]; out != nil {
		return out, nil
	}
	key := w.spec.Content.Name + "@" + w.spec.Content.SHA256
	ref := a.refs[key]
	if ref == nil {
		name, err := content.Store(ctx, c, b.Namespace, w.resources, w.helm)
		if err != nil {
			return nil, err
		}
		if a.refs == nil {
			a.refs, a.wants = map[string]*fleetv1alpha1.ContentReference{}, map[*want]*want{}
		}
		ref = &fleetv1alpha1.ContentReference{Namespace: b.Namespace, Name: name}
		a.refs[key], a.stored = ref, append(a.stored, name)
	}
	out := &want{name: w.name, spec: *w.spec.DeepCopy(), resources: w.resources, helm: w.helm}
	out.spec.Content = ref.DeepCopy()
	a.wants[w] = out
	return out, nil
}

// wanted returns, by cluster namespace, what each targeted cluster gets: def, or the version
// of the first target customization it matches (whose content is stored once, however many
// clusters use it), with the Helm values rendered for it when they are a template; the status
// of the customizations in use, in spec order; the clusters whose values do not render, and
// those whose agent would install the template itself (both keep what they run), with why.
func (r *Reconciler) wanted(ctx context.Context, b *fleetv1alpha1.Bundle, def *want, targeted map[string]*fleetv1alpha1.Cluster, inUse func(string) bool) (
	out map[string]*want, status []fleetv1alpha1.CustomizationStatus, failed, oldAgent map[string]string, err error) {
	out = make(map[string]*want, len(targeted))
	templated := b.Spec.Helm != nil && b.Spec.Helm.TemplateValues
	oldAgent = map[string]string{}
	if len(b.Spec.TargetCustomizations) == 0 && !templated {
		for ns, c := range targeted {
			out[ns] = def
			if why := lacksFeatures(c, agentFeatures(b, nil)); why != "" {
				oldAgent[ns] = why
			}
		}
		return out, nil, nil, oldAgent, nil
	}
	byName := map[string]*want{}
	count := map[string]int{}
	failed = map[string]string{}
	for ns, c := range targeted {
		tc, err := Customization(b, c)
		if err != nil {
			return nil, nil, nil, nil, reconcile.TerminalError(err)
		}
		w := def
		if tc != nil {
			if w = byName[tc.Name]; w == nil {
				if w, err = r.variant(ctx, b, tc, inUse); err != nil {
					return nil, nil, nil, nil, err
				}
				byName[tc.Name] = w
			}
			count[tc.Name]++
		}
		out[ns] = w
		if why := lacksFeatures(c, agentFeatures(b, tc)); why != "" {
			oldAgent[ns] = why // its values are not rendered: it gets nothing new
			continue
		}
		if !templated {
			continue
		}
		_, _, _, values, err := ClusterVariant(&b.Spec, tc, c)
		if err != nil {
			failed[ns] = err.Error()
			continue
		}
		// The content (chart and template) is shared; the rendered values go in the
		// cluster's own BundleDeployment.
		own := &want{name: w.name, spec: *w.spec.DeepCopy(), resources: w.resources, helm: w.helm}
		own.spec.Options.HelmValues = values
		own.spec.DeploymentID = templatedID(w.spec.DeploymentID, values)
		out[ns] = own
	}
	for _, tc := range b.Spec.TargetCustomizations {
		if w := byName[tc.Name]; w != nil {
			status = append(status, fleetv1alpha1.CustomizationStatus{Name: tc.Name, Content: w.spec.Content.Name,
				DeploymentID: w.spec.DeploymentID, Clusters: count[tc.Name]})
		}
	}
	return out, status, failed, oldAgent, nil
}

// agentFeatures are the agent features (fleetv1alpha1.AgentFeature*) the BundleDeployments of
// b's version for customization tc (nil: b's own) need: an agent without one would misread them.
func agentFeatures(b *fleetv1alpha1.Bundle, tc *fleetv1alpha1.BundleTargetCustomization) []string {
	h := b.Spec.Helm
	if h == nil {
		return nil
	}
	var out []string
	if h.TemplateValues {
		out = append(out, fleetv1alpha1.AgentFeatureHelmValues)
	}
	if len(h.ValuesFrom) > 0 || tc != nil && len(tc.HelmValuesFrom) > 0 {
		out = append(out, fleetv1alpha1.AgentFeatureHelmValuesFrom)
	}
	return out
}

// featureRisk says, per agent feature, what it is and what an agent without it would do.
var featureRisk = map[string][2]string{
	fleetv1alpha1.AgentFeatureHelmValues:     {"values templates", "would install the template itself"},
	fleetv1alpha1.AgentFeatureHelmValuesFrom: {"helm.valuesFrom", "would install the release without those values"},
}

// lacksFeatures says why c's agent cannot be given a BundleDeployment that needs features ("":
// it reports them all).
func lacksFeatures(c *fleetv1alpha1.Cluster, features []string) string {
	a := c.Status.Agent
	for _, f := range features {
		if a.HasFeature(f) {
			continue
		}
		what, risk := featureRisk[f][0], featureRisk[f][1]
		switch {
		case a.LastSeen == nil:
			return "waiting for the agent to check in and report that it reads " + what
		case a.Version != "":
			return fmt.Sprintf("its agent (%s) is older than %s and %s; upgrade the agent", a.Version, what, risk)
		}
		return fmt.Sprintf("its agent is older than %s and %s; upgrade the agent", what, risk)
	}
	return ""
}

// failedAt counts the BundleDeployments that failed to apply the deployment ID they should
// have (id).
func failedAt(bds []*fleetv1alpha1.BundleDeployment, id func(*fleetv1alpha1.BundleDeployment) string) int {
	n := 0
	for _, bd := range bds {
		applied := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
		if bd.Spec.DeploymentID == id(bd) && applied != nil && applied.Status == metav1.ConditionFalse && applied.ObservedGeneration == bd.Generation &&
			applied.Reason != fleetv1alpha1.ReasonUnknownKind {
			n++
		}
	}
	return n
}

// record updates b's metrics and records Events for what changed since before: the rollout
// halted, clusters whose resources stayed not ready for NotReadyGrace, drift corrected by
// agents. It returns when to look again for a not-ready spell still within its grace (0: no
// need).
func (r *Reconciler) record(b, before *fleetv1alpha1.Bundle, bds []*fleetv1alpha1.BundleDeployment) time.Duration {
	key := client.ObjectKeyFromObject(b).String()
	s := b.Status.Summary
	ready := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
	state := "not_ready"
	if ready.Status == metav1.ConditionTrue {
		state = "ready"
	}
	metrics.Bundles.Set(key, state, ready.Reason)
	metrics.BundleDeployments.SetCounts(key, map[string]int{"ready": s.Ready, "not_ready": s.NotReady, "pending": s.Pending,
		"modified": s.Modified, "err_applied": s.ErrApplied, "out_of_date": s.OutOfDate})

	event := func(typ, reason, note string, args ...any) {
		metrics.BundleEvents.WithLabelValues(reason).Inc()
		if r.Recorder != nil {
			r.Recorder.Eventf(b, nil, typ, reason, "Rollout", note, args...)
		}
	}
	old := meta.FindStatusCondition(before.Status.Conditions, fleetv1alpha1.ConditionReady)
	if ready.Reason == fleetv1alpha1.EventRolloutHalted && (old == nil || old.Reason != fleetv1alpha1.EventRolloutHalted) {
		event(corev1.EventTypeWarning, fleetv1alpha1.EventRolloutHalted, "%s", ready.Message)
	}
	// Once per spell of failures, naming the first failing cluster.
	if ready.Reason == fleetv1alpha1.ReasonApplyFailed && (old == nil || old.Reason != fleetv1alpha1.ReasonApplyFailed) {
		for _, c := range s.NonReadyClusters {
			if c.State == StateErrApplied {
				event(corev1.EventTypeWarning, fleetv1alpha1.ReasonApplyFailed, "%d of %d clusters failed to apply; cluster %s: %s", s.ErrApplied, s.DesiredReady, c.Name, c.Message)
				break
			}
		}
	}
	// Workloads are not ready for a while during every rollout: a Warning only for those not
	// ready for longer than the grace, once per spell.
	var recheck time.Duration
	byCluster := map[string]*fleetv1alpha1.BundleDeployment{}
	for _, bd := range bds {
		byCluster[bd.Labels[fleetv1alpha1.ClusterLabel]] = bd
	}
	now, grace := r.clock(), r.grace()
	for _, c := range s.NonReadyClusters {
		bd := byCluster[c.Name]
		if bd == nil {
			continue
		}
		since, ok := stalledSince(bd, c.State)
		if !ok {
			continue
		}
		if left := since.Add(grace).Sub(now); left > 0 {
			recheck = sooner(recheck, left)
			continue
		}
		if prev, ok := r.notReady.Load(bd.UID); ok && prev.(time.Time).Equal(since) || since.Add(grace).Before(r.started) {
			continue // announced, or by the controller that ran before this one
		}
		r.notReady.Store(bd.UID, since)
		event(corev1.EventTypeWarning, fleetv1alpha1.EventResourcesNotReady, "Cluster %s: not ready for %s: %s", c.Name,
			duration.HumanDuration(now.Sub(since)), c.Message)
	}
	for _, bd := range bds {
		cond := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionDriftCorrected)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			continue
		}
		at := cond.LastTransitionTime.Time
		last := r.started
		if v, ok := r.corrections.Load(bd.UID); ok {
			last = v.(time.Time)
		}
		if !at.After(last) {
			continue
		}
		r.corrections.Store(bd.UID, at)
		event(corev1.EventTypeNormal, fleetv1alpha1.EventDriftCorrected, "Cluster %s: %s", bd.Labels[fleetv1alpha1.ClusterLabel], cond.Message)
	}
	return recheck
}

func readyAt(bd *fleetv1alpha1.BundleDeployment, id string) bool {
	return bd.Status.AppliedDeploymentID == id && bd.Status.Ready && bd.Status.NonModified
}

func summarize(bds []*fleetv1alpha1.BundleDeployment, id func(*fleetv1alpha1.BundleDeployment) string, desired int) fleetv1alpha1.BundleSummary {
	s := fleetv1alpha1.BundleSummary{DesiredReady: desired}
	sort.Slice(bds, func(i, j int) bool {
		return bds[i].Labels[fleetv1alpha1.ClusterLabel] < bds[j].Labels[fleetv1alpha1.ClusterLabel]
	})
	for _, bd := range bds {
		state, msg := DeploymentState(bd, id(bd))
		switch state {
		case StateOutOfDate:
			s.OutOfDate++
		case StatePending:
			s.Pending++
		case StateErrApplied:
			s.ErrApplied++
		case StateModified:
			s.Modified++
		case StateNotReady:
			s.NotReady++
		default:
			s.Ready++
		}
		if state != StateReady && len(s.NonReadyClusters) < 20 {
			s.NonReadyClusters = append(s.NonReadyClusters, fleetv1alpha1.NonReadyCluster{Name: bd.Labels[fleetv1alpha1.ClusterLabel], State: state, Message: msg})
		}
	}
	return s
}

// States of a BundleDeployment in its Bundle's summary (NonReadyCluster.State).
const (
	StateReady      = ""
	StateOutOfDate  = "OutOfDate"
	StatePending    = "Pending"
	StateErrApplied = "ErrApplied"
	StateModified   = "Modified"
	StateNotReady   = "NotReady"
)

// WantedDeploymentID is the deployment ID of b's current version for the cluster of bd: that
// of the target customization bd was last given, else b's own.
func WantedDeploymentID(b *fleetv1alpha1.Bundle, bd *fleetv1alpha1.BundleDeployment) string {
	id := b.Status.DeploymentID
	if name := bd.Labels[CustomizationLabel]; name != "" {
		for _, c := range b.Status.Customizations {
			if c.Name == name {
				id = c.DeploymentID
			}
		}
	}
	if v := bd.Spec.Options.HelmValues; v != nil && b.Spec.Helm != nil && b.Spec.Helm.TemplateValues {
		// Values rendered for this cluster: taken as current (the controller re-renders them
		// when the cluster's labels change).
		id = templatedID(id, v)
	}
	return id
}

// templatedID is the deployment ID of a version whose Helm values were rendered for one
// cluster: the version's own, and a hash of the values.
func templatedID(id string, values *runtime.RawExtension) string {
	return id + "+" + shortHash(values)
}

// DeploymentState is a BundleDeployment's state against its Bundle's current deployment ID id
// (for that cluster: WantedDeploymentID),
// as the Bundle's summary counts it, with a message saying why it is not ready (never a Secret
// value). StateReady ("") when it applied id and is ready and unmodified.
func DeploymentState(bd *fleetv1alpha1.BundleDeployment, id string) (state, msg string) {
	applied := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
	switch {
	case bd.Spec.DeploymentID != id:
		return StateOutOfDate, ""
	case applied != nil && applied.Reason == fleetv1alpha1.ReasonUnknownKind && applied.ObservedGeneration == bd.Generation:
		// Retried by the agent (a CRD being established): pending, not an error.
		return StatePending, applied.Message
	case applied != nil && applied.Reason == fleetv1alpha1.ReasonContentNotReadable && applied.Status != metav1.ConditionFalse && applied.ObservedGeneration == bd.Generation:
		// The agent waits for the right to read the content (its access Role being updated):
		// pending, not an error, until the agent gives up waiting (Applied=False).
		return StatePending, applied.Message
	case applied != nil && applied.Status == metav1.ConditionFalse && applied.ObservedGeneration == bd.Generation:
		return StateErrApplied, applied.Message
	case bd.Status.AppliedDeploymentID != id:
		return StatePending, ""
	case !bd.Status.NonModified:
		return StateModified, modifiedMessage(bd)
	case !bd.Status.Ready:
		if c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionReady); c != nil {
			msg = c.Message
		}
		return StateNotReady, msg
	}
	return StateReady, ""
}

func modifiedMessage(bd *fleetv1alpha1.BundleDeployment) string {
	var parts []string
	for _, r := range bd.Status.Resources {
		if r.State == "Applied" {
			continue
		}
		msg := r.Message
		if r.Kind == "Secret" && r.APIVersion == "v1" {
			msg = fieldPaths(msg)
		}
		parts = append(parts, fmt.Sprintf("%s %s/%s %s: %s", r.Kind, r.Namespace, r.Name, r.State, msg))
	}
	msg := strings.Join(parts, "; ")
	if len(msg) > 512 {
		msg = msg[:509] + "..."
	}
	return msg
}

// fieldPaths keeps only the field paths of a drift report ("path: want X, have Y; ..."). Agents
// report Secrets by path only; this keeps a Bundle, readable more widely than a cluster's
// BundleDeployments, free of Secret values even if an older agent reported them.
func fieldPaths(msg string) string {
	parts := strings.Split(msg, "; ")
	for i, p := range parts {
		parts[i], _, _ = strings.Cut(p, ": ")
	}
	return strings.Join(parts, "; ")
}

// explainPending gives a cluster waiting without a word from its agent the reason its Cluster
// is not ready (an agent disconnected, or unable to reach its own API server): otherwise
// bundle status and --wait show a bare "Pending".
func explainPending(s *fleetv1alpha1.BundleSummary, targeted map[string]*fleetv1alpha1.Cluster) {
	byName := make(map[string]*fleetv1alpha1.Cluster, len(targeted))
	for _, c := range targeted {
		byName[c.Name] = c
	}
	for i := range s.NonReadyClusters {
		nc := &s.NonReadyClusters[i]
		c := byName[nc.Name]
		if nc.State != StatePending || nc.Message != "" || c == nil {
			continue
		}
		if cond := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady); cond != nil && cond.Status == metav1.ConditionFalse {
			nc.Message = text.Clip(fmt.Sprintf("Cluster not ready (%s): %s", cond.Reason, cond.Message), 512)
		}
	}
}

// grace is how long a cluster's resources may stay not ready (or of a kind not served) before
// the Bundle says so.
func (r *Reconciler) grace() time.Duration {
	if r.NotReadyGrace <= 0 {
		return 2 * time.Minute
	}
	return r.NotReadyGrace
}

// stalledSince is since when bd has been stuck in a state that resolves by itself during a
// rollout: resources applied but not ready, or a kind the cluster does not serve (yet).
func stalledSince(bd *fleetv1alpha1.BundleDeployment, state string) (time.Time, bool) {
	switch state {
	case StateNotReady:
		if c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionReady); c != nil {
			return c.LastTransitionTime.Time, true
		}
	case StatePending:
		if c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied); c != nil && c.Reason == fleetv1alpha1.ReasonUnknownKind {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// stalled counts the BundleDeployments stuck for longer than the grace, and says when to look
// again for one still within it (0: no need).
func (r *Reconciler) stalled(bds []*fleetv1alpha1.BundleDeployment, id func(*fleetv1alpha1.BundleDeployment) string) (int, time.Duration) {
	now, grace := r.clock(), r.grace()
	n, recheck := 0, time.Duration(0)
	for _, bd := range bds {
		state, _ := DeploymentState(bd, id(bd))
		since, ok := stalledSince(bd, state)
		if !ok {
			continue
		}
		if left := since.Add(grace).Sub(now); left > 0 {
			recheck = sooner(recheck, left)
			continue
		}
		n++
	}
	return n, recheck
}

// sooner is the shorter of two requeue delays, 0 meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

func (r *Reconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// stalledCond turns a Pending Ready condition into ResourcesNotReady when n clusters have been
// stuck for longer than grace: not a rollout on its way any more, so drover check lists it.
func stalledCond(b *fleetv1alpha1.Bundle, n int, grace time.Duration) {
	c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
	if c == nil || c.Reason != fleetv1alpha1.ReasonPending {
		return
	}
	c.Reason = fleetv1alpha1.ReasonResourcesNotReady
	c.Message += fmt.Sprintf("; %d not ready (or waiting for a kind the cluster does not serve) for more than %s: drover bundle status %s -n %s shows why", n, duration.HumanDuration(grace), b.Name, b.Namespace)
}

func readyCond(b *fleetv1alpha1.Bundle) {
	s := b.Status.Summary
	c := metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonSucceeded,
		Message: fmt.Sprintf("%d/%d clusters ready", s.Ready, s.DesiredReady), ObservedGeneration: b.Generation}
	if s.Ready != s.DesiredReady {
		c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonPending
		switch {
		case s.ErrApplied > 0:
			c.Reason = fleetv1alpha1.ReasonApplyFailed
		case s.Modified > 0:
			// Drift stays until someone acts: not a rollout on its way.
			c.Reason = fleetv1alpha1.ReasonModified
			c.Message += fmt.Sprintf("; %d modified downstream since drover applied them (drover bundle status %s shows which resources; set spec.correctDrift to have drover undo such changes)", s.Modified, b.Name)
		}
	}
	meta.SetStatusCondition(&b.Status.Conditions, c)
}
