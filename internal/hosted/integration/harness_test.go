package integration

import (
	"sort"
	"testing"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// harness adapts one provider (its simulator, console and config shape) to the provider-neutral
// tests, so the no-lost-update and randomized tests have one body for every provider.
type harness interface {
	name() string
	provider() hosted.Provider
	// setup starts the provider's simulator on e.simTime with Delay simDelay, and creates the
	// credential Secret named "cred" in e.ns.
	setup(t *testing.T, e *env)
	// created returns a cluster drover creates, in the credential "cred": tags (or labels)
	// {"team": "platform"} and one pool "pool-1" of size 2 (min 1, max 5, no autoscaling).
	created(name string) *v1.Cluster
	// consoleTag sets one tag at the provider, as the cloud console would.
	consoleTag(t *testing.T, cluster, key, value string)
	// consoleScale resizes pool-1 at the provider; false if the pool is busy or already that size.
	consoleScale(t *testing.T, cluster string, size int32) bool
	// tags and size read the provider's state.
	tags(t *testing.T, cluster string) map[string]string
	size(t *testing.T, cluster string) int32
	// cfgTags, setCfgTag, cfgSize and setCfgSize read and change the config.
	cfgTags(c *v1.Cluster) map[string]string
	setCfgTag(c *v1.Cluster, key, value string)
	cfgSize(c *v1.Cluster) int32
	setCfgSize(c *v1.Cluster, size int32)
	// credentialData is the Secret "cred"'s data; with wrong, one key holds a value the
	// provider rejects (as a rotation gone wrong leaves it), and key names it.
	credentialData(t *testing.T, wrong bool) (data map[string]string, key string)
}

// harnesses holds a constructor per provider; each provider's harness file registers itself.
var harnesses = map[string]func() harness{}

// forEachProvider runs f as a parallel subtest per provider.
func forEachProvider(t *testing.T, f func(t *testing.T, h harness)) {
	names := make([]string, 0, len(harnesses))
	for n := range harnesses {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			f(t, harnesses[n]())
		})
	}
}
