package bundle

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// pendingWrites remembers, per BundleDeployment, the resourceVersion this controller's last
// update replaced, until the cache shows another one. A Bundle's next pass often starts
// before the watch has delivered all of the previous pass's updates (each of them enqueues the
// Bundle): without this, it would see those BundleDeployments still outdated and update them
// again from the stale copy, which the API server refuses (409 Conflict) and the controller
// retries — two writes where one is needed. The watch event of the update enqueues the Bundle
// again, so a BundleDeployment skipped here is looked at once the cache has caught up.
type pendingWrites struct{ m sync.Map } // UID → resourceVersion the update replaced

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

// forget drops what is remembered of a deleted BundleDeployment.
func (p *pendingWrites) forget(uid types.UID) { p.m.Delete(uid) }
