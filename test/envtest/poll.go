package envtest

import (
	"testing"
	"time"
)

// Eventually polls cond until it returns nil, failing t when timeout passes first. Tests use it
// instead of sleeps: it waits only as long as the condition needs.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
