package simcore

import (
	"sort"
	"sync"
)

// Counters counts calls per operation name. Every call that reaches a simulator is counted,
// including the ones answered with an injected fault, so tests can see the SDK's retries.
type Counters struct {
	mu sync.Mutex
	m  map[string]int64
}

// Inc counts one call of op.
func (c *Counters) Inc(op string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]int64)
	}
	c.m[op]++
	c.mu.Unlock()
}

// Get returns the number of calls of op.
func (c *Counters) Get(op string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[op]
}

// Total returns the number of calls of every operation.
func (c *Counters) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.m {
		n += v
	}
	return n
}

// Snapshot returns a copy of all counts.
func (c *Counters) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// Operations returns the names of the operations called so far, sorted.
func (c *Counters) Operations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.m))
	for k := range c.m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Reset sets every count to zero.
func (c *Counters) Reset() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
