// Package local registers the management cluster itself as the Cluster "local" in drover-local,
// the same way as a manager-initiated import: a kubeconfig secret with a short-lived token of the
// local agent's own ServiceAccount (never drover's credential), with apiServerURL/apiServerCA
// overrides so the local agent reaches drover directly.
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/internal/kube"
)

// SecretName is the kubeconfig secret of the local cluster.
const SecretName = "local-cluster"

// ServiceAccountName is the local agent's own identity in drover-local, and BindingName its
// ClusterRoleBinding to cluster-admin: the local kubeconfig holds a short-lived token of it,
// never drover's own credential.
const (
	ServiceAccountName = "drover-local-agent"
	BindingName        = "drover-local-agent"
)

// DefaultAgentNamespace keeps the local agent apart from an agent of another management cluster.
const DefaultAgentNamespace = "drover-local-agent"

// Reconciler keeps the local Cluster and its kubeconfig secret in place.
type Reconciler struct {
	Client client.Client
	// APIReader reads the local agent's ClusterRoleBinding uncached.
	APIReader client.Reader
	// LocalConfig is drover's own config for the cluster it runs in (in-cluster config): its
	// host and CA are given to the local agent, its credential never is.
	LocalConfig *rest.Config
	// TokenTTL is the lifetime of the local agent's token (default 1h; renewed at 2/3).
	TokenTTL time.Duration
	// AgentNamespace defaults to drover-local-agent.
	AgentNamespace string
	// Namespace holds the local Cluster, its Secret and the agent's ServiceAccount (default
	// drover-local; tests use their own).
	Namespace string
}

// SetupWithManager registers the controller; it runs once at start and whenever the local
// Cluster changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.LocalConfig == nil {
		return errors.New("local reconciler: Client and LocalConfig are required")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.TokenTTL == 0 {
		r.TokenTTL = time.Hour
	}
	if r.AgentNamespace == "" {
		r.AgentNamespace = DefaultAgentNamespace
	}
	if r.Namespace == "" {
		r.Namespace = fleetv1alpha1.LocalWorkspaceNamespace
	}
	kick := make(chan event.TypedGenericEvent[*fleetv1alpha1.Cluster], 1)
	kick <- event.TypedGenericEvent[*fleetv1alpha1.Cluster]{Object: &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: r.Namespace, Name: fleetv1alpha1.LocalClusterName}}}
	isLocal := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetName() == fleetv1alpha1.LocalClusterName
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("localcluster").
		For(&fleetv1alpha1.Cluster{}, builder.WithPredicates(isLocal)).
		WatchesRawSource(source.Channel(kick, &handler.TypedEnqueueRequestForObject[*fleetv1alpha1.Cluster]{})).
		Complete(r)
}

// The local Cluster, its namespace, the local agent's own ServiceAccount and a token of it from
// the TokenRequest API, written into the local kubeconfig Secret. The ServiceAccount's binding to
// cluster-admin (the agent it installs may apply anything) is an install-time object (the chart
// creates it); only without one does the server try to create it, which needs rights it does
// not hold in the generated RBAC.
// +kubebuilder:rbac:groups=fleet.drover.io,resources=clusters,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get,resourceNames=drover-local-agent

// Reconcile ensures the namespace, the local agent's identity, the kubeconfig secret with a
// fresh token, and the Cluster "local".
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	ns := r.Namespace
	if ns == "" {
		ns = fleetv1alpha1.LocalWorkspaceNamespace
	}
	if err := kube.EnsureNamespace(ctx, r.Client, ns, nil); err != nil {
		return ctrl.Result{}, err
	}
	ca, err := caOf(r.LocalConfig)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The Cluster's status changes at every heartbeat: the token is renewed only at two thirds
	// of its life (or when the endpoint changed), not at every reconcile.
	renewAt, fresh, err := r.current(ctx, ns, ca)
	if err != nil {
		return ctrl.Result{}, err
	}
	var bindErr error
	if !fresh {
		if err := kube.Create(ctx, r.Client, kube.ServiceAccount(ns, ServiceAccountName, nil)); err != nil {
			return ctrl.Result{}, fmt.Errorf("create local agent service account: %w", err)
		}
		bindErr = r.ensureBinding(ctx, ns)
		token, exp, err := kube.RequestToken(ctx, r.Client, ns, ServiceAccountName, r.TokenTTL)
		if err != nil {
			return ctrl.Result{}, err
		}
		kubeconfig, err := TokenKubeconfig(r.LocalConfig.Host, ca, token)
		if err != nil {
			return ctrl.Result{}, err
		}
		renewAt = time.Now().Add(time.Until(exp) * 2 / 3)
		secret := kube.Secret(ns, SecretName, string(corev1.SecretTypeOpaque), nil, map[string][]byte{
			fleetv1alpha1.KeyKubeconfig:   kubeconfig,
			fleetv1alpha1.KeyAPIServerURL: []byte(r.LocalConfig.Host),
			fleetv1alpha1.KeyAPIServerCA:  ca,
			keyRenewAt:                    []byte(renewAt.UTC().Format(time.RFC3339)),
		})
		if err := kube.Apply(ctx, r.Client, secret); err != nil {
			return ctrl.Result{}, fmt.Errorf("apply local kubeconfig secret: %w", err)
		}
	}
	c := &fleetv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fleetv1alpha1.LocalClusterName, Labels: map[string]string{"name": "local"}},
		Spec:       fleetv1alpha1.ClusterSpec{KubeConfigSecret: SecretName, AgentNamespace: r.AgentNamespace},
	}
	if err := r.Client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("create local cluster: %w", err)
	}
	if bindErr != nil {
		return ctrl.Result{}, bindErr
	}
	return ctrl.Result{RequeueAfter: max(time.Until(renewAt), time.Second)}, nil
}

// keyRenewAt in the local kubeconfig Secret is when its token is renewed.
const keyRenewAt = "renewAt"

// current reports whether the local kubeconfig Secret holds a token not yet due for renewal
// for the current endpoint, and when it is due.
func (r *Reconciler) current(ctx context.Context, ns string, ca []byte) (time.Time, bool, error) {
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: SecretName}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return time.Time{}, false, nil
		}
		return time.Time{}, false, fmt.Errorf("get local kubeconfig secret: %w", err)
	}
	at, err := time.Parse(time.RFC3339, string(s.Data[keyRenewAt]))
	if err != nil || !time.Now().Before(at) || string(s.Data[fleetv1alpha1.KeyAPIServerURL]) != r.LocalConfig.Host ||
		string(s.Data[fleetv1alpha1.KeyAPIServerCA]) != string(ca) {
		return time.Time{}, false, nil
	}
	return at, true, nil
}

// ensureBinding makes sure the local agent's ServiceAccount is bound to cluster-admin, creating
// the binding only when it is missing (read uncached: drover does not watch bindings).
func (r *Reconciler) ensureBinding(ctx context.Context, ns string) error {
	name := BindingName
	if ns != fleetv1alpha1.LocalWorkspaceNamespace {
		name += "-" + ns
	}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{})
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("get cluster role binding %s: %w", name, err)
		}
		return nil
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: kube.ManagedLabels(nil)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: ServiceAccountName}},
	}
	if err := r.Client.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the local agent's ServiceAccount %s/%s needs the ClusterRoleBinding %s to cluster-admin to install the agent, and drover may not create it (%w): "+
			"install with the chart (registerLocal) or run kubectl create clusterrolebinding %s --clusterrole=cluster-admin --serviceaccount=%s:%s",
			ns, ServiceAccountName, name, err, name, ns, ServiceAccountName)
	}
	return nil
}

// caOf returns the PEM CA of a rest config: inline, or read from its file (in a pod, the
// in-cluster config names /var/run/secrets/kubernetes.io/serviceaccount/ca.crt).
func caOf(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, nil
	}
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read the CA of the cluster drover runs in: %w", err)
	}
	return ca, nil
}

// TokenKubeconfig renders a kubeconfig authenticating with a bearer token.
func TokenKubeconfig(host string, ca []byte, token string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	kc.AuthInfos["local"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "local"}
	kc.CurrentContext = "local"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("render local kubeconfig: %w", err)
	}
	return b, nil
}

// Kubeconfig renders a rest.Config (token or client-certificate auth) as a kubeconfig.
func Kubeconfig(cfg *rest.Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["local"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "local"}
	kc.CurrentContext = "local"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("render local kubeconfig: %w", err)
	}
	return b, nil
}
