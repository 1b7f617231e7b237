// Package token reconciles ClusterRegistrationTokens: each gets an import identity (a
// ServiceAccount that may only create ClusterRegistrations in the token's namespace) and a
// values secret with what an agent installation needs. Tokens come from the TokenRequest API,
// are short-lived and renewed; when the token expires, everything it created is deleted.
package token

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/registration/internal/kube"
	"github.com/droverhq/drover/internal/registration/names"
)

// Finalizer deletes what a token's import identity is made of. A token created with it (the
// importer's) saves the controller the write that adds it.
const Finalizer = "fleet.drover.io/token-cleanup"

// Annotation on the values secret: when its import token expires (RFC 3339).
const tokenExpiryAnnotation = "fleet.drover.io/token-expiry"

// Reconciler reconciles ClusterRegistrationTokens.
type Reconciler struct {
	Client client.Client
	// APIReader reads objects the manager does not cache (the values secret).
	APIReader client.Reader
	// Config names the registration settings ConfigMap.
	Config config.Ref
	// AllowNoTTL accepts tokens without a TTL (they still get short-lived, renewed import tokens).
	AllowNoTTL bool
	// ImportTokenTTL is the lifetime of import tokens issued for tokens without spec.ttl
	// (default 1h; renewed after two thirds of it). Tokens with a TTL get import tokens that
	// live exactly as long as they do.
	ImportTokenTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxConcurrentReconciles is how many tokens are issued at once (default 16). Issuing one
	// is about eight round trips to the API server, 1.6 s each under load: with 4 workers,
	// 1,000 clusters imported together waited about 400 s for their import tokens.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil {
		return errors.New("token reconciler: Client and APIReader are required")
	}
	if r.Config == (config.Ref{}) {
		r.Config = config.DefaultRef
	}
	if r.ImportTokenTTL == 0 {
		r.ImportTokenTTL = time.Hour
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = 16
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusterregistrationtoken").
		// Its own status and finalizer patches need no second pass (that pass re-applied the
		// import identity: three writes per token); renewals come from RequeueAfter.
		For(&fleetv1alpha1.ClusterRegistrationToken{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allTokens),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetNamespace() == r.Config.Namespace && o.GetName() == r.Config.Name
			}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

func (r *Reconciler) allTokens(ctx context.Context, _ client.Object) []reconcile.Request {
	var list fleetv1alpha1.ClusterRegistrationTokenList
	if err := r.Client.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ClusterRegistrationTokens for a config change")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, t := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
	}
	return reqs
}

// Tokens, their import identities (ServiceAccount, Role, RoleBinding, token Secret) and the
// registration ConfigMap. The import identity's Role grants create on clusterregistrations, which
// the server must hold itself (RBAC forbids granting a right one does not have).
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrationtokens,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrationtokens/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrationtokens/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrations,verbs=create
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete;deletecollection

// Reconcile issues or renews the token's import identity, or deletes it all at expiry.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := r.Client.Get(ctx, req.NamespacedName, tok); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tok.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.delete(ctx, tok)
	}
	before := tok.DeepCopy()
	if tok.Spec.TTL == nil && !r.AllowNoTTL || tok.Spec.TTL != nil && tok.Spec.TTL.Duration <= 0 {
		// Permanent until the spec changes: nothing is created for a token that would never expire.
		kube.SetCondition(&tok.Status.Conditions, tok.Generation, fleetv1alpha1.ConditionReady, false,
			fleetv1alpha1.ReasonMissingTTL, "Registration tokens need a positive spec.ttl")
		return ctrl.Result{}, kube.PatchStatus(ctx, r.Client, tok, before)
	}
	now := r.Now()
	var expires *metav1.Time
	if tok.Spec.TTL != nil {
		expires = &metav1.Time{Time: tok.CreationTimestamp.Add(tok.Spec.TTL.Duration)}
		if !now.Before(expires.Time) {
			ctrl.LoggerFrom(ctx).Info("Deleting expired ClusterRegistrationToken")
			return ctrl.Result{}, kube.Delete(ctx, r.Client, tok)
		}
	}
	if controllerutil.AddFinalizer(tok, Finalizer) {
		if err := r.Client.Patch(ctx, tok, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		before = tok.DeepCopy()
	}
	tok.Status.Expires = expires

	cfg, err := config.Get(ctx, r.Client, r.Config)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cfg.APIServerURL == "" {
		kube.SetCondition(&tok.Status.Conditions, tok.Generation, fleetv1alpha1.ConditionReady, false,
			fleetv1alpha1.ReasonMissingAPIServerURL, config.MissingURLMessage(r.Config))
		return ctrl.Result{}, kube.PatchStatus(ctx, r.Client, tok, before)
	}

	sa := names.ImportServiceAccount(tok.Name, string(tok.UID))
	renewAt, err := r.ensureIdentity(ctx, tok, sa, cfg, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	tok.Status.SecretName, tok.Status.ServiceAccountName = tok.Name, sa
	kube.SetCondition(&tok.Status.Conditions, tok.Generation, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "Import identity issued")
	if err := kube.PatchStatus(ctx, r.Client, tok, before); err != nil {
		return ctrl.Result{}, err
	}
	next := renewAt
	if tok.Status.Expires != nil && tok.Status.Expires.Time.Before(next) {
		next = tok.Status.Expires.Time
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
}

// ensureIdentity applies the import ServiceAccount, its Role and RoleBinding and the values
// secret; it requests a new token only when the stored one is due for renewal or the settings
// changed. It returns when the token must next be renewed.
func (r *Reconciler) ensureIdentity(ctx context.Context, tok *fleetv1alpha1.ClusterRegistrationToken, sa string, cfg config.Config, now time.Time) (time.Time, error) {
	labels := map[string]string{fleetv1alpha1.TokenLabel: tok.Name}
	role := kube.Role(tok.Namespace, sa, labels, rbacv1.PolicyRule{
		APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"clusterregistrations"}, Verbs: []string{"create"},
	})
	// The first issue creates the identity (a create costs the API server less than an apply,
	// and the objects are new); later passes apply it, which repairs a changed one.
	write := kube.Apply
	if tok.Status.ServiceAccountName != sa {
		write = kube.Create
	}
	for _, obj := range []runtime.ApplyConfiguration{kube.ServiceAccount(tok.Namespace, sa, labels), role, kube.RoleBinding(tok.Namespace, sa, labels, sa, tok.Namespace, sa)} {
		if err := write(ctx, r.Client, obj); err != nil {
			return time.Time{}, fmt.Errorf("apply import identity %s: %w", sa, err)
		}
	}

	data := map[string][]byte{
		fleetv1alpha1.KeyAPIServerURL:                []byte(cfg.APIServerURL),
		fleetv1alpha1.KeyAPIServerCA:                 cfg.APIServerCA,
		fleetv1alpha1.KeyTokenName:                   []byte(tok.Name),
		fleetv1alpha1.KeyClusterNamespace:            []byte(tok.Namespace),
		fleetv1alpha1.KeySystemRegistrationNamespace: []byte(fleetv1alpha1.SystemRegistrationNamespace),
	}
	// The import token lives as long as the ClusterRegistrationToken: a copy of the values
	// (a Helm install) works for the token's whole TTL, however slow the agent's first start.
	// It can only register; deleting the token (or its expiry) deletes its ServiceAccount and
	// with it every token issued. ImportTokenTTL applies to tokens without TTL.
	ttl := r.ImportTokenTTL
	if tok.Status.Expires != nil {
		ttl = tok.Status.Expires.Sub(now)
	}
	old := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: tok.Namespace, Name: tok.Name}, old)
	if client.IgnoreNotFound(err) != nil {
		return time.Time{}, fmt.Errorf("get values secret: %w", err)
	}
	secretMissing := apierrors.IsNotFound(err)
	if err == nil && len(old.Data[fleetv1alpha1.KeyToken]) > 0 && sameSettings(old.Data, data) {
		if exp, perr := time.Parse(time.RFC3339, old.Annotations[tokenExpiryAnnotation]); perr == nil {
			renewAt := exp.Add(-ttl / 3)
			if tok.Status.Expires != nil && !exp.Before(tok.Status.Expires.Add(-time.Minute)) {
				renewAt = tok.Status.Expires.Time // it lives as long as the token: nothing to renew
			}
			if now.Before(renewAt) {
				return renewAt, nil
			}
		}
	}
	token, exp, err := kube.RequestToken(ctx, r.Client, tok.Namespace, sa, ttl)
	if err != nil {
		return time.Time{}, err
	}
	data[fleetv1alpha1.KeyToken] = []byte(token)
	secret := kube.Secret(tok.Namespace, tok.Name, fleetv1alpha1.SecretTypeRegistrationValues, labels, data).
		WithAnnotations(map[string]string{tokenExpiryAnnotation: exp.UTC().Format(time.RFC3339)})
	writeSecret := kube.Apply
	if secretMissing {
		writeSecret = kube.Create
	}
	if err := writeSecret(ctx, r.Client, secret); err != nil {
		return time.Time{}, fmt.Errorf("apply values secret: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Issued import token", "serviceAccount", sa, "expires", exp)
	if tok.Status.Expires != nil {
		return tok.Status.Expires.Time, nil
	}
	return exp.Add(-exp.Sub(now) / 3), nil
}

func sameSettings(old, want map[string][]byte) bool {
	for k, v := range want {
		if string(old[k]) != string(v) {
			return false
		}
	}
	return true
}

// delete removes everything the token created: the import identity dies with its ServiceAccount.
func (r *Reconciler) delete(ctx context.Context, tok *fleetv1alpha1.ClusterRegistrationToken) error {
	if !controllerutil.ContainsFinalizer(tok, Finalizer) {
		return nil
	}
	sa := names.ImportServiceAccount(tok.Name, string(tok.UID))
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tok.Namespace, Name: sa}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: tok.Namespace, Name: sa}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tok.Namespace, Name: sa}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tok.Namespace, Name: tok.Name}},
	} {
		if err := kube.Delete(ctx, r.Client, obj); err != nil {
			return err
		}
	}
	// Grants made for this token's registrations (the resourceNames-scoped secret readers).
	for _, obj := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		if err := client.IgnoreNotFound(r.Client.DeleteAllOf(ctx, obj, client.InNamespace(fleetv1alpha1.SystemRegistrationNamespace),
			client.MatchingLabels{fleetv1alpha1.TokenLabel: tok.Name, fleetv1alpha1.ClusterNamespaceLabel: tok.Namespace})); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete registration secret readers of token %s: %w", tok.Name, err)
		}
	}
	before := tok.DeepCopy()
	controllerutil.RemoveFinalizer(tok, Finalizer)
	if err := r.Client.Patch(ctx, tok, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}
