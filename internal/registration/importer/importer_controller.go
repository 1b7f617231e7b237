// Package importer is manager-initiated registration: for a Cluster with a kubeconfig secret it
// connects to the downstream cluster and deploys the agent, its RBAC and a bootstrap secret
// holding an import identity. Its Imported condition says why it cannot (unreachable, x509,
// missing apiServerURL, bad kubeconfig). A change of API server URL or CA redeploys the agent.
package importer

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/kubeconfig"
	clusterctrl "github.com/droverhq/drover/internal/registration/cluster"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/registration/internal/kube"
	"github.com/droverhq/drover/internal/registration/names"
	"github.com/droverhq/drover/internal/registration/token"
)

// kubeconfigSecretIndex indexes Clusters by spec.kubeConfigSecret.
const kubeconfigSecretIndex = "spec.kubeConfigSecret"

// Reconciler deploys agents to clusters given by kubeconfig.
type Reconciler struct {
	Client client.Client
	// APIReader reads kubeconfig and values secrets, which the manager does not cache.
	APIReader client.Reader
	Config    config.Ref
	// ImportTokenTTL is the TTL of the import token created per cluster (default 1h).
	ImportTokenTTL time.Duration
	// ConnectTimeout bounds the downstream reachability check (default 10s).
	ConnectTimeout time.Duration
	// AgentImage is the agent image of Clusters without spec.agentImage (default
	// manifests.DefaultImage(), this server's version).
	AgentImage string
	// MaxConcurrentReconciles is how many clusters get their agent deployed at once (default
	// 16). Each deployment is a few round trips to a different downstream API server, so one
	// worker serialised hosted clusters joining together behind each other's latency.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil {
		return errors.New("importer: Client and APIReader are required")
	}
	if r.Config == (config.Ref{}) {
		r.Config = config.DefaultRef
	}
	if r.ImportTokenTTL == 0 {
		r.ImportTokenTTL = time.Hour
	}
	if r.ConnectTimeout == 0 {
		r.ConnectTimeout = 10 * time.Second
	}
	if r.AgentImage == "" {
		r.AgentImage = manifests.DefaultImage()
	}
	if r.MaxConcurrentReconciles == 0 {
		r.MaxConcurrentReconciles = 16
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &fleetv1alpha1.Cluster{}, kubeconfigSecretIndex, func(o client.Object) []string {
		return []string{o.(*fleetv1alpha1.Cluster).Spec.KubeConfigSecret}
	}); err != nil {
		return fmt.Errorf("index Clusters by kubeconfig secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusterimport").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		For(&fleetv1alpha1.Cluster{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.(*fleetv1alpha1.Cluster).Spec.KubeConfigSecret != ""
		}))).
		// Secrets are watched as metadata only: the importer reads the one it needs directly.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfSecret), builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allImported),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetNamespace() == r.Config.Namespace && o.GetName() == r.Config.Name
			}))).
		Watches(&fleetv1alpha1.ClusterRegistrationToken{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if c := o.GetLabels()[fleetv1alpha1.ClusterLabel]; c != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: c}}}
			}
			return nil
		})).
		Complete(r)
}

func (r *Reconciler) clustersOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1alpha1.ClusterList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{kubeconfigSecretIndex: o.GetName()}); err != nil {
		return nil
	}
	return requests(list.Items)
}

func (r *Reconciler) allImported(ctx context.Context, _ client.Object) []reconcile.Request {
	var list fleetv1alpha1.ClusterList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	return requests(list.Items)
}

func requests(cs []fleetv1alpha1.Cluster) []reconcile.Request {
	var reqs []reconcile.Request
	for _, c := range cs {
		if c.Spec.KubeConfigSecret != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return reqs
}

// failure is an import failure with a stable condition reason.
type failure struct {
	reason, msg string
	retry       bool // transient: retry later rather than wait for a change
}

func (f *failure) Error() string { return f.msg }

// Manager-initiated import: the Cluster, its kubeconfig Secret (metadata watched, the one needed
// read on demand), the registration ConfigMap and the import token. The agent is deployed with
// the kubeconfig's credential, not the server's.
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusterregistrationtokens,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=configmaps,verbs=get;list;watch

// Reconcile deploys (or redeploys) the agent when it is not deployed for the current settings.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &fleetv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() || c.Spec.KubeConfigSecret == "" {
		return ctrl.Result{}, nil
	}
	if c.Status.Namespace == "" {
		return ctrl.Result{}, nil // the cluster controller is not done; its status update re-triggers us
	}
	if c.Spec.ClientID == "" {
		// The cluster controller sets it with its finalizer; a Cluster from before that has none.
		before := c.DeepCopy()
		c.Spec.ClientID = clusterctrl.NewClientID()
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("set clientID: %w", err)
		}
	}
	before := c.DeepCopy()
	res, err := r.importCluster(ctx, c)
	var f *failure
	switch {
	case errors.As(err, &f):
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionImported, false, f.reason, f.msg)
		if perr := kube.PatchStatus(ctx, r.Client, c, before); perr != nil {
			return ctrl.Result{}, perr
		}
		if f.retry {
			return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
		return ctrl.Result{}, reconcile.TerminalError(err) // a secret or config change re-triggers
	case err != nil:
		return ctrl.Result{}, err
	}
	return res, kube.PatchStatus(ctx, r.Client, c, before)
}

func (r *Reconciler) importCluster(ctx context.Context, c *fleetv1alpha1.Cluster) (ctrl.Result, error) {
	if r.tokenPending(ctx, c) {
		// The import token exists but its values are not issued yet: its status update
		// re-triggers this. Probing the downstream again meanwhile (a new TLS connection each
		// time, on every update of the token or the Cluster) was most of a mass import's work,
		// and reading the kubeconfig Secret first (uncached) was 16 reads per cluster while
		// 1,000 clusters' tokens were issued.
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.KubeConfigSecret}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, &failure{reason: fleetv1alpha1.ReasonKubeconfigMissing, msg: fmt.Sprintf("Kubeconfig secret %s not found", c.Spec.KubeConfigSecret)}
		}
		return ctrl.Result{}, fmt.Errorf("get kubeconfig secret: %w", err)
	}
	cfg, err := config.Get(ctx, r.Client, r.Config)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The cluster's own secret overrides the configured values (e.g. the local cluster).
	url, ca := cfg.APIServerURL, cfg.APIServerCA
	if v := secret.Data[fleetv1alpha1.KeyAPIServerURL]; len(v) > 0 {
		url = string(v)
	}
	if v := secret.Data[fleetv1alpha1.KeyAPIServerCA]; len(v) > 0 {
		ca = v
	}
	if url == "" {
		return ctrl.Result{}, &failure{reason: fleetv1alpha1.ReasonMissingAPIServerURL,
			msg: config.MissingURLMessage(r.Config) + fmt.Sprintf(" (or set %s in secret %s)", fleetv1alpha1.KeyAPIServerURL, c.Spec.KubeConfigSecret)}
	}
	caHash := config.CAHash(ca)
	full, rebootstrap := !deployed(c, url, caHash), needsBootstrap(c)
	if imp := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionImported); !rebootstrap && imp != nil && imp.Reason == fleetv1alpha1.ReasonRebootstrapped &&
		!meta.IsStatusConditionFalse(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential) {
		// The agent is back after a new bootstrap: the next expiry may bootstrap it again.
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionImported, true, fleetv1alpha1.ReasonSucceeded, "Agent deployed")
	}
	// An agent that has not checked in yet may be slow to start: keep its bootstrap's import
	// token fresh (the token is renewed and expires long before a slow start gives up).
	refresh := !full && !rebootstrap && awaitingAgent(c)
	if !full && !rebootstrap && !refresh {
		return ctrl.Result{}, nil
	}
	if refresh {
		if wait, ok := r.bootstrapCurrent(ctx, c); ok {
			// The deployed bootstrap already carries the current import token: nothing to push
			// until that token is due for replacement. Without this, every update of the
			// Cluster before its agent checks in re-probed and re-pushed the bootstrap.
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}

	restCfg, err := kubeconfig.FromSecret(secret.Data[fleetv1alpha1.KeyKubeconfig])
	if err != nil {
		return ctrl.Result{}, &failure{reason: fleetv1alpha1.ReasonKubeconfigInvalid, msg: fmt.Sprintf("Secret %s key %q is not a usable kubeconfig: %v", secret.Name, fleetv1alpha1.KeyKubeconfig, err)}
	}
	if err := r.probe(ctx, restCfg); err != nil {
		return ctrl.Result{}, err
	}

	values, tokenUID, res, err := r.importValues(ctx, c)
	if err != nil || !res.IsZero() {
		return res, err
	}
	values[fleetv1alpha1.KeyAPIServerURL], values[fleetv1alpha1.KeyAPIServerCA] = []byte(url), ca
	if refresh {
		if err := r.pushBootstrap(ctx, c, restCfg, values); err != nil {
			return ctrl.Result{}, err
		}
		c.Status.BootstrapTokenUID = string(tokenUID)
		return ctrl.Result{RequeueAfter: r.ImportTokenTTL / 4}, nil
	}
	if err := r.deploy(ctx, c, restCfg, values); err != nil {
		return ctrl.Result{}, err
	}
	c.Status.BootstrapTokenUID = string(tokenUID)
	ctrl.LoggerFrom(ctx).Info("Deployed agent to downstream cluster", "agentNamespace", agentNamespace(c), "newBootstrap", rebootstrap)
	c.Status.APIServerURL, c.Status.APIServerCAHash = url, caHash
	c.Status.AgentDeployedGeneration = &c.Spec.RedeployAgentGeneration
	if rebootstrap {
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionImported, true, fleetv1alpha1.ReasonRebootstrapped,
			"Agent deployed again with a new bootstrap secret: it had been away for longer than its renewal identity lives")
	} else {
		kube.SetCondition(&c.Status.Conditions, c.Generation, fleetv1alpha1.ConditionImported, true, fleetv1alpha1.ReasonSucceeded, "Agent deployed")
	}
	if awaitingAgent(c) {
		return ctrl.Result{RequeueAfter: r.ImportTokenTTL / 4}, nil // refresh the bootstrap until it checks in
	}
	return ctrl.Result{}, nil
}

// needsBootstrap: the agent has been away for longer than its renewal identity lives (the
// cluster controller's AgentCredential condition), and has not been given a new bootstrap since.
func needsBootstrap(c *fleetv1alpha1.Cluster) bool {
	cred := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential)
	imp := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionImported)
	return cred != nil && cred.Reason == fleetv1alpha1.ReasonRenewalExpired && (imp == nil || imp.Reason != fleetv1alpha1.ReasonRebootstrapped)
}

// awaitingAgent: the agent has not checked in since its bootstrap was deployed.
func awaitingAgent(c *fleetv1alpha1.Cluster) bool {
	cred := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionAgentCredential)
	imp := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionImported)
	return c.Status.Agent.LastSeen == nil ||
		cred != nil && cred.Reason == fleetv1alpha1.ReasonRenewalExpired && imp != nil && imp.Reason == fleetv1alpha1.ReasonRebootstrapped
}

// pushBootstrap applies only the bootstrap secret downstream (with a fresh import token); the
// agent reads it each time it tries to register.
func (r *Reconciler) pushBootstrap(ctx context.Context, c *fleetv1alpha1.Cluster, cfg *rest.Config, values map[string][]byte) error {
	dc, err := client.New(cfg, client.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		return &failure{reason: fleetv1alpha1.ReasonKubeconfigInvalid, msg: fmt.Sprintf("Kubeconfig cannot be used: %v", err)}
	}
	mo := manifests.ForCluster(c)
	mo.Namespace, mo.Bootstrap = agentNamespace(c), values
	objs, err := manifests.Objects(mo)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if u.GetKind() != "Secret" || u.GetName() != manifests.BootstrapSecret {
			continue
		}
		if err := dc.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kube.FieldOwner), client.ForceOwnership); err != nil {
			return &failure{reason: fleetv1alpha1.ReasonDeployFailed, msg: fmt.Sprintf("Apply bootstrap secret downstream: %v", err), retry: true}
		}
	}
	return nil
}

func deployed(c *fleetv1alpha1.Cluster, url, caHash string) bool {
	return c.Status.AgentDeployedGeneration != nil && *c.Status.AgentDeployedGeneration == c.Spec.RedeployAgentGeneration &&
		c.Status.APIServerURL == url && c.Status.APIServerCAHash == caHash
}

func agentNamespace(c *fleetv1alpha1.Cluster) string {
	if c.Spec.AgentNamespace != "" {
		return c.Spec.AgentNamespace
	}
	return manifests.DefaultNamespace
}

// probe checks that the downstream API server answers, and classifies why not.
func (r *Reconciler) probe(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = r.ConnectTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return &failure{reason: fleetv1alpha1.ReasonKubeconfigInvalid, msg: fmt.Sprintf("Kubeconfig cannot be used: %v", err)}
	}
	_, err = dc.ServerVersion()
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &host), strings.Contains(err.Error(), "x509:"):
		return &failure{reason: fleetv1alpha1.ReasonCertificateInvalid, msg: fmt.Sprintf("Downstream API server certificate not trusted by the kubeconfig's CA: %v", err)}
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return &failure{reason: fleetv1alpha1.ReasonUnauthorized, msg: fmt.Sprintf("Kubeconfig credentials rejected: %v", err)}
	default:
		return &failure{reason: fleetv1alpha1.ReasonUnreachable, msg: fmt.Sprintf("Downstream API server unreachable: %v", err), retry: true}
	}
}

// bootstrapCurrent reports whether the bootstrap secret deployed downstream already holds c's
// current import token, and how long until importValues replaces that token (when it has less
// than half of ImportTokenTTL left).
func (r *Reconciler) bootstrapCurrent(ctx context.Context, c *fleetv1alpha1.Cluster) (time.Duration, bool) {
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if c.Status.BootstrapTokenUID == "" ||
		r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: names.ImportTokenName(c.Name)}, tok) != nil ||
		string(tok.UID) != c.Status.BootstrapTokenUID || !tok.DeletionTimestamp.IsZero() || tok.Status.Expires == nil {
		return 0, false
	}
	wait := time.Until(tok.Status.Expires.Time) - r.ImportTokenTTL/2
	return wait, wait > 0
}

// tokenPending reports whether c's import token exists (for this Cluster) with its values not
// issued yet, as the cache sees it.
func (r *Reconciler) tokenPending(ctx context.Context, c *fleetv1alpha1.Cluster) bool {
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: names.ImportTokenName(c.Name)}, tok); err != nil {
		return false // importValues handles a missing token and errors
	}
	_, uid, _ := tok.BoundCluster()
	return uid == c.UID && tok.Status.SecretName == ""
}

// importValues returns the values of the cluster's import token, creating the token if needed.
func (r *Reconciler) importValues(ctx context.Context, c *fleetv1alpha1.Cluster) (map[string][]byte, types.UID, ctrl.Result, error) {
	name := names.ImportTokenName(c.Name)
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, tok)
	if err == nil && tok.Labels[fleetv1alpha1.ClusterUIDLabel] != string(c.UID) {
		// Left over from a deleted Cluster of the same name: never reuse its identity.
		return nil, "", ctrl.Result{RequeueAfter: time.Second}, kube.Delete(ctx, r.Client, tok)
	}
	if apierrors.IsNotFound(err) {
		tok = &fleetv1alpha1.ClusterRegistrationToken{
			// With the token controller's finalizer: it need not add it (one write fewer).
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, Labels: clusterctrl.Labels(c), Finalizers: []string{token.Finalizer}},
			Spec:       fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: r.ImportTokenTTL}},
		}
		if err := r.Client.Create(ctx, tok); client.IgnoreAlreadyExists(err) != nil {
			return nil, "", ctrl.Result{}, fmt.Errorf("create import token: %w", err)
		}
		return nil, "", ctrl.Result{RequeueAfter: 5 * time.Second}, nil // the token watch usually comes first
	}
	if err != nil {
		return nil, "", ctrl.Result{}, fmt.Errorf("get import token: %w", err)
	}
	if tok.Status.Expires != nil && time.Until(tok.Status.Expires.Time) < r.ImportTokenTTL/2 {
		// Too close to expiry to hand to a new agent: start over with a fresh token.
		return nil, "", ctrl.Result{RequeueAfter: time.Second}, kube.Delete(ctx, r.Client, tok)
	}
	if tok.Status.SecretName == "" {
		return nil, "", ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: tok.Status.SecretName}, s); err != nil {
		return nil, "", ctrl.Result{}, fmt.Errorf("get import token values: %w", err)
	}
	return s.Data, tok.UID, ctrl.Result{}, nil
}

// deploy applies the agent installation downstream. The old credential is deleted so that the
// agent registers again with the new settings.
func (r *Reconciler) deploy(ctx context.Context, c *fleetv1alpha1.Cluster, cfg *rest.Config, values map[string][]byte) error {
	dc, err := client.New(cfg, client.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		return &failure{reason: fleetv1alpha1.ReasonKubeconfigInvalid, msg: fmt.Sprintf("Kubeconfig cannot be used: %v", err)}
	}
	ns := agentNamespace(c)
	// The agent's settings come from the Cluster exactly as for its drover-agent-<cluster> Bundle.
	mo := manifests.ForCluster(c)
	mo.Namespace, mo.Bootstrap = ns, values
	if mo.Image == "" {
		mo.Image = r.AgentImage
	}
	mo.ConfigHash = config.CAHash(append(append([]byte(c.Status.APIServerURL), values[fleetv1alpha1.KeyAPIServerCA]...), fmt.Sprint(c.Spec.RedeployAgentGeneration)...))
	objs, err := manifests.Objects(mo)
	if err != nil {
		return err
	}
	cred := &unstructured.Unstructured{}
	cred.SetAPIVersion("v1")
	cred.SetKind("Secret")
	cred.SetNamespace(ns)
	cred.SetName(manifests.CredentialSecret)
	if err := dc.Delete(ctx, cred); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return &failure{reason: fleetv1alpha1.ReasonDeployFailed, msg: fmt.Sprintf("Delete old agent credential: %v", err), retry: true}
	}
	for _, u := range objs {
		if err := dc.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kube.FieldOwner), client.ForceOwnership); err != nil {
			return &failure{reason: fleetv1alpha1.ReasonDeployFailed, msg: fmt.Sprintf("Apply %s %s downstream: %v", u.GetKind(), u.GetName(), err), retry: true}
		}
	}
	return nil
}
