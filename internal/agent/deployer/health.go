package deployer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// health reports whether a live object is doing what it was applied for: workloads rolled out
// and available, Jobs complete, Pods ready. Kinds without a notion of readiness are ready when
// they exist. The message says what is missing, in the terms kubectl shows.
func health(u *unstructured.Unstructured) (bool, string) {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "apps" && gvk.Kind == "Deployment":
		return rollout(u, "updatedReplicas", "availableReplicas", "available")
	case gvk.Group == "apps" && gvk.Kind == "StatefulSet":
		return rollout(u, "updatedReplicas", "readyReplicas", "ready")
	case gvk.Group == "apps" && gvk.Kind == "DaemonSet":
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
	case gvk.Group == "batch" && gvk.Kind == "Job":
		if st, msg := condition(u, "Failed"); st == "True" {
			return false, "failed: " + msg
		}
		if st, _ := condition(u, "Complete"); st == "True" {
			return true, ""
		}
		return false, "not complete"
	case gvk.Group == "" && gvk.Kind == "Pod":
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "Succeeded" {
			return true, ""
		}
		if st, _ := condition(u, "Ready"); st == "True" {
			return true, ""
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return false, "not ready (phase " + phase + ")"
	}
	return true, ""
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
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		s, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		return s, msg
	}
	return "", ""
}
