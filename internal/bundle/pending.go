package bundle

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// pendingWrites remembers this controller's BundleDeployment writes until the cache shows them:
// per BundleDeployment, the resourceVersion its last update replaced, and the ones it created.
// A Bundle's next pass often starts before the watch has delivered all of the previous pass's
// writes (each of them enqueues the Bundle): without this, it would see those
// BundleDeployments still outdated, or missing, and write them again — an update from the
// stale copy, which the API server refuses (409 Conflict) and the controller retries, or a
// create refused as AlreadyExists: two writes where one is needed. The watch event of each
// write enqueues the Bundle again, so a BundleDeployment skipped here is looked at once the
// cache has caught up.
type pendingWrites struct {
	m       sync.Map // UID → resourceVersion the update replaced
	created sync.Map // namespace/name → when it was created
	// now is the clock (tests); nil: time.Now.
	now func() time.Time
}

// createdFor is how long a create the pass's view of the cache does not show yet holds off
// creating it again. A pass decides from the BundleDeployments it listed when it started, so a
// create is pending until a pass whose list shows it (creating with inCache), or until its
// deletion is seen: forgetting it on any other event of the object (while a pass that listed
// before that event is still running) made that pass create it a second time, refused as
// AlreadyExists by the hundred at 1,000 clusters. The bound only matters for a cache lagging by
// minutes.
const createdFor = 10 * time.Minute

func (p *pendingWrites) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// deleted records that BundleDeployment ns/name was deleted: a create recorded before it is
// no longer pending, and the next pass creates it again.
func (p *pendingWrites) deleted(ns, name string) { p.created.Delete(ns + "/" + name) }

// wrote records that bd, read at resourceVersion from, was updated.
func (p *pendingWrites) wrote(uid types.UID, from string) { p.m.Store(uid, from) }

// stale reports whether bd, as the cache has it, is a version this controller has already
// replaced.
func (p *pendingWrites) stale(bd *fleetv1alpha1.BundleDeployment) bool {
	v, ok := p.m.Load(bd.UID)
	if !ok {
		return false
	}
	if v.(string) == bd.ResourceVersion {
		return true
	}
	p.m.Delete(bd.UID) // the cache has seen the update (or something newer)
	return false
}

// wroteCreate records that BundleDeployment ns/name was created (or already existed).
func (p *pendingWrites) wroteCreate(ns, name string) { p.created.Store(ns+"/"+name, p.clock()) }

// creating reports whether BundleDeployment ns/name, which the cache shows (inCache) or not,
// was created by this controller and is not in the cache yet.
func (p *pendingWrites) creating(ns, name string, inCache bool) bool {
	key := ns + "/" + name
	v, ok := p.created.Load(key)
	if !ok {
		return false
	}
	if inCache || p.clock().Sub(v.(time.Time)) > createdFor {
		p.created.Delete(key)
		return false
	}
	return true
}

// forget drops what is remembered of a deleted BundleDeployment.
func (p *pendingWrites) forget(uid types.UID) { p.m.Delete(uid) }
