// Package checks inspects a downstream cluster through client-go for the cloud-provider
// migration: nodes, controller-manager flags, leases, permissions, the CCM DaemonSet and
// LoadBalancer ingresses. Every failure says what is wrong, where, and what to do.
package checks

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// Well-known names.
const (
	MigrationLease     = "cloud-provider-extraction-migration"
	CCMLease           = "cloud-controller-manager"
	CCMDaemonSet       = "aws-cloud-controller-manager"
	UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"
	// DefaultKCMIdentity is the user kube-controller-manager authenticates as.
	DefaultKCMIdentity = "system:kube-controller-manager"
)

var (
	providerIDRE = regexp.MustCompile(`^aws:///[^/]*/i-[0-9a-f]+$`)
	// EC2 private DNS names (ip-10-0-0-1.ec2.internal, ip-10-0-0-1.us-west-2.compute.internal)
	// and resource-based names (i-0123…): the names the CCM can find instances by.
	ec2NameRE = regexp.MustCompile(`^(ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}\.(ec2\.internal|[a-z0-9-]+\.compute\.internal)|i-[0-9a-f]+(\.[a-z0-9.-]+)?)$`)
)

// Problem is a failed check. Permanent problems stop the migration at once; others may clear
// while waiting (a rollout in progress) and only fail when the step times out.
type Problem struct {
	Permanent bool
	Msg       string
}

func (p *Problem) Error() string { return p.Msg }

func waiting(format string, a ...any) error { return &Problem{Msg: fmt.Sprintf(format, a...)} }
func fatal(format string, a ...any) error {
	return &Problem{Permanent: true, Msg: fmt.Sprintf(format, a...)}
}

// IsPermanent reports whether err is a permanent Problem.
func IsPermanent(err error) bool {
	var p *Problem
	return errors.As(err, &p) && p.Permanent
}

// Checker runs checks against one downstream cluster.
type Checker struct {
	Client kubernetes.Interface
	// Namespace holds the control-plane pods, the leases and the CCM (kube-system).
	Namespace string
	// Selector limits the nodes and LoadBalancer Services considered (empty: all).
	Selector string
	// KCMIdentity is the user kube-controller-manager runs as.
	KCMIdentity string
	// Now is the clock for lease renewal (time.Now if nil).
	Now func() time.Time
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Nodes lists the nodes in scope, sorted by name.
func (c *Checker) Nodes(ctx context.Context) ([]corev1.Node, error) {
	l, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: c.Selector})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	slices.SortFunc(l.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return l.Items, nil
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Eligibility is the node part of the preflight: every node Ready, with an AWS ProviderID, and
// named so the external CCM finds its instance (names the kubelet keeps after the switch).
// keepsName lets a distribution vouch for a name (RKE1 hostname_override).
func Eligibility(nodes []corev1.Node, keepsName func(node string) bool) []string {
	var out []string
	if len(nodes) == 0 {
		return []string{"no nodes found: check the downstream kubeconfig points at the cluster being migrated"}
	}
	for i := range nodes {
		n := &nodes[i]
		if !isReady(n) {
			out = append(out, fmt.Sprintf("node %s is not Ready: fix or remove it before migrating; the switch restarts every kubelet", n.Name))
		}
		if !providerIDRE.MatchString(n.Spec.ProviderID) {
			out = append(out, fmt.Sprintf("node %s has ProviderID %q, want aws:///<zone>/<instance-id>: the external CCM could not find its instance; start its kubelet with --cloud-provider=aws (in-tree) so it sets the ProviderID, then re-run the plan", n.Name, n.Spec.ProviderID))
		}
		if !ec2NameRE.MatchString(n.Name) && (keepsName == nil || !keepsName(n.Name)) {
			out = append(out, fmt.Sprintf("node %s is not named after its EC2 private DNS name or instance ID, so its name would change after the switch (a new Node would register): pin the name (RKE2 node-name, RKE1 hostname_override) before migrating", n.Name))
		}
	}
	return out
}

// NodeFacts records the nodes; controlPlane is the control-plane label key=value.
func NodeFacts(nodes []corev1.Node, controlPlane string) []migrationv1alpha1.NodeFact {
	k, v, _ := strings.Cut(controlPlane, "=")
	out := make([]migrationv1alpha1.NodeFact, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, migrationv1alpha1.NodeFact{
			Name: n.Name, ProviderID: n.Spec.ProviderID,
			ControlPlane: n.Labels[k] == v, WasUnschedulable: n.Spec.Unschedulable,
		})
	}
	return out
}

// LeasePermission checks with a SubjectAccessReview that the controller-manager identity may
// get, create and update the migration Lease.
func (c *Checker) LeasePermission(ctx context.Context) error {
	id := c.KCMIdentity
	if id == "" {
		id = DefaultKCMIdentity
	}
	var missing []string
	for _, verb := range []string{"get", "create", "update"} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: id,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: c.Namespace, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: MigrationLease,
			},
		}}
		res, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("review lease permission of %s: %w", id, err)
		}
		if !res.Status.Allowed {
			missing = append(missing, verb)
		}
	}
	if len(missing) > 0 {
		return fatal("%s may not %s leases/%s in %s: grant it (patch Role system::leader-locking-kube-controller-manager, or add a Role and RoleBinding for that lease name), or migrate without leader migration",
			id, strings.Join(missing, ", "), MigrationLease, c.Namespace)
	}
	return nil
}

// LoadBalancers records every LoadBalancer Service's ingress.
func (c *Checker) LoadBalancers(ctx context.Context) ([]migrationv1alpha1.LoadBalancerFact, error) {
	l, err := c.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: c.Selector})
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	var out []migrationv1alpha1.LoadBalancerFact
	for _, s := range l.Items {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		var ing []string
		for _, i := range s.Status.LoadBalancer.Ingress {
			ing = append(ing, i.Hostname+i.IP)
		}
		slices.Sort(ing)
		out = append(out, migrationv1alpha1.LoadBalancerFact{Namespace: s.Namespace, Name: s.Name, Ingress: ing})
	}
	slices.SortFunc(out, func(a, b migrationv1alpha1.LoadBalancerFact) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// LoadBalancersUnchanged compares the ingresses with the recorded ones.
func (c *Checker) LoadBalancersUnchanged(ctx context.Context, before []migrationv1alpha1.LoadBalancerFact) error {
	now, err := c.LoadBalancers(ctx)
	if err != nil {
		return err
	}
	cur := map[string][]string{}
	for _, lb := range now {
		cur[lb.Namespace+"/"+lb.Name] = lb.Ingress
	}
	for _, lb := range before {
		key := lb.Namespace + "/" + lb.Name
		got, ok := cur[key]
		if !ok {
			continue // deleted by its owner: not the migration's business
		}
		if !slices.Equal(got, lb.Ingress) {
			return fatal("LoadBalancer Service %s changed ingress from %v to %v after the switch: the CCM is managing a different load balancer; check its service annotations (aws-load-balancer-type) and roll back while below 1.27", key, lb.Ingress, got)
		}
	}
	return nil
}

// LoadBalancerSyncFailed is the event reason of a cloud controller that failed to reconcile a
// LoadBalancer Service.
const LoadBalancerSyncFailed = "SyncLoadBalancerFailed"

// NoLoadBalancerSyncFailures fails if a recorded LoadBalancer Service got a
// SyncLoadBalancerFailed event at or after since (the switch): the CCM could not manage a load
// balancer the in-tree provider managed, typically for missing IAM permissions or cluster tags.
func (c *Checker) NoLoadBalancerSyncFailures(ctx context.Context, lbs []migrationv1alpha1.LoadBalancerFact, since time.Time) error {
	if len(lbs) == 0 {
		return nil
	}
	inScope := map[string]bool{}
	for _, lb := range lbs {
		inScope[lb.Namespace+"/"+lb.Name] = true
	}
	l, err := c.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Service,reason=" + LoadBalancerSyncFailed})
	if err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	for _, ev := range l.Items {
		key := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
		if !inScope[key] || eventTime(&ev).Before(since) {
			continue
		}
		return fatal("LoadBalancer Service %s: %s after the switch (%s, from %s): the AWS CCM cannot manage its load balancer; check the CCM's IAM policy and the kubernetes.io/cluster/<cluster-id> tags on the subnets and security groups, then retry the step (fix forward) or roll back while below 1.27",
			key, LoadBalancerSyncFailed, ev.Message, ev.Source.Component+ev.ReportingController)
	}
	return nil
}

func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

// NodesKept checks every recorded node still exists under its name with its ProviderID and
// without the uninitialized taint.
func (c *Checker) NodesKept(ctx context.Context, facts []migrationv1alpha1.NodeFact) error {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return err
	}
	byName := map[string]*corev1.Node{}
	byPID := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
		if pid := nodes[i].Spec.ProviderID; pid != "" {
			byPID[pid] = &nodes[i]
		}
	}
	for _, f := range facts {
		n, ok := byName[f.Name]
		if !ok {
			if other, ok := byPID[f.ProviderID]; ok {
				return fatal("node %s re-registered as %s (same ProviderID %s): its name changed with the provider switch; pin the node name (RKE2 node-name, RKE1 hostname_override or useInstanceMetadataHostname) and roll back while below 1.27, then delete Node %s", f.Name, other.Name, f.ProviderID, other.Name)
			}
			return fatal("node %s (ProviderID %s) disappeared after the switch: check its kubelet logs on that machine; roll back while below 1.27", f.Name, f.ProviderID)
		}
		if n.Spec.ProviderID != f.ProviderID {
			return fatal("node %s has ProviderID %q, was %q: the external CCM could not match its EC2 instance; check the CCM logs for \"instance not found\" and that the node name is the instance's private DNS name", f.Name, n.Spec.ProviderID, f.ProviderID)
		}
		for _, t := range n.Spec.Taints {
			if t.Key == UninitializedTaint {
				return waiting("node %s still has the %s taint: the CCM has not initialized it yet; if it persists, check the aws-cloud-controller-manager logs on the control plane", f.Name, UninitializedTaint)
			}
		}
		if !isReady(n) {
			return waiting("node %s is not Ready after the switch: check its kubelet", f.Name)
		}
	}
	return nil
}

// Cordoned checks the named nodes' schedulability.
func (c *Checker) Cordoned(ctx context.Context, names []string, want bool) error {
	for _, name := range names {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node %s: %w", name, err)
		}
		if n.Spec.Unschedulable != want {
			return waiting("node %s: unschedulable=%t, want %t", name, n.Spec.Unschedulable, want)
		}
	}
	return nil
}

// SetUnschedulable cordons or uncordons a node; a no-op if it already is.
func (c *Checker) SetUnschedulable(ctx context.Context, name string, v bool) error {
	n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	if n.Spec.Unschedulable == v {
		return nil
	}
	// A patch of that one field, as kubectl cordon makes: an update of the whole Node would
	// conflict with the node's own writers (labels, annotations) and fail the step or rollback.
	patch := []byte(fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, v))
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("set node %s unschedulable=%t: %w", name, v, err)
	}
	return nil
}

// LeaseHeld checks the Lease is held and was renewed within its duration.
func (c *Checker) LeaseHeld(ctx context.Context, name, who string) error {
	l, err := c.Client.CoordinationV1().Leases(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return waiting("Lease %s/%s does not exist yet: %s has not taken it; check that it runs with leader migration and may update that lease", c.Namespace, name, who)
	}
	if err != nil {
		return fmt.Errorf("get lease %s/%s: %w", c.Namespace, name, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return waiting("Lease %s/%s has no holder: %s is not running the migrated controllers; check its logs", c.Namespace, name, who)
	}
	dur := 15 * time.Second
	if l.Spec.LeaseDurationSeconds != nil {
		dur = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if l.Spec.RenewTime == nil || c.now().Sub(l.Spec.RenewTime.Time) > dur {
		return waiting("Lease %s/%s held by %s is not being renewed (last renewal %v): %s may have crashed; check its logs", c.Namespace, name, *l.Spec.HolderIdentity, l.Spec.RenewTime, who)
	}
	return nil
}

// ControllerManagerFlags checks every kube-controller-manager (mirror) pod has each flag in
// want and none in notWant. A flag matches "--name" or "--name=value".
func (c *Checker) ControllerManagerFlags(ctx context.Context, want, notWant []string) error {
	pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "component=kube-controller-manager"})
	if err != nil {
		return fmt.Errorf("list kube-controller-manager pods: %w", err)
	}
	if len(pods.Items) == 0 {
		return waiting("no kube-controller-manager pods (label component=kube-controller-manager) in %s: the control plane is restarting, or this is not the right cluster", c.Namespace)
	}
	for _, p := range pods.Items {
		var args []string
		for _, ctr := range p.Spec.Containers {
			args = append(args, ctr.Command...)
			args = append(args, ctr.Args...)
		}
		for _, f := range want {
			if !hasFlag(args, f) {
				return waiting("kube-controller-manager on node %s runs without %s: the new configuration has not reached it yet; if it persists check the rke2 agent logs on that node", p.Spec.NodeName, f)
			}
		}
		for _, f := range notWant {
			if hasFlag(args, f) {
				return waiting("kube-controller-manager on node %s still runs with %s: the new configuration has not reached it yet; if it persists check the rke2 agent logs on that node", p.Spec.NodeName, f)
			}
		}
	}
	return nil
}

// hasFlag matches "--x" against "--x" and "--x=…"; "--x=v" matches exactly.
func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || (!strings.Contains(flag, "=") && strings.HasPrefix(a, flag+"=")) {
			return true
		}
	}
	return false
}

// DaemonSetRolledOut checks the CCM DaemonSet is fully rolled out on at least minPods nodes.
func (c *Checker) DaemonSetRolledOut(ctx context.Context, minPods int32) error {
	ds, err := c.Client.AppsV1().DaemonSets(c.Namespace).Get(ctx, CCMDaemonSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return waiting("DaemonSet %s/%s does not exist yet: the chart has not been installed; check the HelmChart job (helm-install-aws-cloud-controller-manager) logs", c.Namespace, CCMDaemonSet)
	}
	if err != nil {
		return fmt.Errorf("get daemonset %s/%s: %w", c.Namespace, CCMDaemonSet, err)
	}
	return dsRolledOut(ds, minPods)
}

func dsRolledOut(ds *appsv1.DaemonSet, minPods int32) error {
	s := ds.Status
	switch {
	case s.ObservedGeneration < ds.Generation:
		return waiting("DaemonSet %s/%s: rollout not observed yet", ds.Namespace, ds.Name)
	case s.DesiredNumberScheduled < minPods:
		return waiting("DaemonSet %s/%s runs on %d nodes, want every control-plane node (%d): check its nodeSelector and tolerations match the control-plane nodes", ds.Namespace, ds.Name, s.DesiredNumberScheduled, minPods)
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled || s.NumberReady < s.DesiredNumberScheduled:
		return waiting("DaemonSet %s/%s has %d/%d pods ready and %d updated: check `kubectl -n %s describe pods -l app.kubernetes.io/name=%s` for image pull or crash loops", ds.Namespace, ds.Name, s.NumberReady, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, ds.Namespace, ds.Name)
	}
	return nil
}

// DaemonSetArgs checks the CCM container args have (or lack) the flag.
func (c *Checker) DaemonSetArgs(ctx context.Context, flag string, want bool) error {
	ds, err := c.Client.AppsV1().DaemonSets(c.Namespace).Get(ctx, CCMDaemonSet, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get daemonset %s/%s: %w", c.Namespace, CCMDaemonSet, err)
	}
	for _, ctr := range ds.Spec.Template.Spec.Containers {
		if hasFlag(append(slices.Clone(ctr.Command), ctr.Args...), flag) != want {
			return waiting("DaemonSet %s/%s container %s: %s present=%t, want %t; the chart upgrade has not been applied yet", c.Namespace, CCMDaemonSet, ctr.Name, flag, !want, want)
		}
	}
	return nil
}
