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
	cnd := func(typ, status, reason, msg string) any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
	}
	conds := func(c ...any) []any { return c }
	// What the deployment controller reports of a Deployment it has rolled out.
	available := conds(cnd("Available", "True", "MinimumReplicasAvailable", ""), cnd("Progressing", "True", "NewReplicaSetAvailable", ""))
	tests := []struct {
		name    string
		u       *unstructured.Unstructured
		ready   bool
		message string
	}{
		{"configmap exists", obj("v1", "ConfigMap", 0, nil, nil), true, ""},
		{"deployment available", obj("apps/v1", "Deployment", 2, map[string]any{"replicas": int64(3)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(3), "conditions": available}), true, ""},
		{"deployment default one replica", obj("apps/v1", "Deployment", 1, map[string]any{},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1), "conditions": available}), true, ""},
		{"deployment new spec not observed", obj("apps/v1", "Deployment", 3, map[string]any{"replicas": int64(1)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)}), false, "rollout not observed yet"},
		{"deployment pods pending", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2)}), false, "0/2 replicas available"},
		{"deployment mid rollout", obj("apps/v1", "Deployment", 2, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(1), "availableReplicas": int64(2)}), false, "1/2 replicas updated"},
		{"deployment old replicas terminating", obj("apps/v1", "Deployment", 2, map[string]any{"replicas": int64(2)},
			map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "updatedReplicas": int64(2), "availableReplicas": int64(2)}), false, "1 old replicas terminating"},
		{"deployment scaled to zero", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(0)},
			map[string]any{"observedGeneration": int64(1), "conditions": available}), true, ""},
		{"statefulset not ready", obj("apps/v1", "StatefulSet", 1, map[string]any{"replicas": int64(3)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(3), "updatedReplicas": int64(3), "readyReplicas": int64(2)}), false, "2/3 replicas ready"},
		{"daemonset available", obj("apps/v1", "DaemonSet", 1, nil,
			map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(4), "currentNumberScheduled": int64(4), "updatedNumberScheduled": int64(4), "numberReady": int64(4), "numberAvailable": int64(4)}), true, ""},
		{"daemonset rolling", obj("apps/v1", "DaemonSet", 1, nil,
			map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(4), "updatedNumberScheduled": int64(4), "numberAvailable": int64(3)}), false, "3/4 pods available"},
		{"job complete", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": cond("Complete", "True", "")}), true, ""},
		{"job failed", obj("batch/v1", "Job", 1, nil, map[string]any{"conditions": cond("Failed", "True", "BackoffLimitExceeded")}), false, "failed: BackoffLimitExceeded"},
		{"job running", obj("batch/v1", "Job", 1, nil, map[string]any{"active": int64(1)}), false, "not complete"},
		{"pod ready", obj("v1", "Pod", 0, nil, map[string]any{"phase": "Running", "conditions": cond("Ready", "True", "")}), true, ""},
		{"pod pending", obj("v1", "Pod", 0, nil, map[string]any{"phase": "Pending"}), false, "not ready (phase Pending)"},
		{"pod succeeded", obj("v1", "Pod", 0, nil, map[string]any{"phase": "Succeeded"}), true, ""},
		{"custom resource exists", obj("example.com/v1", "Widget", 1, nil, nil), true, ""},
		// kstatus' rules.
		{"deployment past its progress deadline", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(1), "progressDeadlineSeconds": int64(60)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "unavailableReplicas": int64(1),
				"conditions": conds(cnd("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
					cnd("Progressing", "False", "ProgressDeadlineExceeded", `ReplicaSet "web-5d4f" has timed out progressing.`))}),
			false, `progress deadline exceeded: ReplicaSet "web-5d4f" has timed out progressing.`},
		{"deployment rolled out but the controller not done", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(1), "progressDeadlineSeconds": int64(600)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
				"conditions": conds(cnd("Available", "True", "MinimumReplicasAvailable", ""), cnd("Progressing", "True", "ReplicaSetUpdated", ""))}),
			false, "ReplicaSet not Available"},
		{"deployment complete", obj("apps/v1", "Deployment", 1, map[string]any{"replicas": int64(1), "progressDeadlineSeconds": int64(600)},
			map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
				"conditions": conds(cnd("Available", "True", "MinimumReplicasAvailable", ""), cnd("Progressing", "True", "NewReplicaSetAvailable", ""))}),
			true, ""},
		{"custom resource Ready=False", obj("example.com/v1", "Widget", 1, nil,
			map[string]any{"conditions": conds(cnd("Ready", "False", "DatabaseUnreachable", "cannot reach db:5432"))}), false, "Ready=False (DatabaseUnreachable): cannot reach db:5432"},
		{"custom resource Ready=Unknown", obj("example.com/v1", "Widget", 1, nil,
			map[string]any{"conditions": conds(cnd("Ready", "Unknown", "", ""))}), false, "Ready=Unknown"},
		{"custom resource Ready=True", obj("example.com/v1", "Widget", 1, nil,
			map[string]any{"conditions": conds(cnd("Ready", "True", "Reconciled", ""))}), true, ""},
		{"custom resource generation not observed", obj("example.com/v1", "Widget", 3, nil,
			map[string]any{"observedGeneration": int64(2), "conditions": conds(cnd("Ready", "True", "Reconciled", ""))}), false, "Widget generation is 3, but latest observed generation is 2"},
		{"custom resource Reconciling", obj("example.com/v1", "Widget", 1, nil,
			map[string]any{"conditions": conds(cnd("Reconciling", "True", "Provisioning", "creating 2 volumes"))}), false, "creating 2 volumes"},
		{"custom resource Stalled", obj("example.com/v1", "Widget", 1, nil,
			map[string]any{"conditions": conds(cnd("Stalled", "True", "InvalidSpec", "size must be positive"), cnd("Ready", "False", "InvalidSpec", ""))}),
			false, "failed (InvalidSpec): size must be positive"},
		{"pod crash looping", obj("v1", "Pod", 0, nil, map[string]any{"phase": "Running",
			"containerStatuses": []any{map[string]any{"name": "app", "state": map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}}}}}),
			false, "failed (ContainerCrashLooping): Containers in CrashLoop state: app"},
		{"crd not established", obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", 1, nil, map[string]any{}), false, "Install in progress"},
		{"persistent volume claim pending", obj("v1", "PersistentVolumeClaim", 0, nil, map[string]any{"phase": "Pending"}), false, "PVC is not Bound"},
		{"being deleted", func() *unstructured.Unstructured {
			u := obj("v1", "ConfigMap", 0, nil, nil)
			_ = unstructured.SetNestedField(u.Object, "2026-01-01T00:00:00Z", "metadata", "deletionTimestamp")
			return u
		}(), false, "being deleted"},
		{"conditions of an unexpected shape", obj("example.com/v1", "Widget", 1, nil, map[string]any{"conditions": "all good"}), false, "status not readable"},
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
