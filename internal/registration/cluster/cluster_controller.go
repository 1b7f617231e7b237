// Package cluster reconciles fleet Clusters: it gives each its cluster namespace and, through a
// finalizer, deletes everything created for the cluster when it goes — the request identities
// first, so their tokens stop working at once.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/metrics"
	"github.com/droverhq/drover/internal/registration/internal/kube"
	"github.com/droverhq/drover/internal/registration/names"
)

// Finalizer removes every object created for a Cluster.
const Finalizer = "fleet.drover.io/cluster-cleanup"

// Reconciler reconciles fleet Clusters.
type Reconciler struct {
	Client client.Client
	// APIReader reads the agent's RoleBinding uncached (the manager caches no RBAC objects).
	APIReader client.Reader
	// MaxConcurrentReconciles defaults to 16.
	MaxConcurrentReconciles int
	// RequestTokenTTL and RenewalTokenTTL are the lifetimes of the agents' request and renewal
	// tokens (defaults 24h and 30 days): an agent not seen for longer has an expired token, which
	// the AgentCredential condition says.
	RequestTokenTTL, RenewalTokenTTL time.Duration
	// AgentDisconnectAfter is how long an agent that checked in before may miss its heartbeats
	// before its Cluster is Ready=False with reason AgentDisconnected (default
	// DefaultAgentDisconnectAfter, three default heartbeat intervals).
	AgentDisconnectAfter time.Duration
	// Recorder, when set, records Events when a Cluster's agent credential expires and when its
	// agent disconnects or comes back.
	Recorder events.EventRecorder
	// Now is the clock (default time.Now).
	Now func() time.Time

	// statusBase remembers, per Cluster, the resourceVersion of the Cluster this process
	// last wrote the status of: a pass that reads it again from a cache that does not show
	// that write yet has nothing to add (it wrote the namespace and status twice).
	statusBase sync.Map
	// futureSeen remembers, per Cluster UID, a lastSeen in the future and when it was first
	// seen (firstSeen).
	futureSeen sync.Map
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		return errors.New("cluster reconciler: Client is required")
	}
	r.defaults()
	return ctrl.NewControllerManagedBy(mgr).
		Named("fleetcluster").
		For(&fleetv1alpha1.Cluster{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: orDefault(r.MaxConcurrentReconciles, 16)}).
		Complete(r)
}

func (r *Reconciler) defaults() {
	if r.RequestTokenTTL == 0 {
		r.RequestTokenTTL = 24 * time.Hour
	}
	if r.RenewalTokenTTL == 0 {
		r.RenewalTokenTTL = 30 * 24 * time.Hour
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.AgentDisconnectAfter <= 0 {
		r.AgentDisconnectAfter = DefaultAgentDisconnectAfter
	}
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Clusters, their namespaces and the agent's rights on them (a Role granting clusters/status
// patch and bundlecontents get, which the server holds itself).
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.drover.io,resources=bundlecontents,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete;deletecollection
// The import tokens made for a Cluster are deleted with it, by label.
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrationtokens,verbs=deletecollection

// Reconcile ensures the cluster namespace, or cleans up a deleted Cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &fleetv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.FleetClusters.Delete(req.String())
			r.statusBase.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if base, ok := r.statusBase.Load(req.NamespacedName); ok && base == c.ResourceVersion {
		// The Cluster as this process last saw it before its status write: that write's
		// event brings the next pass.
		return ctrl.Result{}, nil
	}
	if !c.DeletionTimestamp.IsZero() {
		r.statusBase.Delete(req.NamespacedName)
		metrics.FleetClusters.Delete(req.String())
		return ctrl.Result{}, r.delete(ctx, c)
	}
	before := c.DeepCopy()
	// An imported Cluster (manager-initiated registration) gets its clientID, which the agent
	// deployed for it registers with, in the same write as the finalizer: the importer setting
	// it later was a write more, and a new generation, so a second namespace apply and status
	// patch here.
	newID := c.Spec.KubeConfigSecret != "" && c.Spec.ClientID == ""
	if newID {
		c.Spec.ClientID = NewClientID()
	}
	if controllerutil.AddFinalizer(c, Finalizer) || newID {
		patch := client.MergeFrom(before)
		if newID {
			// A pass reading a stale Cluster must not replace a clientID set before.
			patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		}
		if err := r.Client.Patch(ctx, c, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer (and clientID): %w", err)
		}
		before = c.DeepCopy()
	}
	if c.Status.Namespace == "" && c.Annotations[RegisteringAnnotation] != "" {
		// The registration that created c creates its namespace and first status (one write
		// fewer per registration); this controller takes over if that has not happened in time.
		if age := time.Since(c.CreationTimestamp.Time); age < RegistrationGrace {
			return ctrl.Result{RequeueAfter: RegistrationGrace - age}, nil
		}
	}
	if ns := names.ClusterNamespace(c.Namespace, c.Name, string(c.UID)); c.Status.Namespace != ns || c.Generation != c.Status.ObservedGeneration {
		if err := kube.EnsureNamespace(ctx, r.Client, ns, Labels(c)); err != nil {
			return ctrl.Result{}, err
		}
	}
	SetStatus(c)
	r.defaults()
	next := soonest(r.credentialCondition(c), r.connection(c))
	if r.APIReader != nil && c.Status.Agent.LastSeen != nil && meta.FindStatusCondition(before.Status.Conditions, fleetv1alpha1.ConditionAgentCredential) == nil {
		if err := r.upgradeAgentRights(ctx, c); err != nil {
			return ctrl.Result{}, err
		}
	}
	base := before.ResourceVersion
	if err := kube.PatchStatus(ctx, r.Client, c, before); err != nil {
		return ctrl.Result{}, err
	}
	if c.ResourceVersion != base {
		r.statusBase.Store(req.NamespacedName, base)
	}
	if old, now := meta.FindStatusCondition(before.Status.Conditions, fleetv1alpha1.ConditionAgentCredential), meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential); r.Recorder != nil && now != nil && now.Status == metav1.ConditionFalse && (old == nil || old.Reason != now.Reason) {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, now.Reason, "CheckCredential", "%s", now.Message)
	}
	r.connectionEvent(c, meta.FindStatusCondition(before.Status.Conditions, fleetv1alpha1.ConditionReady))
	metrics.FleetClusters.Set(req.String(), connectionState(c))
	return ctrl.Result{RequeueAfter: next}, nil
}

// connectionEvent records an Event when c's agent disconnected or came back (old is the Ready
// condition before this pass).
func (r *Reconciler) connectionEvent(c *fleetv1alpha1.Cluster, old *metav1.Condition) {
	now := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionReady)
	if r.Recorder == nil || now == nil {
		return
	}
	wasDisconnected := old != nil && old.Reason == fleetv1alpha1.ReasonAgentDisconnected
	wasUnreachable := old != nil && old.Reason == fleetv1alpha1.ReasonDownstreamUnreachable
	switch {
	case now.Reason == fleetv1alpha1.ReasonDownstreamUnreachable && !wasUnreachable:
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, fleetv1alpha1.ReasonDownstreamUnreachable, "CheckConnection", "%s", now.Message)
	case now.Status == metav1.ConditionTrue && wasUnreachable:
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, fleetv1alpha1.EventDownstreamReachable, "CheckConnection",
			"The agent reaches its cluster's API server again (check-in at %s)", c.Status.Agent.LastSeen.UTC().Format(time.RFC3339))
	case now.Reason == fleetv1alpha1.ReasonAgentDisconnected && !wasDisconnected:
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, fleetv1alpha1.ReasonAgentDisconnected, "CheckConnection", "%s", now.Message)
	case now.Status == metav1.ConditionTrue && wasDisconnected:
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, fleetv1alpha1.EventAgentReconnected, "CheckConnection",
			"The agent checked in again at %s", c.Status.Agent.LastSeen.UTC().Format(time.RFC3339))
	}
}

// NewClientID is a random clientID for a Cluster whose agent drover deploys.
func NewClientID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

// soonest is the shorter of two requeue delays, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// credentialCondition sets c's AgentCredential condition from the agent's last check-in and
// returns when it changes next (0: not on its own). The agent renews its request token at half
// its life while it is online, so one not seen for a whole life holds an expired token; its
// renewal identity's token (renewed once half of it is gone) lasts at least half of its life.
func (r *Reconciler) credentialCondition(c *fleetv1alpha1.Cluster) time.Duration {
	if c.Status.Agent.LastSeen == nil {
		return 0
	}
	seen := c.Status.Agent.LastSeen.Time
	age := r.Now().Sub(seen)
	set := func(ok bool, reason, msg string) {
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionAgentCredential, ok, reason, msg)
	}
	switch {
	case age < r.RequestTokenTTL:
		switch cur := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential); {
		case cur == nil:
			set(true, fleetv1alpha1.ReasonCredentialCurrent, "The agent checks in with a current request credential")
		case cur.Status != metav1.ConditionTrue:
			// Its token had expired: it is back, so it registered again (the grant says so too,
			// but a concurrent status write may have replaced that).
			set(true, fleetv1alpha1.ReasonReregistered, "The agent registered again after its request credential expired and checks in")
		}
		return r.RequestTokenTTL - age
	case age < r.RenewalTokenTTL/2:
		set(false, fleetv1alpha1.ReasonCredentialExpired, fmt.Sprintf(
			"The agent last checked in at %s, longer ago than its request token lives (%s): that token has expired. "+
				"Nothing to do: when the agent is back it registers again with its renewal identity (register-only), valid until at least %s.",
			seen.UTC().Format(time.RFC3339), r.RequestTokenTTL, seen.Add(r.RenewalTokenTTL/2).UTC().Format(time.RFC3339)))
		return r.RenewalTokenTTL/2 - age
	}
	how := "install the agent again with a new ClusterRegistrationToken (helm upgrade --set token=...,tokenName=... or drover agent install --token)"
	if c.Spec.KubeConfigSecret != "" {
		how = "drover deploys a new bootstrap secret to the cluster as soon as it can reach it (see the Imported condition)"
	}
	set(false, fleetv1alpha1.ReasonRenewalExpired, fmt.Sprintf(
		"The agent last checked in at %s; its request token and possibly its renewal identity (%s after its last renewal) have expired, so it needs a new bootstrap: %s.",
		seen.UTC().Format(time.RFC3339), r.RenewalTokenTTL, how))
	return 0
}

// RegisteringAnnotation marks a Cluster created by a ClusterRegistration's grant, which creates
// the cluster namespace and writes the first status itself. RegistrationGrace is how long the
// cluster controller leaves such a Cluster to it.
const (
	RegisteringAnnotation = "fleet.drover.io/registering"
	RegistrationGrace     = 30 * time.Second
)

// SetStatus sets c's namespace, observed generation and Ready condition (the namespace must
// exist).
func SetStatus(c *fleetv1alpha1.Cluster) {
	c.Status.Namespace = names.ClusterNamespace(c.Namespace, c.Name, string(c.UID))
	c.Status.ObservedGeneration = c.Generation
	if c.Status.Agent.LastSeen == nil {
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonWaitCheckIn, "Waiting for the agent to check in")
	} else if !Disconnected(c) {
		// A disconnected cluster stays so until the cluster controller sees a recent check-in.
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "Agent checked in")
	}
}

// AccessRules are the rules of c's names.ClusterAccessRole: patch c's status and get the named
// BundleContents. Without names there is no content rule: one without resourceNames would
// grant every BundleContent.
func AccessRules(c *fleetv1alpha1.Cluster, contents ...string) []rbacv1.PolicyRule {
	fleet := fleetv1alpha1.GroupVersion.Group
	rules := []rbacv1.PolicyRule{{APIGroups: []string{fleet}, Resources: []string{"clusters/status"}, ResourceNames: []string{c.Name}, Verbs: []string{"patch"}}}
	if len(contents) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{fleet}, Resources: []string{"bundlecontents"}, ResourceNames: contents, Verbs: []string{"get"}})
	}
	return rules
}

// AgentRole is the request identity's Role in c's cluster namespace; sa is the current request
// identity. No Secrets or ConfigMaps: the agent reads none upstream (its answer is read by the
// import or renewal identity, its manifests come in BundleDeployments and BundleContents).
func AgentRole(c *fleetv1alpha1.Cluster, sa string) *rbacv1ac.RoleApplyConfiguration {
	fleet := fleetv1alpha1.GroupVersion.Group
	return kube.Role(c.Status.Namespace, names.AgentRole, Labels(c),
		rbacv1.PolicyRule{APIGroups: []string{fleet}, Resources: []string{"bundledeployments"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{fleet}, Resources: []string{"bundledeployments/status"}, Verbs: []string{"update", "patch"}},
		// Renewing its own short-lived token and its renewal identity's, and nothing else.
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{sa, names.RenewalServiceAccount}, Verbs: []string{"create"}})
}

// RenewalIdentity is c's renewal identity: a ServiceAccount that may create
// ClusterRegistrations in c's cluster namespace (register c again) and nothing else.
func RenewalIdentity(c *fleetv1alpha1.Cluster) []runtime.ApplyConfiguration {
	ns, rs, labels := c.Status.Namespace, names.RenewalServiceAccount, Labels(c)
	return []runtime.ApplyConfiguration{kube.ServiceAccount(ns, rs, labels),
		kube.Role(ns, rs, labels, rbacv1.PolicyRule{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"clusterregistrations"}, Verbs: []string{"create"}}),
		kube.RoleBinding(ns, rs, labels, rs, ns, rs)}
}

// upgradeAgentRights brings the rights of a cluster registered by an older drover up to date,
// once (when its AgentCredential condition is first set): the request identity's Role as
// AgentRole has it (no Secrets or ConfigMaps; the right to request renewal tokens) and the
// renewal identity, whose token its agent then requests.
func (r *Reconciler) upgradeAgentRights(ctx context.Context, c *fleetv1alpha1.Cluster) error {
	rb := &rbacv1.RoleBinding{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Status.Namespace, Name: names.AgentRole}, rb)
	if apierrors.IsNotFound(err) {
		return nil // not registered (yet)
	}
	if err != nil {
		return fmt.Errorf("get agent role binding: %w", err)
	}
	if len(rb.Subjects) == 0 {
		return nil
	}
	for _, obj := range append(RenewalIdentity(c), AgentRole(c, rb.Subjects[0].Name)) {
		if err := kube.Apply(ctx, r.Client, obj); err != nil {
			return fmt.Errorf("update agent rights in %s: %w", c.Status.Namespace, err)
		}
	}
	return nil
}

// Labels are the labels of every object created for c.
func Labels(c *fleetv1alpha1.Cluster) map[string]string {
	return map[string]string{
		fleetv1alpha1.ClusterLabel:          c.Name,
		fleetv1alpha1.ClusterUIDLabel:       string(c.UID),
		fleetv1alpha1.ClusterNamespaceLabel: c.Namespace,
	}
}

// delete removes every object created for c, request identities first.
func (r *Reconciler) delete(ctx context.Context, c *fleetv1alpha1.Cluster) error {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	log.Info("Deleting everything created for the Cluster")
	ns := names.ClusterNamespace(c.Namespace, c.Name, string(c.UID))
	byUID := client.MatchingLabels{fleetv1alpha1.ClusterUIDLabel: string(c.UID)}

	// Deleting the ServiceAccounts invalidates their tokens immediately (tokens are bound to
	// the ServiceAccount's UID), whatever happens to the rest.
	if err := r.Client.DeleteAllOf(ctx, &corev1.ServiceAccount{}, client.InNamespace(ns), byUID); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete request service accounts: %w", err)
	}
	// Registrations for this cluster (their own finalizer removes their secret readers).
	var regs fleetv1alpha1.ClusterRegistrationList
	if err := r.Client.List(ctx, &regs, client.InNamespace(c.Namespace)); err != nil {
		return fmt.Errorf("list registrations: %w", err)
	}
	for i := range regs.Items {
		cr := &regs.Items[i]
		if cr.Status.ClusterName == c.Name || c.Spec.ClientID != "" && cr.Spec.ClientID == c.Spec.ClientID {
			if err := kube.Delete(ctx, r.Client, cr); err != nil {
				return err
			}
		}
	}
	for _, del := range []struct {
		obj client.Object
		ns  string
	}{
		{&corev1.Secret{}, fleetv1alpha1.SystemRegistrationNamespace},
		{&rbacv1.Role{}, fleetv1alpha1.SystemRegistrationNamespace},
		{&rbacv1.RoleBinding{}, fleetv1alpha1.SystemRegistrationNamespace},
		{&rbacv1.Role{}, c.Namespace},
		{&rbacv1.RoleBinding{}, c.Namespace},
		{&fleetv1alpha1.ClusterRegistrationToken{}, c.Namespace},
		{&rbacv1.Role{}, ns},
		{&rbacv1.RoleBinding{}, ns},
	} {
		if err := r.Client.DeleteAllOf(ctx, del.obj, client.InNamespace(del.ns), byUID); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete %T in %s: %w", del.obj, del.ns, err)
		}
	}
	if err := kube.Delete(ctx, r.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	before := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, Finalizer)
	if err := r.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}
