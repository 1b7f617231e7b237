package deployer

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

func metaCondition(typ, status, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: gen}
}
