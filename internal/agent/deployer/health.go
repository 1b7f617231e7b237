package deployer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
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

func nonEmpty(s, otherwise string) string {
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
