package heartbeat

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptrTime(t time.Time) *metav1.Time { return &metav1.Time{Time: t.Truncate(time.Second)} }

func isAuth(err error) bool {
	var s apierrors.APIStatus
	// NotFound: the Cluster was deleted, and the credential with it (its ServiceAccount may
	// still be seen for a moment); stop working so the agent re-checks its credential.
	return errors.As(err, &s) && (apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err))
}
