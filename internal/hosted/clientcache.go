package hosted

import (
	"container/list"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ClientKey identifies an SDK client: the version of the credential Secret it was built from
// (a rotation changes the resourceVersion, so the next pass builds a new client), whatever
// else it depends on, and the rate-limited transport it sends through.
type ClientKey struct {
	Provider      string
	SecretUID     types.UID
	SecretVersion string
	// Config is what else the client was built from: region, endpoint, retry settings.
	Config string
	// Transport is the engine's transport for the account and location.
	Transport Transport
}

// NewClientKey is the key of a client built from s for provider, with config and transport.
func NewClientKey(provider string, s *corev1.Secret, config string, transport Transport) ClientKey {
	return ClientKey{Provider: provider, SecretUID: s.UID, SecretVersion: s.ResourceVersion, Config: config, Transport: transport}
}

// cacheable: a Secret that never was stored (no UID) has no version to key on, and a
// transport that is not comparable cannot be a map key.
func (k ClientKey) cacheable() bool {
	return k.SecretUID != "" && k.SecretVersion != "" && (k.Transport == nil || reflect.TypeOf(k.Transport).Comparable())
}

// ClientCache is a bounded least-recently-used cache of SDK clients. Building a client costs
// more than a call (it resolves the SDK's configuration; its credential holds the token, so a
// fresh client fetches a new one), so clients are reused across passes; the bound keeps rotated
// credentials from piling up.
type ClientCache struct {
	size  int
	mu    sync.Mutex
	order *list.List // front: most recently used
	items map[ClientKey]*list.Element
}

type cacheEntry struct {
	key ClientKey
	val any
}

// NewClientCache returns a cache holding at most size clients.
func NewClientCache(size int) *ClientCache {
	return &ClientCache{size: size, order: list.New(), items: map[ClientKey]*list.Element{}}
}

// MaxClients bounds Clients: one client per credential Secret in use, with room to spare.
const MaxClients = 1024

// Clients is the cache every provider keeps its SDK clients in.
var Clients = NewClientCache(MaxClients)

// Len is the number of cached clients.
func (c *ClientCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *ClientCache) get(key ClientKey) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cacheEntry).val, true
	}
	return nil, false
}

// put stores val unless another pass stored one first, and returns the one kept.
func (c *ClientCache) put(key ClientKey, val any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cacheEntry).val
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, val: val})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheEntry).key)
	}
	return val
}

// CachedClient returns the client cached under key, building it (outside the lock, so one slow
// build does not hold up other passes) when there is none.
func CachedClient[T any](c *ClientCache, key ClientKey, build func() (T, error)) (T, error) {
	if !key.cacheable() {
		return build()
	}
	if v, ok := c.get(key); ok {
		return v.(T), nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	return c.put(key, v).(T), nil
}
