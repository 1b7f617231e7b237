package hosted

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func secretVersion(uid, rv string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
}

// TestClientCacheBoundedLRU: a rotation builds a new client; the cache never holds more than its
// bound (a Secret rotated every day must not leak a client a day); the clients in use survive.
func TestClientCacheBoundedLRU(t *testing.T) {
	t.Parallel()
	c := NewClientCache(4)
	builds := 0
	get := func(s *corev1.Secret) string {
		v, err := CachedClient(c, NewClientKey("eks", s, "us-west-2", http.DefaultTransport), func() (string, error) {
			builds++
			return fmt.Sprintf("client-%d", builds), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	inUse := secretVersion("a", "1")
	first := get(inUse)
	if again := get(inUse); again != first || builds != 1 {
		t.Fatalf("unchanged Secret: got %s after %d builds, want the cached %s", again, builds, first)
	}
	for rv := range 20 {
		get(secretVersion("b", fmt.Sprint(rv))) // rotations of another Secret
		get(inUse)
		if c.Len() > 4 {
			t.Fatalf("%d clients cached, bound 4", c.Len())
		}
	}
	if builds != 21 {
		t.Fatalf("%d builds, want 1 for the Secret in use and 20 for the rotations", builds)
	}
	if got := get(inUse); got != first {
		t.Fatalf("the client in use was evicted: %s", got)
	}
	// A Secret without a stored version (never created) is not cached.
	get(&corev1.Secret{})
	get(&corev1.Secret{})
	if builds != 23 {
		t.Fatalf("unversioned Secrets cached: %d builds", builds)
	}
}
