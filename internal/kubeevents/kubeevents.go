// Package kubeevents reads Kubernetes Events as both of their APIs write them.
package kubeevents

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// LastTime is when e last happened, from the most precise field its writer filled: the series'
// last observation (events.k8s.io), the last timestamp (core/v1), the event time, else its
// creation.
func LastTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
