package logging

import (
	"errors"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestQuietRelease: the manager's "leader election lost" after its stop began is logged as
// info; every other error stays an error.
func TestQuietRelease(t *testing.T) {
	var lines []string
	l := QuietRelease(funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
	l.Error(errors.New("leader election lost"), "error received after stop sequence was engaged")
	l.Error(errors.New("boom"), "error received after stop sequence was engaged")
	l.WithName("manager").Error(errors.New("leader election lost"), "other message")
	want := []string{
		`"level"=0 "msg"="Released the leader Lease while stopping"`,
		`"msg"="error received after stop sequence was engaged" "error"="boom"`,
		`"msg"="other message" "error"="leader election lost"`,
	}
	// Before a stop, a cache that cannot sync is an error (RBAC, say); once stopping, it is what
	// the stop caused.
	sync := errors.New("Timeout: failed waiting for *v1.ConfigMap Informer to sync")
	l.Error(sync, "failed to get informer from cache")
	Stopping()
	defer stopping.Store(false)
	l.Error(sync, "failed to get informer from cache")
	l.Error(errors.New("failed to wait for agentbundle caches to sync kind source: *v1alpha1.Cluster: cache did not sync"), "Could not wait for Cache to sync")
	l.Error(errors.New("failed to wait for bundle caches to sync kind source: *v1alpha1.Bundle: cache did not sync"), "error received after stop sequence was engaged")
	l.Error(errors.New("boom"), "reconciler error")
	want = append(want,
		`"msg"="failed to get informer from cache" "error"="Timeout: failed waiting for *v1.ConfigMap Informer to sync"`,
		`"level"=0 "msg"="failed to get informer from cache (stopping)" "error"="Timeout: failed waiting for *v1.ConfigMap Informer to sync"`,
		`"level"=0 "msg"="Could not wait for Cache to sync (stopping)" "error"="failed to wait for agentbundle caches to sync kind source: *v1alpha1.Cluster: cache did not sync"`,
		`"level"=0 "msg"="A controller still starting was stopped" "error"="failed to wait for bundle caches to sync kind source: *v1alpha1.Bundle: cache did not sync"`,
		`"msg"="reconciler error" "error"="boom"`)
	if len(lines) != len(want) {
		t.Fatalf("logged %q, want %q", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %s, want %s", i, lines[i], want[i])
		}
	}
}
