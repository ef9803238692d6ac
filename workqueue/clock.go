package workqueue

import "time"

// Clock is the source of time for a queue and its rate limiters. Tests may
// inject their own; testing/synctest makes the real clock deterministic too.
type Clock interface {
	// Now returns the current time. It must carry a monotonic reading when
	// the clock is real.
	Now() time.Time
	// Since returns the time elapsed since t. For the real clock this reads
	// only the monotonic clock, which costs a third of Now on some machines;
	// the queue measures every interval with it.
	Since(t time.Time) time.Duration
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not run yet; it reports whether it did.
	Stop() bool
	// Reset changes the timer to fire after d, as time.Timer.Reset does.
	Reset(d time.Duration) bool
}

// RealClock is the wall clock, with Go's monotonic readings.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (RealClock) Since(t time.Time) time.Duration { return time.Since(t) }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
