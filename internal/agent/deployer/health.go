package deployer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/text"
)

// health reports whether a live object is doing what it was applied for, by kstatus'
// rules (sigs.k8s.io/cli-utils/pkg/kstatus/status), with drover's own messages where they say
// more precisely what is missing:
//
//   - any object: failed when it reports Stalled=True (or kstatus judges it failed: a
//     Deployment past its progress deadline, a Job that failed, a crash-looping Pod); not ready
//     while being deleted, while its status.observedGeneration lags metadata.generation, or
//     with Reconciling=True;
//   - Deployments, StatefulSets and DaemonSets: rolled out and available; Jobs: complete;
//     Pods: ready (or succeeded), in the terms kubectl shows ("1/2 replicas updated");
//   - other kinds with a Ready condition (custom resources of most operators): ready when it
//     is True; a Service of type LoadBalancer: when it has an address; a
//     PersistentVolumeClaim: when bound; a CustomResourceDefinition: when established;
//   - anything else is ready when it exists.
//
// The message says what is missing or why the object failed.
func health(u *unstructured.Unstructured) (bool, string) {
	res, err := kstatus.Compute(u)
	if err != nil {
		// A status of an unexpected shape (conditions not a list, say).
		return false, "status not readable: " + err.Error()
	}
	switch res.Status {
	case kstatus.TerminatingStatus:
		return false, "being deleted"
	case kstatus.FailedStatus:
		return false, failure(u, res)
	}
	if ready, msg, known := workload(u); known && !ready {
		return false, msg
	}
	if res.Status == kstatus.CurrentStatus {
		return true, ""
	}
	return false, progress(u, res)
}

// failure says why kstatus judges u failed: the reason and message of the condition that says
// so (a Deployment's Progressing=False ProgressDeadlineExceeded, a Stalled condition).
func failure(u *unstructured.Unstructured, res *kstatus.Result) string {
	if st, msg := condition(u, "Failed"); st == "True" {
		return "failed: " + msg // a Job
	}
	for _, c := range res.Conditions {
		if c.Type != kstatus.ConditionStalled {
			continue
		}
		switch {
		case c.Reason == "ProgressDeadlineExceeded":
			return "progress deadline exceeded: " + nonEmpty(c.Message, "no progress")
		case c.Reason != "" && c.Message != "":
			return "failed (" + c.Reason + "): " + c.Message
		case c.Message != "":
			return "failed: " + c.Message
		case c.Reason != "":
			return "failed (" + c.Reason + ")"
		}
	}
	return "failed: " + nonEmpty(res.Message, "no reason given")
}

// progress says what a resource kstatus judges in progress waits for.
func progress(u *unstructured.Unstructured, res *kstatus.Result) string {
	if st, msg := condition(u, "Ready"); st != "" && st != "True" {
		// The Ready condition decided (most custom resources).
		reason, _ := conditionReason(u, "Ready")
		out := "Ready=" + st
		if reason != "" {
			out += " (" + reason + ")"
		}
		if msg != "" {
			out += ": " + msg
		}
		return out
	}
	for _, c := range res.Conditions {
		if c.Type == kstatus.ConditionReconciling && c.Message != "" {
			return c.Message
		}
	}
	return nonEmpty(res.Message, "in progress")
}

func nonEmpty[S ~string](s, otherwise S) S {
	if s == "" {
		return otherwise
	}
	return s
}

// workload is drover's readiness of the built-in workload kinds (known false for others):
// workloads rolled out and available, Jobs complete, Pods ready.
func workload(u *unstructured.Unstructured) (ready bool, message string, known bool) {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "apps" && gvk.Kind == "Deployment":
		ready, message = rollout(u, "updatedReplicas", "availableReplicas", "available")
	case gvk.Group == "apps" && gvk.Kind == "StatefulSet":
		ready, message = rollout(u, "updatedReplicas", "readyReplicas", "ready")
	case gvk.Group == "apps" && gvk.Kind == "DaemonSet":
		ready, message = daemonSet(u)
	case gvk.Group == "batch" && gvk.Kind == "Job":
		ready, message = job(u)
	case gvk.Group == "" && gvk.Kind == "Pod":
		ready, message = pod(u)
	default:
		return false, "", false
	}
	return ready, message, true
}

func daemonSet(u *unstructured.Unstructured) (bool, string) {
	if msg := observed(u); msg != "" {
		return false, msg
	}
	desired := num(u, "status", "desiredNumberScheduled")
	if n := num(u, "status", "updatedNumberScheduled"); n < desired {
		return false, fmt.Sprintf("%d/%d pods updated", n, desired)
	}
	if n := num(u, "status", "numberAvailable"); n < desired {
		return false, fmt.Sprintf("%d/%d pods available", n, desired)
	}
	return true, ""
}

func job(u *unstructured.Unstructured) (bool, string) {
	if st, msg := condition(u, "Failed"); st == "True" {
		return false, "failed: " + msg
	}
	if st, _ := condition(u, "Complete"); st == "True" {
		return true, ""
	}
	return false, "not complete"
}

func pod(u *unstructured.Unstructured) (bool, string) {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	if phase == "Succeeded" {
		return true, ""
	}
	if st, _ := condition(u, "Ready"); st == "True" {
		return true, ""
	}
	return false, "not ready (phase " + phase + ")"
}

// rollout is the readiness of a replicated workload: the controller saw the latest spec, every
// replica runs it, and every replica is available/ready.
func rollout(u *unstructured.Unstructured, updatedField, availableField, word string) (bool, string) {
	if msg := observed(u); msg != "" {
		return false, msg
	}
	want := int64(1)
	if r, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); found {
		want = r
	}
	if n := num(u, "status", updatedField); n < want {
		return false, fmt.Sprintf("%d/%d replicas updated", n, want)
	}
	if n := num(u, "status", availableField); n < want {
		return false, fmt.Sprintf("%d/%d replicas %s", n, want, word)
	}
	if n := num(u, "status", "replicas"); n > want {
		return false, fmt.Sprintf("%d old replicas terminating", n-want)
	}
	return true, ""
}

func observed(u *unstructured.Unstructured) string {
	if og := num(u, "status", "observedGeneration"); og < u.GetGeneration() {
		return "rollout not observed yet"
	}
	return ""
}

func num(u *unstructured.Unstructured, fields ...string) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, fields...)
	return n
}

func condition(u *unstructured.Unstructured, typ string) (status, message string) {
	m := findCondition(u, typ)
	if m == nil {
		return "", ""
	}
	s, _ := m["status"].(string)
	msg, _ := m["message"].(string)
	return s, msg
}

func conditionReason(u *unstructured.Unstructured, typ string) (string, bool) {
	m := findCondition(u, typ)
	if m == nil {
		return "", false
	}
	r, _ := m["reason"].(string)
	return r, true
}

func findCondition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// Bounds of the pod diagnosis: how many of a workload's pods one List reads, and how long the
// part of a message saying what one pod waits for may be (a Ready condition names up to three
// resources, and Display keeps 512 bytes of it).
const (
	podListLimit = 100
	maxPodReason = 240
)

// liveHealth is health of a live object read from the downstream cluster, with the reason one
// of its pods gives when a Deployment, StatefulSet or DaemonSet is not available (see
// podReason): "0/1 replicas available; pod web-6d4f9-abcde: Unschedulable: 0/3 nodes are
// available: ...". It costs at most one List of pods per not-ready workload.
func (r *Reconciler) liveHealth(ctx context.Context, u *unstructured.Unstructured) (bool, string) {
	ready, msg := health(u)
	if ready || r.Downstream == nil {
		return ready, msg
	}
	if why := podReason(ctx, r.Downstream, u); why != "" {
		msg += "; " + why
	}
	return ready, msg
}

// podReason says, in kubectl's words, why the pods of the workload u (a Deployment,
// StatefulSet or DaemonSet; "" for other kinds) do not become available: the most telling
// reason of one of them ("pod web-6d4f9-abcde: ImagePullBackOff: Back-off pulling image
// \"nginx:nope\"", "pod db-0: CrashLoopBackOff (restarted 5 times; last exit code 1)").
// It reads the pods with one List of u's namespace by u's selector (at most podListLimit of
// them), keeps those u controls, and returns "" when none says more than the counts, or when
// the List fails (an agent whose rights do not include listing pods reports the counts only).
// The reason is one line of at most maxPodReason bytes, from pod and container status only:
// never a termination message (whatever the program wrote), an env value or a Secret's.
func podReason(ctx context.Context, c client.Reader, u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	if gvk.Group != "apps" || (gvk.Kind != "Deployment" && gvk.Kind != "StatefulSet" && gvk.Kind != "DaemonSet") ||
		u.GetDeletionTimestamp() != nil || u.GetNamespace() == "" {
		return ""
	}
	raw, found, err := unstructured.NestedMap(u.Object, "spec", "selector")
	if err != nil || !found {
		return ""
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return ""
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(u.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}, client.Limit(podListLimit)); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Cannot list pods to say why a workload is not ready", "kind", gvk.Kind,
			"namespace", u.GetNamespace(), "name", u.GetName(), "error", err.Error())
		return ""
	}
	best, bestRank := "", 0
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for i := range pods.Items {
		p := &pods.Items[i]
		if !controlledBy(p, u) {
			continue
		}
		if rank, why := podWaits(p); rank > bestRank {
			best, bestRank = "pod "+p.Name+": "+why, rank
		}
	}
	return oneLine(best, maxPodReason)
}

// controlledBy reports whether the workload u controls the pod p: directly (StatefulSet,
// DaemonSet) or through one of its ReplicaSets (Deployment, whose ReplicaSets are named after
// it); a selector may match other pods.
func controlledBy(p *corev1.Pod, u *unstructured.Unstructured) bool {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return false
	}
	if u.GetKind() == "Deployment" {
		return ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.Name, u.GetName()+"-")
	}
	if ref.Kind != u.GetKind() || ref.Name != u.GetName() {
		return false
	}
	return u.GetUID() == "" || ref.UID == u.GetUID()
}

// How telling a pod's reason is: a reason that will not go away by itself (an image that
// cannot be pulled, a crash loop, a configuration error) beats one that may (no node fits
// yet), which beats a pod that is merely on its way.
const (
	rankOnItsWay = iota + 1
	rankFailed
	rankUnschedulable
	rankStuck
)

// podWaits says what keeps the pod p from being ready, with how telling that is (0: nothing,
// it is ready, done or being deleted).
func podWaits(p *corev1.Pod) (int, string) {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || podCondition(p, corev1.PodReady) == corev1.ConditionTrue {
		return 0, ""
	}
	many := len(p.Spec.InitContainers)+len(p.Spec.Containers) > 1
	best, bestRank := "", 0
	consider := func(rank int, why string) {
		if rank > bestRank {
			best, bestRank = why, rank
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Ready {
			continue
		}
		rank, why := containerWaits(cs)
		if rank > 0 {
			consider(rank, "init container "+cs.Name+": "+why)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		rank, why := containerWaits(cs)
		if rank == 0 && !cs.Ready && cs.State.Running != nil {
			rank, why = rankOnItsWay, "not ready"
		}
		if rank > 0 && many {
			why = "container " + cs.Name + ": " + why
		}
		consider(rank, why)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			consider(rankUnschedulable, withMessage(nonEmpty(c.Reason, "Unschedulable"), c.Message))
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		consider(rankFailed, withMessage(nonEmpty(p.Status.Reason, "Failed"), p.Status.Message))
	}
	consider(rankOnItsWay, string(nonEmpty(p.Status.Phase, corev1.PodPending)))
	return bestRank, best
}

// containerWaits says what one container waits for, as kubectl's STATUS column would.
func containerWaits(cs corev1.ContainerStatus) (int, string) {
	switch {
	case cs.State.Waiting != nil:
		w := cs.State.Waiting
		switch w.Reason {
		case "", "ContainerCreating", "PodInitializing":
			return rankOnItsWay, nonEmpty(w.Reason, "Waiting")
		case "CrashLoopBackOff":
			return rankStuck, fmt.Sprintf("CrashLoopBackOff (restarted %d times%s)", cs.RestartCount, lastExit(cs.LastTerminationState.Terminated))
		}
		// ImagePullBackOff, ErrImagePull, InvalidImageName, CreateContainerConfigError
		// (a Secret or key not found: names, no values), RunContainerError...
		return rankStuck, withMessage(w.Reason, w.Message)
	case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
		t := cs.State.Terminated
		return rankFailed, fmt.Sprintf("%s, exit code %d", nonEmpty(t.Reason, "Error"), t.ExitCode)
	}
	return 0, ""
}

// lastExit says how a crash-looping container last ended ("; last exit code 1", "; last exit:
// OOMKilled, code 137"), never with its termination message.
func lastExit(t *corev1.ContainerStateTerminated) string {
	switch {
	case t == nil:
		return ""
	case t.Reason == "" || t.Reason == "Error":
		return fmt.Sprintf("; last exit code %d", t.ExitCode)
	}
	return fmt.Sprintf("; last exit: %s, code %d", t.Reason, t.ExitCode)
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func withMessage(reason, msg string) string {
	if msg == "" {
		return reason
	}
	return reason + ": " + msg
}

// oneLine makes s one line (whitespace runs become one space) of at most n bytes, cut on a rune
// boundary and marked with "...".
func oneLine(s string, n int) string {
	return text.Clip(strings.Join(strings.Fields(s), " "), n)
}
