// Package distsim is a small, deterministic stand-in for rke2 and rke in a test cluster. It
// reacts to configuration changes (the provisioning Cluster's generation for RKE2, the apply
// and Helm commands for RKE1) the way the distribution would as far as the migration can see:
// kube-controller-manager mirror pods and their flags, the migration and CCM Leases, the CCM
// DaemonSet rendered from the chart values, and nodes. It can misbehave on purpose.
//
// The migration tests use it, and so does drover server --demo, whose downstream clusters play
// RKE2 clusters on AWS with it: it is a simulator (like pkg/cloudsim), not a distribution.
package distsim

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/droverhq/drover/internal/migration/checks"
	"github.com/droverhq/drover/internal/migration/rke2"
)

// Misbehaviour makes the simulated distribution fail in one way.
type Misbehaviour string

// Misbehaviours.
const (
	// RenameNode: at the provider switch, the first worker re-registers under a new name.
	RenameNode Misbehaviour = "RenameNode"
	// DropProviderID: at the switch, the first worker re-registers without a ProviderID and
	// keeps the uninitialized taint (the CCM cannot find its instance).
	DropProviderID Misbehaviour = "DropProviderID"
	// NeverAcquireLease: kube-controller-manager never takes the migration Lease.
	NeverAcquireLease Misbehaviour = "NeverAcquireLease"
	// DaemonSetNeverReady: the CCM DaemonSet selects no node.
	DaemonSetNeverReady Misbehaviour = "DaemonSetNeverReady"
	// LoadBalancerSyncFails: at the switch, the CCM fails to sync the LoadBalancer Service
	// (a SyncLoadBalancerFailed event, as with a missing IAM permission).
	LoadBalancerSyncFails Misbehaviour = "LoadBalancerSyncFails"
)

// ClusterLabel labels every node and Service of one simulated cluster.
const ClusterLabel = "distsim.drover.io/cluster"

// ProvisioningCRD is a minimal stand-in for Rancher's provisioning.cattle.io/v1 Cluster CRD
// (YAML), for clusters without Rancher that hold RKE2 provisioning Clusters.
//
//go:embed provisioning-crd.yaml
var ProvisioningCRD []byte

// Options configures a simulated cluster.
type Options struct {
	// Client is the simulated cluster: its nodes, control-plane pods, Leases and Services.
	Client client.Client
	// Management holds the RKE2 provisioning Cluster (Provisioning), as Rancher's cluster
	// would; default Client (one cluster playing both).
	Management client.Client
	// Name tells simulated clusters apart (label value, node-name octet).
	Name string
	// Octet is the second IP octet in node names; distinct per cluster.
	Octet int
	// Namespace stands in for kube-system.
	Namespace string
	// RKE2 selects rke2 (Provisioning is then watched); otherwise rke1.
	RKE2         bool
	Provisioning types.NamespacedName
	// ControlPlanes and Workers are node counts.
	ControlPlanes, Workers int
	Misbehave              Misbehaviour
	// Interval is how often Run looks at the configuration and renews the Leases (default
	// 50 ms; Leases are renewed at most once a second).
	Interval time.Duration
	// Log receives Run's errors (default: standard error).
	Log logr.Logger
}

// Sim is one simulated distribution.
type Sim struct {
	o Options

	mu      sync.Mutex
	state   config
	applied int64 // last applied Cluster generation (rke2)
	applies int
}

type config struct {
	provider string
	kcmLM    bool
	ccm      bool
	ccmArgs  []string
	ccmTag   string
	k8s      string
	switched bool // the node misbehaviour already happened
}

// New returns a simulator; call Setup, then Run.
func New(o Options) *Sim {
	if o.Management == nil {
		o.Management = o.Client
	}
	if o.Interval <= 0 {
		o.Interval = 50 * time.Millisecond
	}
	return &Sim{o: o}
}

// Selector selects this cluster's nodes and Services.
func (s *Sim) Selector() string { return ClusterLabel + "=" + s.o.Name }

// NodeName is the i-th node's name (EC2 private DNS style).
func (s *Sim) NodeName(i int) string {
	return fmt.Sprintf("ip-10-%d-0-%d.us-west-2.compute.internal", s.o.Octet, i+1)
}

func (s *Sim) cpLabel() (string, string) {
	if s.o.RKE2 {
		return "node-role.kubernetes.io/control-plane", "true"
	}
	return "node-role.kubernetes.io/controlplane", "true"
}

// Applies is how many times the distribution applied a configuration.
func (s *Sim) Applies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applies
}

// Setup creates the nodes (in-tree: with ProviderIDs), a LoadBalancer Service with an
// ingress, and for RKE2 the mirror pods of the current configuration.
func (s *Sim) Setup(ctx context.Context, provider string, kcmLM bool) error {
	k, v := s.cpLabel()
	for i := range s.o.ControlPlanes + s.o.Workers {
		labels := map[string]string{ClusterLabel: s.o.Name}
		if i < s.o.ControlPlanes {
			labels[k] = v
		}
		if err := s.createNode(ctx, s.NodeName(i), labels, s.providerID(i), false); err != nil {
			return err
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.o.Namespace, Name: "web", Labels: map[string]string{ClusterLabel: s.o.Name}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}},
			AllocateLoadBalancerNodePorts: ptr.To(false)},
	}
	if err := s.o.Client.Create(ctx, svc); err != nil {
		return fmt.Errorf("create service: %w", err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: s.o.Name + "-web.elb.us-west-2.amazonaws.com"}}
	if err := s.o.Client.Status().Update(ctx, svc); err != nil {
		return fmt.Errorf("set service ingress: %w", err)
	}
	s.state = config{provider: provider, kcmLM: kcmLM}
	return s.apply(ctx, s.state)
}

func (s *Sim) providerID(i int) string {
	return fmt.Sprintf("aws:///us-west-2a/i-%02x%015x", s.o.Octet, i+1)
}

func (s *Sim) createNode(ctx context.Context, name string, labels map[string]string, pid string, uninit bool) error {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Spec:       corev1.NodeSpec{ProviderID: pid},
	}
	if uninit {
		n.Spec.Taints = []corev1.Taint{{Key: checks.UninitializedTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	if err := s.o.Client.Create(ctx, n); err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}

// Run reconciles until ctx ends: for RKE2 it applies new Cluster generations; for both it
// renews the Leases the running components would hold.
func (s *Sim) Run(ctx context.Context) {
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		if s.o.RKE2 {
			if err := s.syncProvisioning(ctx); err != nil && ctx.Err() == nil {
				s.logError(err, "sync provisioning Cluster")
			}
		}
		s.mu.Lock()
		st := s.state
		s.mu.Unlock()
		if s.o.RKE2 { // the kubelet keeps mirror pods present, whoever deleted them
			if err := s.mirrorPods(ctx, st); err != nil && ctx.Err() == nil {
				s.logError(err, "mirror pods")
			}
		}
		if err := s.renewLeases(ctx, st); err != nil && ctx.Err() == nil {
			s.logError(err, "renew leases")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sim) logError(err error, what string) {
	if s.o.Log.GetSink() != nil {
		s.o.Log.Error(err, "Simulated distribution: "+what, "cluster", s.o.Name)
		return
	}
	fmt.Fprintf(os.Stderr, "distsim %s: %s: %v\n", s.o.Name, what, err)
}

func (s *Sim) syncProvisioning(ctx context.Context) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rke2.ClusterGVK)
	if err := s.o.Management.Get(ctx, s.o.Provisioning, u); err != nil {
		return err
	}
	if u.GetGeneration() == s.applied {
		return nil
	}
	doc, err := sigsyaml.Marshal(u.Object)
	if err != nil {
		return err
	}
	st, err := parseRKE2(doc)
	if err != nil {
		return err
	}
	if err := s.Apply(ctx, st); err != nil {
		return err
	}
	s.applied = u.GetGeneration()
	_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True"}}, "status", "conditions")
	return s.o.Management.Status().Update(ctx, u)
}

func parseRKE2(doc []byte) (config, error) {
	var c struct {
		Spec struct {
			KubernetesVersion string `json:"kubernetesVersion"`
			RKEConfig         struct {
				MachineGlobalConfig   map[string]any `json:"machineGlobalConfig"`
				MachineSelectorConfig []struct {
					Config map[string]any `json:"config"`
				} `json:"machineSelectorConfig"`
				AdditionalManifest string `json:"additionalManifest"`
			} `json:"rkeConfig"`
		} `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(doc, &c); err != nil {
		return config{}, err
	}
	rc := c.Spec.RKEConfig
	st := config{k8s: c.Spec.KubernetesVersion}
	st.provider, _ = rc.MachineGlobalConfig["cloud-provider-name"].(string)
	for _, e := range rc.MachineSelectorConfig {
		args, _ := e.Config["kube-controller-manager-arg"].([]any)
		for _, a := range args {
			st.kcmLM = st.kcmLM || a == "enable-leader-migration"
		}
	}
	for _, d := range rke2.SplitDocs(rc.AdditionalManifest) {
		if !rke2.IsCCMChart(d) {
			continue
		}
		var hc struct {
			Spec struct {
				ValuesContent string `json:"valuesContent"`
			} `json:"spec"`
		}
		if err := sigsyaml.Unmarshal([]byte(d), &hc); err != nil {
			return config{}, err
		}
		st.ccm = true
		st.ccmArgs, st.ccmTag = parseValues([]byte(hc.Spec.ValuesContent))
	}
	return st, nil
}

func parseValues(values []byte) ([]string, string) {
	var v struct {
		Args  []string `json:"args"`
		Image struct {
			Tag string `json:"tag"`
		} `json:"image"`
	}
	_ = sigsyaml.Unmarshal(values, &v)
	return v.Args, v.Image.Tag
}

// Apply makes the cluster match st, as the distribution would after a configuration change.
func (s *Sim) Apply(ctx context.Context, st config) error {
	s.mu.Lock()
	st.switched = s.state.switched
	s.applies++
	s.mu.Unlock()
	if err := s.apply(ctx, st); err != nil {
		return err
	}
	s.mu.Lock()
	if st.provider != "aws" {
		st.switched = true
	}
	s.state = st
	s.mu.Unlock()
	return nil
}

func (s *Sim) apply(ctx context.Context, st config) error {
	if s.o.RKE2 {
		if err := s.mirrorPods(ctx, st); err != nil {
			return err
		}
	}
	if err := s.daemonSet(ctx, st); err != nil {
		return err
	}
	if st.provider != "aws" && !st.switched {
		return s.switchNodes(ctx)
	}
	return nil
}

// mirrorPods replaces each control-plane node's kube-controller-manager mirror pod when its
// flags change (as the kubelet restarts a changed static pod).
func (s *Sim) mirrorPods(ctx context.Context, st config) error {
	args := []string{"kube-controller-manager", "--cloud-provider=" + st.provider}
	if st.kcmLM {
		args = append(args, "--enable-leader-migration")
	}
	for i := range s.o.ControlPlanes {
		name := "kube-controller-manager-" + s.NodeName(i)
		p := &corev1.Pod{}
		err := s.o.Client.Get(ctx, client.ObjectKey{Namespace: s.o.Namespace, Name: name}, p)
		if err == nil && slices.Equal(p.Spec.Containers[0].Command, args) {
			continue
		}
		if err == nil {
			if err := s.o.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return err
			}
			if err := s.waitGone(ctx, p); err != nil {
				return err
			}
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		p = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.o.Namespace, Name: name,
				Labels:      map[string]string{"component": "kube-controller-manager", "tier": "control-plane"},
				Annotations: map[string]string{"kubernetes.io/config.mirror": "distsim"}},
			Spec: corev1.PodSpec{NodeName: s.NodeName(i), Containers: []corev1.Container{{Name: "kube-controller-manager", Image: "rancher/hardened-kubernetes", Command: args}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		}
		if err := s.o.Client.Create(ctx, p); err != nil {
			return fmt.Errorf("create mirror pod %s: %w", name, err)
		}
	}
	return nil
}

func (s *Sim) waitGone(ctx context.Context, obj client.Object) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		err := s.o.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s still exists", obj.GetName())
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// daemonSet renders the chart as helm-controller would: the DaemonSet on control-plane nodes.
func (s *Sim) daemonSet(ctx context.Context, st config) error {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: s.o.Namespace, Name: checks.CCMDaemonSet}}
	if !st.ccm {
		return client.IgnoreNotFound(s.o.Client.Delete(ctx, ds))
	}
	k, v := s.cpLabel()
	sel := map[string]string{k: v, ClusterLabel: s.o.Name}
	if s.o.Misbehave == DaemonSetNeverReady {
		sel["distsim.drover.io/never"] = "true"
	}
	labels := map[string]string{"app.kubernetes.io/name": checks.CCMDaemonSet}
	_, err := ctrlCreateOrUpdate(ctx, s.o.Client, ds, func() {
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		ds.Spec.Template.Labels = labels
		ds.Spec.Template.Spec.NodeSelector = sel
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		ds.Spec.Template.Spec.Containers = []corev1.Container{{
			Name: "aws-cloud-controller-manager", Image: "registry.k8s.io/provider-aws/cloud-controller-manager:" + st.ccmTag,
			Args: st.ccmArgs,
		}}
	})
	return err
}

func ctrlCreateOrUpdate(ctx context.Context, c client.Client, ds *appsv1.DaemonSet, mutate func()) (bool, error) {
	err := c.Get(ctx, client.ObjectKeyFromObject(ds), ds)
	if apierrors.IsNotFound(err) {
		mutate()
		return true, c.Create(ctx, ds)
	}
	if err != nil {
		return false, err
	}
	mutate()
	return false, c.Update(ctx, ds)
}

// switchNodes applies the node-level misbehaviours of the provider switch.
func (s *Sim) switchNodes(ctx context.Context) error {
	if s.o.Misbehave == LoadBalancerSyncFails {
		return s.loadBalancerSyncFailed(ctx)
	}
	if s.o.Misbehave != RenameNode && s.o.Misbehave != DropProviderID {
		return nil
	}
	i := s.o.ControlPlanes // first worker
	old := &corev1.Node{}
	if err := s.o.Client.Get(ctx, client.ObjectKey{Name: s.NodeName(i)}, old); err != nil {
		return err
	}
	if err := s.o.Client.Delete(ctx, old); err != nil {
		return err
	}
	if err := s.waitGone(ctx, old); err != nil {
		return err
	}
	labels := map[string]string{ClusterLabel: s.o.Name}
	if s.o.Misbehave == RenameNode {
		return s.createNode(ctx, fmt.Sprintf("%s-worker-%d", s.o.Name, i), labels, s.providerID(i), false)
	}
	return s.createNode(ctx, s.NodeName(i), labels, "", true)
}

// loadBalancerSyncFailed records the event the CCM's service controller emits when it cannot
// reconcile the load balancer.
func (s *Sim) loadBalancerSyncFailed(ctx context.Context) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: s.o.Namespace, Name: "web.distsim-lb-sync"},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: s.o.Namespace, Name: "web"},
		Reason:         checks.LoadBalancerSyncFailed, Type: corev1.EventTypeWarning,
		Message:        "Error syncing load balancer: failed to ensure load balancer: AccessDenied: elasticloadbalancing:DescribeLoadBalancers",
		Source:         corev1.EventSource{Component: "service-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := s.o.Client.Create(ctx, ev); err != nil {
		return fmt.Errorf("create event: %w", err)
	}
	return nil
}

// renewLeases holds the Leases the running components would hold.
func (s *Sim) renewLeases(ctx context.Context, st config) error {
	holder := func(who string) string { return s.NodeName(0) + "_" + who }
	if st.ccm {
		if err := s.renew(ctx, checks.CCMLease, holder("ccm")); err != nil {
			return err
		}
	}
	switch {
	case st.provider == "aws" && st.kcmLM && s.o.Misbehave != NeverAcquireLease:
		return s.renew(ctx, checks.MigrationLease, holder("kcm"))
	case st.provider != "aws" && st.ccm && slices.Contains(st.ccmArgs, "--enable-leader-migration=true"):
		return s.renew(ctx, checks.MigrationLease, holder("ccm"))
	}
	return nil
}

func (s *Sim) renew(ctx context.Context, name, holder string) error {
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{}
	err := s.o.Client.Get(ctx, client.ObjectKey{Namespace: s.o.Namespace, Name: name}, l)
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.o.Namespace, Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr.To[int32](15), AcquireTime: &now, RenewTime: &now}}
		return s.o.Client.Create(ctx, l)
	}
	if err != nil {
		return err
	}
	if l.Spec.RenewTime != nil && now.Sub(l.Spec.RenewTime.Time) < time.Second && ptr.Deref(l.Spec.HolderIdentity, "") == holder {
		return nil // renew once a second, like a leader elector's retry period
	}
	l.Spec.HolderIdentity, l.Spec.RenewTime = &holder, &now
	return s.o.Client.Update(ctx, l)
}

// Runner handles the commands drover runs: `rke up --config <file>` applies cluster.yml;
// `helm upgrade --install … --values <file>` installs the chart; `helm uninstall` removes it;
// `kubectl apply -f <file>` (RKE2 manifests on disk) writes the provisioning Cluster's spec,
// which Run then applies as Rancher would. Anything else fails.
func (s *Sim) Runner(ctx context.Context, argv []string) error {
	switch {
	case len(argv) >= 4 && argv[0] == "kubectl" && argv[1] == "apply" && s.o.RKE2:
		return s.kubectlApply(ctx, flagValue(argv, "-f"))
	case len(argv) >= 3 && argv[0] == "rke" && argv[1] == "up":
		path := flagValue(argv, "--config")
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		st, err := parseRKE1(data)
		if err != nil {
			return err
		}
		s.mu.Lock()
		st.ccm, st.ccmArgs, st.ccmTag = s.state.ccm, s.state.ccmArgs, s.state.ccmTag
		s.mu.Unlock()
		return s.Apply(ctx, st)
	case len(argv) >= 2 && argv[0] == "helm" && argv[1] == "upgrade":
		data, err := os.ReadFile(flagValue(argv, "--values"))
		if err != nil {
			return err
		}
		s.mu.Lock()
		st := s.state
		s.mu.Unlock()
		st.ccm = true
		st.ccmArgs, st.ccmTag = parseValues(data)
		return s.Apply(ctx, st)
	case len(argv) >= 2 && argv[0] == "helm" && argv[1] == "uninstall":
		s.mu.Lock()
		st := s.state
		s.mu.Unlock()
		st.ccm = false
		return s.Apply(ctx, st)
	}
	return fmt.Errorf("distsim: unknown command %q", strings.Join(argv, " "))
}

// kubectlApply replaces the spec of the Cluster named in the manifest at path.
func (s *Sim) kubectlApply(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	in := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal(data, &in.Object); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rke2.ClusterGVK)
	if err := s.o.Management.Get(ctx, client.ObjectKey{Namespace: in.GetNamespace(), Name: in.GetName()}, u); err != nil {
		return err
	}
	u.Object["spec"] = in.Object["spec"]
	if rv := in.GetResourceVersion(); rv != "" {
		// As kubectl apply: a resourceVersion in the manifest is a precondition (a manifest
		// exported with `kubectl get -o yaml` fails with a Conflict once the object changed).
		u.SetResourceVersion(rv)
	}
	return s.o.Management.Update(ctx, u)
}

func flagValue(argv []string, name string) string {
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}

func parseRKE1(doc []byte) (config, error) {
	var c struct {
		KubernetesVersion string `json:"kubernetes_version"`
		CloudProvider     struct {
			Name string `json:"name"`
		} `json:"cloud_provider"`
		Services struct {
			KubeController struct {
				ExtraArgs map[string]string `json:"extra_args"`
			} `json:"kube-controller"`
		} `json:"services"`
	}
	if err := sigsyaml.Unmarshal(doc, &c); err != nil {
		return config{}, fmt.Errorf("parse cluster.yml: %w", err)
	}
	return config{
		provider: c.CloudProvider.Name, k8s: c.KubernetesVersion,
		kcmLM: c.Services.KubeController.ExtraArgs["enable-leader-migration"] == "true",
	}, nil
}
