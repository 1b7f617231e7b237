// Package deployer applies the BundleDeployments of the agent's cluster namespace to its own
// cluster with server-side apply, prunes what a new deployment ID dropped, reports status, and
// watches for drift.
//
// For every BundleDeployment it applied, the agent keeps a record downstream (a ConfigMap in its
// own namespace listing the applied resources). The record is the inventory for pruning: when a
// new deployment ID drops a resource, and when the BundleDeployment itself disappears (the
// cluster stopped being targeted), the agent deletes what the record lists.
package deployer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/bundle"
)

// FieldManager is the agent's server-side apply field manager downstream.
const FieldManager = "drover-agent"

// Resource states.
const (
	StateApplied  = "Applied"
	StateFailed   = "Failed"
	StateModified = "Modified"
	StateMissing  = "Missing"
	StateNotReady = "NotReady"
)

// unknownKindRetry is how soon a BundleDeployment holding kinds the cluster does not serve yet
// is applied again.
const unknownKindRetry = 5 * time.Second

// Waiting for a BundleDeployment's content: a read refused (Forbidden) or not found is retried
// with backoff from contentRetryMin to contentRetryMax, for up to defaultContentWait
// (Reconciler.ContentWait) before it is reported as a failure.
const (
	contentRetryMin    = time.Second
	contentRetryMax    = 10 * time.Second
	defaultContentWait = 2 * time.Minute
)

// failedRetry is how soon a BundleDeployment that failed to apply is tried again.
const failedRetry = 30 * time.Second

// notReadyRecheck is how soon a BundleDeployment whose workloads are not ready yet is checked
// again (instead of the drift interval), so readiness is reported promptly.
const notReadyRecheck = 5 * time.Second

// Record labels and keys.
const (
	// RecordLabel marks the agent's downstream records of applied BundleDeployments.
	RecordLabel         = fleetv1alpha1.LabelPrefix + "bundle-deployment-record"
	recordKeyBD         = "bundleDeployment"
	recordKeyResources  = "resources"
	recordKeyKeep       = "keepResources"
	defaultDriftPeriod  = 30 * time.Second
	contentCacheEntries = 64
)

// Reconciler applies BundleDeployments.
type Reconciler struct {
	// Upstream reads BundleDeployments and writes their status (request identity).
	Upstream client.Client
	// ContentReader reads BundleContents (uncached: the request identity may get exactly the
	// contents it is pointed at, it cannot list or watch them). Default Upstream.
	ContentReader client.Reader
	// Downstream applies the manifests to the agent's cluster.
	Downstream client.Client
	// RecordNamespace is the downstream namespace of the records (the agent namespace). Empty:
	// no records; pruning then relies on the BundleDeployment status only.
	RecordNamespace string
	// DeploymentNamespace is the agent's cluster namespace upstream: at start, records of
	// BundleDeployments of this namespace that no longer exist are pruned.
	DeploymentNamespace string
	// DriftInterval is how often applied resources are compared with the manifests (default 30s).
	DriftInterval time.Duration
	// DownstreamConfig is the downstream cluster for Helm's SDK, which installs the releases of
	// Helm Bundles (nil: such BundleDeployments fail).
	DownstreamConfig *rest.Config
	// ContentWait is how long a BundleContent the agent may not read (or does not find) is
	// waited for (Applied=Unknown, reason ContentNotReadable: the cluster's access Role is being
	// updated) before it is reported as a failure (default 2m).
	ContentWait time.Duration
	// AccessRole names the cluster's access Role upstream ("namespace/name"), which grants the
	// reading of its BundleContents, for messages ("" when unknown).
	AccessRole string

	mu      sync.Mutex
	content map[string]*fleetv1alpha1.BundleContent
}

// SetupWithManager registers the controller on the agent's upstream manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Upstream == nil || r.Downstream == nil {
		return errors.New("deployer: Upstream and Downstream are required")
	}
	if r.ContentReader == nil {
		r.ContentReader = r.Upstream
	}
	if r.DriftInterval == 0 {
		r.DriftInterval = defaultDriftPeriod
	}
	if r.RecordNamespace != "" && r.DeploymentNamespace != "" {
		if err := mgr.Add(manager.RunnableFunc(r.sweep)); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("bundledeployment").
		For(&fleetv1alpha1.BundleDeployment{}).
		// Several agents may run in one process (tests, benchmarks).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

type key struct{ apiVersion, kind, namespace, name string }

func keyOf(s fleetv1alpha1.ResourceState) key { return key{s.APIVersion, s.Kind, s.Namespace, s.Name} }

// Reconcile applies one BundleDeployment if its deployment ID is not applied yet, and otherwise
// checks its resources for drift.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bd := &fleetv1alpha1.BundleDeployment{}
	if err := r.Upstream.Get(ctx, req.NamespacedName, bd); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if !bd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("deploymentID", bd.Spec.DeploymentID)
	before := bd.DeepCopy()
	objs, helm, err := r.objects(ctx, bd)
	var unreadable *contentUnreadable
	switch {
	case errors.As(err, &unreadable):
		return r.waitContent(ctx, bd, before, unreadable)
	case err != nil:
		bd.Status.Ready = false
		setCond(bd, fleetv1alpha1.ConditionApplied, false, fleetv1alpha1.ReasonApplyFailed, err.Error())
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, "Manifests not readable")
		if perr := r.patchStatus(ctx, bd, before); perr != nil {
			return ctrl.Result{}, perr
		}
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	if helm != nil {
		return r.reconcileHelm(ctx, bd, before, helm)
	}
	if bd.Status.AppliedDeploymentID == bd.Spec.DeploymentID && meta.IsStatusConditionTrue(bd.Status.Conditions, fleetv1alpha1.ConditionApplied) {
		return r.checkDrift(ctx, bd, before, objs)
	}
	log.Info("Applying BundleDeployment")

	var states []fleetv1alpha1.ResourceState
	want := map[key]bool{}
	var failed error
	var unknown []string // kinds the cluster does not serve (yet)
	force := bd.Spec.Options.ForceConflicts || bd.Spec.Options.CorrectDrift || forcedSync(bd)
	// CRDs and Namespaces first, so that the custom resources and namespaced objects of the
	// same bundle can be resolved and applied in the same pass.
	// A retry after UnknownKind does not wait again: a CRD that never becomes established must
	// not hold the agent's worker on every retry.
	first, rest := splitFoundation(objs)
	applied := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
	retrying := applied != nil && applied.Reason == fleetv1alpha1.ReasonUnknownKind && applied.ObservedGeneration == bd.Generation
	for i, u := range append(first, rest...) {
		if i == len(first) && len(rest) > 0 && !retrying {
			r.waitEstablished(ctx, first)
		}
		if i == len(first) {
			// The namespace the Bundle names for its objects is created if missing, as Fleet
			// does; the Bundle's own Namespace objects came first.
			if err := r.ensureNamespace(ctx, bd.Spec.Options.DefaultNamespace); err != nil {
				failed = errors.Join(failed, err)
			}
		}
		st, err := r.apply(ctx, bd, u, nil, force, false)
		switch {
		case meta.IsNoMatchError(err):
			// The client's REST mapper re-reads discovery on a miss, so a retry sees a kind as
			// soon as the cluster serves it.
			st.State, st.Message = StateNotReady, "kind not served by the cluster yet"
			unknown = append(unknown, u.GroupVersionKind().Kind+"."+u.GroupVersionKind().GroupVersion().String())
		case err != nil:
			failed = errors.Join(failed, err)
		}
		states = append(states, st)
		want[keyOf(st)] = true
	}
	// Prune what the previously applied deployment had and this one dropped. The inventory is
	// the downstream record (or, without one, the status the agent wrote), so only objects the
	// agent applied are ever deleted.
	if failed == nil && len(unknown) == 0 && bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
		old, oldRecord, err := r.readRecord(ctx, client.ObjectKeyFromObject(bd))
		wasHelm := err == nil && oldRecord != nil && oldRecord.Data[recordKeyHelm] != ""
		if wasHelm {
			// It was a Helm release: uninstalling it removes what it made.
			err, old = r.helmUninstall(ctx, oldRecord.Data[recordKeyHelm]), nil
		}
		if err != nil {
			failed = err
		} else if old == nil && !wasHelm {
			for _, s := range bd.Status.Resources {
				if s.State != StateFailed {
					old = append(old, s)
				}
			}
		}
		for _, o := range old {
			if want[keyOf(o)] {
				continue
			}
			if own, err := r.agentInstallation(ctx, o); err != nil || own {
				if own {
					// A Bundle that once carried part of the agent's installation (its RBAC, say)
					// and no longer does leaves it as installed: pruning it would cut the agent off.
					log.Info("Not pruning the agent's own installation", "kind", o.Kind, "namespace", o.Namespace, "name", o.Name)
				}
				failed = errors.Join(failed, err)
				continue
			}
			log.Info("Pruning resource dropped by the new deployment", "kind", o.Kind, "namespace", o.Namespace, "name", o.Name)
			failed = errors.Join(failed, r.deleteResource(ctx, o, ownerOf(bd)))
		}
	}
	if failed == nil && len(unknown) == 0 {
		failed = r.writeRecord(ctx, bd, states, "")
	}

	bd.Status.Resources = states
	if failed != nil || len(unknown) > 0 {
		// What this pass did apply joins the record, so that deleting the BundleDeployment (or
		// its next successful apply) prunes it too: without it a deployment that never applied
		// in full left its objects behind when deleted.
		failed = errors.Join(failed, r.recordPartial(ctx, bd, states))
	}
	if failed == nil && len(unknown) > 0 {
		// Not a failure: usually the CRD of a custom resource is not established yet.
		bd.Status.Ready = false
		msg := "Waiting for the cluster to serve " + summarize(slices.Compact(slices.Sorted(slices.Values(unknown)))) + "; retrying"
		setCond(bd, fleetv1alpha1.ConditionApplied, false, fleetv1alpha1.ReasonUnknownKind, msg)
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonUnknownKind, msg)
		if err := r.patchStatus(ctx, bd, before); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("Kinds not served yet, retrying", "kinds", unknown)
		return ctrl.Result{RequeueAfter: unknownKindRetry}, nil
	}
	if failed != nil {
		bd.Status.Ready = false
		setCond(bd, fleetv1alpha1.ConditionApplied, false, fleetv1alpha1.ReasonApplyFailed, failed.Error())
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, "Not every resource was applied")
		if err := r.patchStatus(ctx, bd, before); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: failedRetry}, nil
	}
	bd.Status.AppliedDeploymentID, bd.Status.Ready, bd.Status.NonModified = bd.Spec.DeploymentID, true, true
	bd.Status.AppliedSyncGeneration = bd.Spec.Options.ForceSyncGeneration
	setCond(bd, fleetv1alpha1.ConditionApplied, true, fleetv1alpha1.ReasonSucceeded, fmt.Sprintf("Applied %d resources", len(states)))
	setCond(bd, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "All resources exist")
	next := r.DriftInterval
	if waiting := workloads(objs); len(waiting) > 0 {
		// Just applied: their controllers have not acted on them yet. The next check reads
		// their status.
		bd.Status.Ready = false
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonResourcesNotReady, "Waiting for "+summarize(waiting))
		next = min(next, notReadyRecheck)
	}
	if err := r.patchStatus(ctx, bd, before); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// workloads names the objects whose readiness is more than existing.
func workloads(objs []*unstructured.Unstructured) []string {
	var names []string
	for _, u := range objs {
		if ready, _ := health(u); !ready {
			names = append(names, describe(u)+" to become ready")
		}
	}
	return names
}

func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// summarize joins the first few items: a condition message stays readable for hundreds.
func summarize(items []string) string {
	const show = 3
	if len(items) <= show {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:show], "; "), len(items)-show)
}

// patchStatus writes bd's status, with the display computed from it (status.display: the
// state as the Bundle summary counts it, for printer columns and Table readers).
func (r *Reconciler) patchStatus(ctx context.Context, bd, before *fleetv1alpha1.BundleDeployment) error {
	bd.Status.Display = bundle.Display(bd)
	if err := r.Upstream.Status().Patch(ctx, bd, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}

// objects decodes the inline manifests and the referenced content, prepared for applying, and
// returns the content's Helm chart when it has one.
func (r *Reconciler) objects(ctx context.Context, bd *fleetv1alpha1.BundleDeployment) ([]*unstructured.Unstructured, *fleetv1alpha1.BundleHelm, error) {
	raws := bd.Spec.Manifests
	var helm *fleetv1alpha1.BundleHelm
	if ref := bd.Spec.Content; ref != nil {
		c, err := r.readContent(ctx, *ref)
		if err != nil {
			return nil, nil, err
		}
		raws = append(append([]runtime.RawExtension{}, raws...), c.Manifests...)
		helm = c.Helm
	}
	out := make([]*unstructured.Unstructured, 0, len(raws))
	for i, raw := range raws {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			return nil, nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		annotate(bd, u)
		out = append(out, u)
	}
	return out, helm, nil
}

// readContent gets a BundleContent: from a content slot, the version ref.SHA256 names (a slot
// is reused by later versions), else a content-addressed one. A version never changes, so it is
// kept in memory by name and sha256.
func (r *Reconciler) readContent(ctx context.Context, ref fleetv1alpha1.ContentReference) (*fleetv1alpha1.BundleContent, error) {
	id := ref.Namespace + "/" + ref.Name
	key := id + "@" + ref.SHA256
	r.mu.Lock()
	c, ok := r.content[key]
	r.mu.Unlock()
	if ok {
		return c, nil
	}
	bc := &fleetv1alpha1.BundleContent{}
	if err := r.ContentReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, bc); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return nil, &contentUnreadable{id: id, err: err}
		}
		return nil, fmt.Errorf("read content %s: %w", id, err)
	}
	if ref.SHA256 != "" && bc.SHA256 != ref.SHA256 {
		return nil, &contentUnreadable{id: id, err: &otherVersion{has: bc.SHA256, want: ref.SHA256}}
	}
	r.mu.Lock()
	if r.content == nil || len(r.content) >= contentCacheEntries {
		r.content = map[string]*fleetv1alpha1.BundleContent{}
	}
	r.content[key] = bc
	r.mu.Unlock()
	return bc, nil
}

// contentUnreadable: the agent may not read (Forbidden) or does not find (NotFound) a
// BundleContent. Both are expected for a moment after a Bundle gets new content: drover adds it
// to the cluster's access Role as it creates the BundleDeployments, and the API server's
// authorizer may see the BundleDeployment's change before the Role's.
type contentUnreadable struct {
	id  string
	err error
}

func (e *contentUnreadable) Error() string { return "read content " + e.id + ": " + e.err.Error() }
func (e *contentUnreadable) Unwrap() error { return e.err }

// otherVersion: a content slot holds another version than the BundleDeployment names. Expected
// for a moment: the slot was reused by a later version, and the BundleDeployment naming it is
// on its way (or the slot's new content is, when the BundleDeployment came first).
type otherVersion struct{ has, want string }

func (e *otherVersion) Error() string {
	return fmt.Sprintf("it holds version %.12s, not %.12s", e.has, e.want)
}

// waitContent reports a BundleDeployment whose content is not readable (yet) and retries it
// with backoff: Applied=Unknown, reason ContentNotReadable (the Bundle counts it pending) for up
// to ContentWait since it started waiting for this generation, then Applied=False with the same
// reason (a failure: the cluster's access Role lacks the content). Either way it applies as soon
// as the content can be read.
func (r *Reconciler) waitContent(ctx context.Context, bd, before *fleetv1alpha1.BundleDeployment, cu *contentUnreadable) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("deploymentID", bd.Spec.DeploymentID, "content", cu.id)
	applied := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
	waiting := applied != nil && applied.Reason == fleetv1alpha1.ReasonContentNotReadable && applied.ObservedGeneration == bd.Generation
	since := time.Now()
	if waiting {
		since = applied.LastTransitionTime.Time
	} else {
		// A fresh wait: its start is the condition's transition time.
		meta.RemoveStatusCondition(&bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
	}
	elapsed := time.Since(since)
	wait := r.ContentWait
	if wait <= 0 {
		wait = defaultContentWait
	}
	notFound := apierrors.IsNotFound(cu.err)
	var other *otherVersion
	stale := errors.As(cu.err, &other)
	bd.Status.Ready = false
	if (waiting && applied.Status == metav1.ConditionFalse) || elapsed >= wait {
		var msg string
		switch {
		case stale:
			msg = fmt.Sprintf("BundleContent %s still holds another version than this BundleDeployment names after %s: drover "+
				"writes a version to a slot before pointing BundleDeployments at it, and moves them off a slot before reusing it; "+
				"check that drover server runs (%v)", cu.id, wait.Round(time.Second), cu.err)
		case notFound:
			msg = fmt.Sprintf("BundleContent %s still not found after %s: it was deleted or never written; check that drover server runs (%v)",
				cu.id, wait.Round(time.Second), cu.err)
		default:
			role := "the cluster's access Role"
			if r.AccessRole != "" {
				role += " (" + r.AccessRole + ")"
			}
			msg = fmt.Sprintf("BundleContent %s still not readable after %s: %s lacks it; check that drover server runs (it adds every content "+
				"the cluster's BundleDeployments name to that Role's bundlecontents rule) (%v)", cu.id, wait.Round(time.Second), role, cu.err)
		}
		setCondStatus(bd, fleetv1alpha1.ConditionApplied, metav1.ConditionFalse, fleetv1alpha1.ReasonContentNotReadable, msg)
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonContentNotReadable, "Manifests not readable")
		if err := r.patchStatus(ctx, bd, before); err != nil {
			return ctrl.Result{}, err
		}
		if !waiting || applied.Status != metav1.ConditionFalse {
			log.Info("Content still not readable: reporting a failure", "waited", wait, "error", cu.err.Error())
		}
		// Still retried, so that it applies soon after the Role is repaired.
		return ctrl.Result{RequeueAfter: contentRetryMax}, nil
	}
	why := "not allowed to read it yet: the cluster's access Role is being updated"
	switch {
	case stale:
		why = cu.err.Error() + " yet"
	case notFound:
		why = "not found yet"
	}
	msg := fmt.Sprintf("Waiting to read BundleContent %s (%s); retrying", cu.id, why)
	setCondStatus(bd, fleetv1alpha1.ConditionApplied, metav1.ConditionUnknown, fleetv1alpha1.ReasonContentNotReadable, msg)
	setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonContentNotReadable, msg)
	if err := r.patchStatus(ctx, bd, before); err != nil {
		return ctrl.Result{}, err
	}
	// Backoff: retried about as long after as it has waited so far, within bounds.
	retry := min(max(elapsed, contentRetryMin), contentRetryMax)
	if !waiting {
		log.Info("Content not readable yet: waiting", "error", cu.err.Error(), "retryIn", retry)
	} else {
		log.V(1).Info("Content not readable yet, retrying", "error", cu.err.Error(), "retryIn", retry)
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// resolve sets the default namespace of a namespaced object. It needs the object's kind to be
// served (a meta.NoMatchError otherwise), so it runs just before the object is used.
func (r *Reconciler) resolve(bd *fleetv1alpha1.BundleDeployment, u *unstructured.Unstructured) error {
	if u.GetNamespace() != "" {
		return nil
	}
	namespaced, err := r.Downstream.IsObjectNamespaced(u)
	if err != nil {
		return err
	}
	if namespaced {
		ns := bd.Spec.Options.DefaultNamespace
		if ns == "" {
			ns = "default"
		}
		u.SetNamespace(ns)
	}
	return nil
}

// ensureNamespace creates the namespace name (a Bundle's defaultNamespace) if it does not exist.
// It is not recorded as the BundleDeployment's, so it is never pruned with it: other things
// may live there.
func (r *Reconciler) ensureNamespace(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	ns := &corev1.Namespace{}
	switch err := r.Downstream.Get(ctx, client.ObjectKey{Name: name}, ns); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read namespace %s (defaultNamespace): %w", name, err)
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/created-by": "drover-agent"}}}
	if err := r.Downstream.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s (defaultNamespace): %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the Bundle's default namespace", "namespace", name)
	return nil
}

// annotate sets the agent's annotations.
func annotate(bd *fleetv1alpha1.BundleDeployment, u *unstructured.Unstructured) {
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[OwnerAnnotation] = ownerOf(bd)
	ann["fleet.drover.io/deployment-id"] = bd.Spec.DeploymentID
	u.SetAnnotations(ann)
}

// OwnerAnnotation on a downstream object names the BundleDeployment ("namespace/name") that
// applied it last: the one that may prune it.
const OwnerAnnotation = fleetv1alpha1.LabelPrefix + "bundle-deployment"

func ownerOf(bd *fleetv1alpha1.BundleDeployment) string { return bd.Namespace + "/" + bd.Name }

// ownedByOther names the other BundleDeployment that owns the live object u is applied over
// ("" when there is none, it is bd, or its owner is gone or going: then bd takes it over). Two
// Bundles deploying one object would overwrite each other's version on every apply, and
// deleting either would delete the object the other still deploys.
func (r *Reconciler) ownedByOther(ctx context.Context, bd *fleetv1alpha1.BundleDeployment, u *unstructured.Unstructured) (string, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	switch err := r.Downstream.Get(ctx, client.ObjectKeyFromObject(u), live); {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read %s %s/%s before applying it: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	owner := live.GetAnnotations()[OwnerAnnotation]
	if owner == "" || owner == ownerOf(bd) {
		return "", nil
	}
	ns, name, _ := strings.Cut(owner, "/")
	if ns != bd.Namespace {
		// Not of this agent's cluster namespace: left by an earlier registration of the cluster
		// (a re-created Cluster gets a new namespace), nothing this agent deploys any more.
		return "", nil
	}
	other := &fleetv1alpha1.BundleDeployment{}
	switch err := r.Upstream.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, other); {
	case apierrors.IsNotFound(err):
		return "", nil // gone
	case err != nil:
		return "", fmt.Errorf("read BundleDeployment %s, which owns %s %s/%s: %w", owner, u.GetKind(), u.GetNamespace(), u.GetName(), err)
	case !other.DeletionTimestamp.IsZero():
		return "", nil
	}
	return owner, nil
}

// splitFoundation separates the CRDs and Namespaces of objs (in their order) from the rest.
func splitFoundation(objs []*unstructured.Unstructured) (first, rest []*unstructured.Unstructured) {
	for _, u := range objs {
		gk := u.GroupVersionKind().GroupKind()
		if gk == crdKind || gk == namespaceKind {
			first = append(first, u)
		} else {
			rest = append(rest, u)
		}
	}
	return first, rest
}

var (
	crdKind       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
)

// establishWait bounds how long an apply pass waits for its CRDs to be established before it
// applies the rest anyway (kinds still unknown then are retried).
const establishWait = 10 * time.Second

// waitEstablished waits until the CRDs among objs are established.
func (r *Reconciler) waitEstablished(ctx context.Context, objs []*unstructured.Unstructured) {
	for _, u := range objs {
		if u.GroupVersionKind().GroupKind() != crdKind {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, establishWait, true, func(ctx context.Context) (bool, error) {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(u.GroupVersionKind())
			if err := r.Downstream.Get(ctx, client.ObjectKeyFromObject(u), crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("CRD not established yet, applying the rest anyway", "crd", u.GetName(), "error", err.Error())
		}
	}
}

func stateOf(u *unstructured.Unstructured) fleetv1alpha1.ResourceState {
	return fleetv1alpha1.ResourceState{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), State: StateApplied}
}

// apply server-side applies a copy of u; dryRun returns the object the apply would produce.
// The fields diff.ignore names keep their live values (live, or read when nil; see
// keepIgnored).
func (r *Reconciler) apply(ctx context.Context, bd *fleetv1alpha1.BundleDeployment, u, live *unstructured.Unstructured, force, dryRun bool) (fleetv1alpha1.ResourceState, error) {
	if err := r.resolve(bd, u); err != nil {
		st := stateOf(u)
		st.State, st.Message = StateFailed, err.Error()
		return st, fmt.Errorf("%s %s: %w", st.Kind, st.Name, err)
	}
	st := stateOf(u)
	if !dryRun {
		other, err := r.ownedByOther(ctx, bd, u)
		if err == nil && other != "" {
			_, bundleName, _ := strings.Cut(other, "/")
			err = fmt.Errorf("already deployed by Bundle %s (BundleDeployment %s): two Bundles may not deploy the same object; remove it from one of them", bundleName, other)
		}
		if err != nil {
			st.State, st.Message = StateFailed, err.Error()
			return st, fmt.Errorf("%s %s/%s: %w", st.Kind, st.Namespace, st.Name, err)
		}
	}
	obj := u.DeepCopy()
	if err := r.keepIgnored(ctx, bd, obj, live); err != nil {
		st.State, st.Message = StateFailed, err.Error()
		return st, err
	}
	opts := []client.ApplyOption{client.FieldOwner(FieldManager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := r.Downstream.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...); err != nil {
		switch {
		case fieldConflict(err):
			err = fmt.Errorf("%w; %s", err, conflictHint)
		case apierrors.IsNotFound(err) && obj.GetNamespace() != "":
			// The namespace does not exist downstream: only the Bundle's own Namespaces and its
			// defaultNamespace are created.
			err = fmt.Errorf("%w; add a Namespace %q to the Bundle, or make it the Bundle's defaultNamespace (drover bundle apply --default-namespace %s)",
				err, obj.GetNamespace(), obj.GetNamespace())
		}
		st.State, st.Message = StateFailed, err.Error()
		return st, fmt.Errorf("%s %s/%s: %w", st.Kind, st.Namespace, st.Name, err)
	}
	if dryRun {
		u.Object = obj.Object
	}
	return st, nil
}

// conflictHint follows a server-side apply refused because another field manager owns fields
// the manifest sets (someone changed them downstream, kubectl patch or edit say): an apply
// without force leaves them to that manager.
const conflictHint = "another field manager changed these fields on the cluster: set correctDrift " +
	"(drover bundle apply --correct-drift) or forceConflicts (--force-conflicts) on the Bundle to take them back, or take them back once (drover bundle redeploy)"

// fieldConflict says whether err is a server-side apply refused for field manager conflicts.
func fieldConflict(err error) bool {
	var s apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &s) || s.Status().Details == nil {
		return false
	}
	for _, c := range s.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			return true
		}
	}
	return false
}

// checkDrift compares every applied resource with what applying its manifest would make of it:
// a server-side dry-run apply (forced, so fields another manager took over come back) of the
// manifest, compared field by field with the live object. Differences are drift; with
// correctDrift the manifest is applied again, with force.
func (r *Reconciler) checkDrift(ctx context.Context, bd, before *fleetv1alpha1.BundleDeployment, objs []*unstructured.Unstructured) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var states []fleetv1alpha1.ResourceState
	modified, missing := 0, 0
	var notReady, corrected []string
	var failed error
	for _, u := range objs {
		err := r.resolve(bd, u)
		st := stateOf(u)
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		if err == nil {
			err = r.Downstream.Get(ctx, client.ObjectKeyFromObject(u), live)
		}
		var fields []string
		switch {
		case apierrors.IsNotFound(err):
			st.State, st.Message = StateMissing, "deleted downstream"
		case err != nil:
			failed = errors.Join(failed, err)
			st.State, st.Message = StateFailed, err.Error()
		default:
			desired := u.DeepCopy()
			if _, err := r.apply(ctx, bd, desired, live, true, true); err != nil {
				failed = errors.Join(failed, err)
				st.State, st.Message = StateFailed, err.Error()
				break
			}
			// The report may reach anyone who can read Bundles: Diff hides Secret and
			// sensitive values (see SensitiveWords), and only paths are logged. Fields
			// diff.ignore names are someone else's: not drift.
			if diffs := diffObjects(desired.Object, live.Object, diffIgnore(bd, u)...); len(diffs) > 0 {
				st.State, st.Message = StateModified, strings.Join(reports(diffs), "; ")
				fields = paths(diffs)
			}
			if ok, why := r.liveHealth(ctx, live); !ok {
				notReady = append(notReady, describe(live)+": "+why)
				if st.State == StateApplied {
					st.State, st.Message = StateNotReady, why
				}
			}
		}
		if (st.State == StateModified || st.State == StateMissing) && bd.Spec.Options.CorrectDrift {
			log.Info("Correcting drift", "kind", st.Kind, "namespace", st.Namespace, "name", st.Name, "fields", fields)
			var current *unstructured.Unstructured
			if st.State == StateModified {
				current = live
			}
			if _, err := r.apply(ctx, bd, u, current, true, false); err != nil {
				failed = errors.Join(failed, err)
			} else {
				st = stateOf(u)
				corrected = append(corrected, describe(u))
			}
		}
		switch st.State {
		case StateModified:
			modified++
		case StateMissing:
			missing++
		}
		states = append(states, st)
	}
	bd.Status.Resources = states
	if len(corrected) > 0 {
		// A new transition time for every correction: the bundle controller records an Event
		// per correction it sees. Kinds and names only, never values.
		meta.RemoveStatusCondition(&bd.Status.Conditions, fleetv1alpha1.ConditionDriftCorrected)
		msg := "Re-applied after changes downstream: " + strings.Join(corrected, ", ")
		if len(msg) > 1024 {
			msg = msg[:1021] + "..."
		}
		setCond(bd, fleetv1alpha1.ConditionDriftCorrected, true, fleetv1alpha1.EventDriftCorrected, msg)
	}
	bd.Status.NonModified = modified == 0 && missing == 0
	bd.Status.Ready = missing == 0 && failed == nil && len(notReady) == 0
	switch {
	case bd.Status.Ready:
		setCond(bd, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "All resources exist and are ready")
	case failed != nil:
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, failed.Error())
	case missing > 0:
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, fmt.Sprintf("%d resources deleted downstream", missing))
	default:
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonResourcesNotReady, summarize(notReady))
	}
	bd.Status.Display = bundle.Display(bd) // a status an older agent wrote has none
	if !equalStatus(before, bd) {
		if err := r.patchStatus(ctx, bd, before); err != nil {
			return ctrl.Result{}, err
		}
	}
	next := r.DriftInterval
	if len(notReady) > 0 {
		next = min(next, notReadyRecheck)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

func equalStatus(a, b *fleetv1alpha1.BundleDeployment) bool {
	ja, _ := json.Marshal(a.Status)
	jb, _ := json.Marshal(b.Status)
	return string(ja) == string(jb)
}

// ignored are the fields that differ between a dry-run result and the live object without any
// change to the object's content.
var ignored = map[string]bool{
	"metadata.managedFields": true, "metadata.resourceVersion": true, "metadata.generation": true,
	"metadata.creationTimestamp": true, "metadata.uid": true, "status": true,
}

func short(v any) string {
	if v == nil {
		return "<none>"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// agentInstallation says whether the live object s names belongs to the agent's own
// installation (labelled as internal/agent/manifests and the agent chart label it).
func (r *Reconciler) agentInstallation(ctx context.Context, s fleetv1alpha1.ResourceState) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(s.APIVersion)
	u.SetKind(s.Kind)
	err := r.Downstream.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, u)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s %s/%s before pruning it: %w", s.Kind, s.Namespace, s.Name, err)
	}
	l := u.GetLabels()
	return l["app.kubernetes.io/name"] == manifests.Name && l[fleetv1alpha1.ManagedLabel] == "true", nil
}

// deleteResource prunes one object owner applied, unless another BundleDeployment has taken
// it over since (its OwnerAnnotation names that one): then it is that one's to keep.
func (r *Reconciler) deleteResource(ctx context.Context, s fleetv1alpha1.ResourceState, owner string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(s.APIVersion)
	u.SetKind(s.Kind)
	switch err := r.Downstream.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, u); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("read %s %s/%s before pruning it: %w", s.Kind, s.Namespace, s.Name, err)
	}
	if other := u.GetAnnotations()[OwnerAnnotation]; other != "" && other != owner {
		ctrl.LoggerFrom(ctx).Info("Not pruning a resource another BundleDeployment deploys now", "kind", s.Kind, "namespace", s.Namespace, "name", s.Name, "owner", other)
		return nil
	}
	// Only the object read: one re-created by someone else meanwhile is not ours.
	if err := r.Downstream.Delete(ctx, u, client.Preconditions{UID: ptr.To(u.GetUID())}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && !meta.IsNoMatchError(err) {
		return fmt.Errorf("prune %s %s/%s: %w", s.Kind, s.Namespace, s.Name, err)
	}
	return nil
}

// RecordName is the name of the downstream record of a BundleDeployment.
func RecordName(bd types.NamespacedName) string {
	return "drover-bd-" + hash(bd.String())
}

func (r *Reconciler) readRecord(ctx context.Context, bd types.NamespacedName) ([]fleetv1alpha1.ResourceState, *corev1.ConfigMap, error) {
	if r.RecordNamespace == "" {
		return nil, nil, nil
	}
	cm := &corev1.ConfigMap{}
	if err := r.Downstream.Get(ctx, client.ObjectKey{Namespace: r.RecordNamespace, Name: RecordName(bd)}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("read record: %w", err)
	}
	var res []fleetv1alpha1.ResourceState
	if err := json.Unmarshal([]byte(cm.Data[recordKeyResources]), &res); err != nil {
		return nil, nil, fmt.Errorf("decode record %s: %w", cm.Name, err)
	}
	return res, cm, nil
}

// writeRecord writes the record of bd: the resources it applied, and for a Helm
// BundleDeployment its release ("<namespace>/<name>").
func (r *Reconciler) writeRecord(ctx context.Context, bd *fleetv1alpha1.BundleDeployment, states []fleetv1alpha1.ResourceState, helmRelease string) error {
	if r.RecordNamespace == "" {
		return nil
	}
	res := make([]fleetv1alpha1.ResourceState, 0, len(states))
	for _, s := range states {
		res = append(res, fleetv1alpha1.ResourceState{APIVersion: s.APIVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, State: StateApplied})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(r.RecordNamespace)
	cm.SetName(RecordName(client.ObjectKeyFromObject(bd)))
	cm.SetLabels(map[string]string{RecordLabel: "true"})
	data := map[string]string{
		recordKeyBD: bd.Namespace + "/" + bd.Name, recordKeyResources: string(b),
		recordKeyKeep: fmt.Sprint(bd.Spec.Options.KeepResources),
	}
	if helmRelease != "" {
		data[recordKeyHelm] = helmRelease
	}
	_ = unstructured.SetNestedStringMap(cm.Object, data, "data")
	if err := r.Downstream.Apply(ctx, client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	return nil
}

// recordPartial adds the objects of states that were applied to bd's record (a Helm release's
// record is left alone: uninstalling the release is what prunes).
func (r *Reconciler) recordPartial(ctx context.Context, bd *fleetv1alpha1.BundleDeployment, states []fleetv1alpha1.ResourceState) error {
	old, cm, err := r.readRecord(ctx, client.ObjectKeyFromObject(bd))
	if err != nil || (cm != nil && cm.Data[recordKeyHelm] != "") {
		return err
	}
	seen := map[key]bool{}
	var merged []fleetv1alpha1.ResourceState
	for _, s := range old {
		seen[keyOf(s)] = true
		merged = append(merged, s)
	}
	for _, s := range states {
		if s.State != StateFailed && s.State != StateNotReady && !seen[keyOf(s)] {
			seen[keyOf(s)] = true
			merged = append(merged, s)
		}
	}
	if len(merged) == len(old) {
		return nil
	}
	return r.writeRecord(ctx, bd, merged, "")
}

// forget prunes what a deleted BundleDeployment applied (unless it asked to keep its
// resources), then deletes its record.
func (r *Reconciler) forget(ctx context.Context, bd types.NamespacedName) error {
	res, cm, err := r.readRecord(ctx, bd)
	if err != nil || cm == nil {
		return err
	}
	if rel := cm.Data[recordKeyHelm]; rel != "" && cm.Data[recordKeyKeep] != "true" {
		if err := r.helmUninstall(ctx, rel); err != nil {
			return err
		}
	} else if cm.Data[recordKeyKeep] != "true" {
		ctrl.LoggerFrom(ctx).Info("BundleDeployment deleted: pruning what it applied", "resources", len(res))
		var failed error
		for _, s := range res {
			failed = errors.Join(failed, r.deleteResource(ctx, s, bd.Namespace+"/"+bd.Name))
		}
		if failed != nil {
			return failed
		}
	}
	if err := r.Downstream.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete record: %w", err)
	}
	return nil
}

// sweep forgets, once at start, the BundleDeployments of the agent's cluster namespace that
// were deleted while the agent was not running.
func (r *Reconciler) sweep(ctx context.Context) error {
	var list corev1.ConfigMapList
	if err := r.Downstream.List(ctx, &list, client.InNamespace(r.RecordNamespace), client.MatchingLabels{RecordLabel: "true"}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing BundleDeployment records")
		return nil
	}
	for _, cm := range list.Items {
		ns, name, ok := strings.Cut(cm.Data[recordKeyBD], "/")
		if !ok || ns != r.DeploymentNamespace {
			continue // another registration's: left alone
		}
		key := types.NamespacedName{Namespace: ns, Name: name}
		err := r.Upstream.Get(ctx, key, &fleetv1alpha1.BundleDeployment{})
		if apierrors.IsNotFound(err) {
			err = r.forget(ctx, key)
		}
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Sweeping BundleDeployment record", "bundleDeployment", key)
		}
	}
	return nil
}

// forcedSync says whether bd asks for a forced re-apply not done yet (drover bundle redeploy):
// every resource is applied taking over fields changed downstream, once. Not on a cluster's
// first apply: a cluster that joins later is not forced over objects someone else manages.
func forcedSync(bd *fleetv1alpha1.BundleDeployment) bool {
	return bd.Status.AppliedDeploymentID != "" && bd.Spec.Options.ForceSyncGeneration != bd.Status.AppliedSyncGeneration
}

func setCond(bd *fleetv1alpha1.BundleDeployment, typ string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	setCondStatus(bd, typ, s, reason, msg)
}

func setCondStatus(bd *fleetv1alpha1.BundleDeployment, typ string, s metav1.ConditionStatus, reason, msg string) {
	// Joined errors put one per line: a condition message is read on one (kubectl, the CLI's
	// tables, Events).
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ")
	meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: bd.Generation})
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}
