package simcore

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the simulators the time. Tests that want full control use a ManualClock.
type Clock interface {
	Now() time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// ManualClock is a clock that only moves when told to.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock set to t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// ShiftedClock is the wall clock moved forward by what Advance added: time flows by itself, as
// SDK pollers and signers expect, and a test can still jump ahead (to expire a token, say).
// The zero value is the wall clock.
type ShiftedClock struct{ offset atomic.Int64 }

// Now returns the wall clock plus the offset.
func (c *ShiftedClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *ShiftedClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
