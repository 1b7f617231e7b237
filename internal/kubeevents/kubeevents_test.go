package kubeevents

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLastTime(t *testing.T) {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return created.Add(time.Duration(m) * time.Minute) }
	for _, tc := range []struct {
		name string
		e    corev1.Event
		want time.Time
	}{
		{"only created", corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}, created},
		{"events.k8s.io, once", corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, EventTime: metav1.NewMicroTime(at(-2))}, at(-2)},
		{"events.k8s.io, a series", corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, EventTime: metav1.NewMicroTime(at(-2)),
			Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(at(5))}}, at(5)},
		{"core/v1, repeated", corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, FirstTimestamp: metav1.NewTime(created),
			LastTimestamp: metav1.NewTime(at(7)), Count: 4}, at(7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LastTime(&tc.e); !got.Equal(tc.want) {
				t.Errorf("LastTime = %v, want %v", got, tc.want)
			}
		})
	}
}
