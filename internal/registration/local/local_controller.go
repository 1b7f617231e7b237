// Package local registers the management cluster itself as the Cluster "local" in drover-local,
// the same way as a manager-initiated import: a kubeconfig secret built from drover's own
// credentials, with apiServerURL/apiServerCA overrides so the local agent reaches drover directly.
package local

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
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

// DefaultAgentNamespace keeps the local agent apart from an agent of another management cluster.
const DefaultAgentNamespace = "drover-local-agent"

// Reconciler keeps the local Cluster and its kubeconfig secret in place.
type Reconciler struct {
	Client client.Client
	// LocalConfig is drover's own credential for the cluster it runs in (in-cluster config).
	LocalConfig *rest.Config
	// AgentNamespace defaults to drover-local-agent.
	AgentNamespace string
}

// SetupWithManager registers the controller; it runs once at start and whenever the local
// Cluster changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.LocalConfig == nil {
		return errors.New("local reconciler: Client and LocalConfig are required")
	}
	if r.AgentNamespace == "" {
		r.AgentNamespace = DefaultAgentNamespace
	}
	kick := make(chan event.TypedGenericEvent[*fleetv1alpha1.Cluster], 1)
	kick <- event.TypedGenericEvent[*fleetv1alpha1.Cluster]{Object: &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: fleetv1alpha1.LocalWorkspaceNamespace, Name: fleetv1alpha1.LocalClusterName}}}
	isLocal := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == fleetv1alpha1.LocalWorkspaceNamespace && o.GetName() == fleetv1alpha1.LocalClusterName
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("localcluster").
		For(&fleetv1alpha1.Cluster{}, builder.WithPredicates(isLocal)).
		WatchesRawSource(source.Channel(kick, &handler.TypedEnqueueRequestForObject[*fleetv1alpha1.Cluster]{})).
		Complete(r)
}

// Reconcile ensures the namespace, the kubeconfig secret and the Cluster "local".
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	ns := fleetv1alpha1.LocalWorkspaceNamespace
	if err := kube.EnsureNamespace(ctx, r.Client, ns, nil); err != nil {
		return ctrl.Result{}, err
	}
	kubeconfig, err := Kubeconfig(r.LocalConfig)
	if err != nil {
		return ctrl.Result{}, err
	}
	secret := kube.Secret(ns, SecretName, string(corev1.SecretTypeOpaque), nil, map[string][]byte{
		fleetv1alpha1.KeyKubeconfig:   kubeconfig,
		fleetv1alpha1.KeyAPIServerURL: []byte(r.LocalConfig.Host),
		fleetv1alpha1.KeyAPIServerCA:  r.LocalConfig.CAData,
	})
	if err := kube.Apply(ctx, r.Client, secret); err != nil {
		return ctrl.Result{}, fmt.Errorf("apply local kubeconfig secret: %w", err)
	}
	c := &fleetv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fleetv1alpha1.LocalClusterName, Labels: map[string]string{"name": "local"}},
		Spec:       fleetv1alpha1.ClusterSpec{KubeConfigSecret: SecretName, AgentNamespace: r.AgentNamespace},
	}
	if err := r.Client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("create local cluster: %w", err)
	}
	return ctrl.Result{}, nil
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
