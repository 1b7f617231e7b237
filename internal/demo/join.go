package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/hosted/join"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// The hosted cluster that joins the fleet: HostedJoined's Kubernetes API is a real
// kube-apiserver (with controller-manager, scheduler and kwok nodes) that authenticates EKS tokens through the EKS
// simulator's TokenReview webhook, as EKS's API server does. Once the cluster is active in the
// simulator, the demo points it at that API server and sets spec.fleet.join: drover gets an EKS
// token, writes the kubeconfig Secret, creates the fleet Cluster, deploys the agent, and
// ProviderBundle, targeted at every EKS cluster by label, reaches it.
const (
	HostedJoined = HostedAdopted
	// ProviderBundle is the Bundle for every EKS cluster of the fleet (a ConfigMap).
	ProviderBundle = "eks-hello"
)

// startBacking starts the API server behind HostedJoined, with the EKS simulator at eksURL as
// its token webhook.
func startBacking(ctx context.Context, binDir, dir, eksURL string) (*downstream, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	webhook := filepath.Join(dir, "token-webhook.kubeconfig")
	if err := os.WriteFile(webhook, simcore.WebhookKubeconfig(eksURL+simcore.TokenReviewPath(HostedJoined), nil), 0o600); err != nil {
		return nil, fmt.Errorf("write the token webhook config: %w", err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: binDir, DataDir: dir, UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Kwok: true,
		APIServerArgs: []string{"--authentication-token-webhook-config-file=" + webhook, "--authentication-token-webhook-version=v1"}})
	if err != nil {
		return nil, fmt.Errorf("start the API server of %s: %w", HostedJoined, err)
	}
	kc, err := os.ReadFile(cp.KubeconfigPath())
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("read the kubeconfig of %s: %w", HostedJoined, err)
	}
	return &downstream{name: HostedJoined, cp: cp, config: cp.RESTConfig(), kubeconfig: kc}, nil
}

// joinHosted points HostedJoined at its API server once it is active, lets it join the fleet,
// and runs its agent in this process once drover has deployed it.
func (d *Demo) joinHosted(ctx context.Context, c client.Client, ds *downstream) error {
	if _, err := waitActive(ctx, c, HostedJoined); err != nil {
		return err
	}
	ca := ds.config.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(ds.cp.CAFile()); err != nil {
			return fmt.Errorf("read the CA of %s: %w", HostedJoined, err)
		}
	}
	backend := &simcore.Backend{Name: HostedJoined, Endpoint: ds.cp.URL(), CAPEM: ca}
	if err := d.sims.eks.SetBackend(eksRegion, HostedJoined, backend); err != nil {
		return fmt.Errorf("point %s at its API server: %w", HostedJoined, err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"fleet":{"join":true}}}`))
	if err := c.Patch(ctx, &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: HostedJoined}}, patch); err != nil {
		return fmt.Errorf("let %s join the fleet: %w", HostedJoined, err)
	}
	down, err := client.New(ds.config, client.Options{Scheme: server.Scheme()})
	if err != nil {
		return fmt.Errorf("client for %s: %w", HostedJoined, err)
	}
	// The node group's two nodes, which kwok makes Ready and whose pods it "runs" (the
	// agent's, so its Deployment and the agent Bundle become ready).
	for i := range 2 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ip-10-0-9-%d.%s.compute.internal", 11+i, eksRegion),
			Labels:      map[string]string{"eks.amazonaws.com/nodegroup": "general", "kubernetes.io/os": "linux", "topology.kubernetes.io/region": eksRegion},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%sa/i-0de70%012x", eksRegion, i+1)}}
		if err := create(ctx, down, n); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, 2*time.Minute, func() error {
		return down.Get(ctx, client.ObjectKey{Namespace: manifests.DefaultNamespace, Name: manifests.BootstrapSecret}, &corev1.Secret{})
	}); err != nil {
		return fmt.Errorf("drover did not deploy the agent of %s: %w", HostedJoined, err)
	}
	// The agent's pod would run with its ServiceAccount; with no kubelet here, it runs in this
	// process with the API server's admin identity, as the fleet clusters' agents do.
	d.agents.Add(1)
	go func() {
		defer d.agents.Done()
		actx := ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithName("agent").WithValues("cluster", HostedJoined))
		_ = agent.Run(actx, agent.Options{Config: ds.config, Namespace: manifests.DefaultNamespace, Identity: "demo-" + HostedJoined,
			HeartbeatInterval: d.o.AgentHeartbeat, RetryMin: time.Second, RetryMax: 5 * time.Second})
	}()
	return nil
}

// joinedReady returns nil once HostedJoined is in the fleet with its agent and ProviderBundle is
// ready on it.
func joinedReady(ctx context.Context, c client.Reader) error {
	h := &v1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: HostedJoined}, h); err != nil {
		return err
	}
	if h.Status.Fleet == nil || !meta.IsStatusConditionTrue(h.Status.Fleet.Conditions, v1.ConditionAgentReady) {
		return fmt.Errorf("hosted cluster %s has not joined the fleet with its agent yet", HostedJoined)
	}
	b := &fleetv1.Bundle{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ProviderBundle}, b); err != nil {
		return err
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1.ConditionReady) || b.Status.Summary.Ready != 1 {
		return fmt.Errorf("bundle %s: ready on %d of 1 EKS cluster", ProviderBundle, b.Status.Summary.Ready)
	}
	return nil
}

// providerBundle is a ConfigMap for every EKS cluster of the fleet, targeted by the label the
// join gives a hosted cluster's fleet Cluster.
func providerBundle() *fleetv1.Bundle {
	objs := []k8sruntime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "eks-hello"}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "eks-hello", Name: "greeting"},
			Data: map[string]string{"message": "Hello from drover to every EKS cluster it runs"}},
	}
	resources := raw(objs)
	return &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ProviderBundle},
		Spec: fleetv1.BundleSpec{Resources: resources,
			Targets: []fleetv1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{join.LabelProvider: "eks"}}}}}}
}
