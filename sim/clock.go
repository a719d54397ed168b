package sim

import "time"

// Clock tells the engine what time it is. The server uses the wall clock
// (monotonic reading included); tests use a VirtualClock they advance.
type Clock interface {
	Now() time.Time
}

// WallClock is the real clock.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

var _ Clock = WallClock{}

// VirtualClock is a clock that moves only when told to. It is not safe for
// concurrent use; a virtual-time test owns it.
type VirtualClock struct{ t time.Time }

var _ Clock = (*VirtualClock)(nil)

// NewVirtualClock returns a clock reading start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{t: start} }

// Now returns the clock's reading.
func (c *VirtualClock) Now() time.Time { return c.t }

// Set moves the clock to t; a t before the current reading is ignored, so
// virtual time never runs backwards.
func (c *VirtualClock) Set(t time.Time) {
	if t.After(c.t) {
		c.t = t
	}
}

// Advance moves the clock forward by d (negative d is ignored).
func (c *VirtualClock) Advance(d time.Duration) {
	if d > 0 {
		c.t = c.t.Add(d)
	}
}
