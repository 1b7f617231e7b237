package deployer

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind string, generation int64, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "x", "generation": generation}}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func TestHealth(t *testing.T) {
	cond := func(typ, status, msg string) []any {
		return []any{map[string]any{"type": typ, "status": status, "message": msg}}
	}
	tests := []struct {
		name    string
		u       *unstructured.Unstructured
		ready   bool
		message string
	}{
		{"configmap exists", obj("v1", "ConfigMap", 0, nil, nil), true, ""},
		{"deployment available", obj("apps/v1", "Deployment", 2, map[string]any{"replicas": int64(3)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(3), "availableReplicas": int64(3)}), true, ""},
		{"deployment default one replica", obj("apps/v1", "Deployment", 1, map[string]any{},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)}), true, ""},
		{"deployment new spec not observed", obj("apps/v1", "Deployment", 3, map[string]any{"replicas": int64(1)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)}), false, "rollout not observed yet"},
		{"deployment pods pending", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2)}), false, "0/2 replicas available"},
		{"deployment mid rollout", obj("apps/v1", "Deployment", 2, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(1), "availableReplicas": int64(2)}), false, "1/2 replicas updated"},
		{"deployment old replicas terminating", obj("apps/v1", "Deployment", 2, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(2), "availableReplicas": int64(2)}), false, "1 old replicas terminating"},
		{"deployment scaled to zero", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(0)},
			map[string]any{"observedGeneration": int64(1)}), true, ""},
		{"statefulset not ready", obj("apps/v1", "StatefulSet", 1, map[string]any{"replicas": int64(3)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(3), "updatedReplicas": int64(3), "readyReplicas": int64(2)}), false, "2/3 replicas ready"},
		{"daemonset available", obj("apps/v1", "DaemonSet", 1, nil,
			map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(4), "updatedNumberScheduled": int64(4), "numberAvailable": int64(4)}), true, ""},
		{"daemonset rolling", obj("apps/v1", "DaemonSet", 1, nil,
			map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(4), "updatedNumberScheduled": int64(4), "numberAvailable": int64(3)}), false, "3/4 pods available"},
		{"job complete", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": cond("Complete", "True", "")}), true, ""},
		{"job failed", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": cond("Failed", "True", "BackoffLimitExceeded")}), false, "failed: BackoffLimitExceeded"},
		{"job running", obj("batch/v1", "Job", 1, nil, map[string]any{"active": int64(1)}), false, "not complete"},
		{"pod ready", obj("v1", "Pod", 0, nil, map[string]any{"phase": "Running", "conditions": cond("Ready", "True", "")}), true, ""},
		{"pod pending", obj("v1", "Pod", 0, nil, map[string]any{"phase": "Pending"}), false, "not ready (phase Pending)"},
		{"pod succeeded", obj("v1", "Pod", 0, nil, map[string]any{"phase": "Succeeded"}), true, ""},
		{"custom resource exists", obj("example.com/v1", "Widget", 1, nil, nil), true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready, msg := health(tc.u)
			if ready != tc.ready || !strings.Contains(msg, tc.message) || (tc.message == "" && msg != "") {
				t.Errorf("health = %v %q, want %v %q", ready, msg, tc.ready, tc.message)
			}
		})
	}
}
