package leaderelection

import "time"

// Clock is the source of time of an Elector: lease expiry is judged on it
// (observed time + leaseDurationSeconds), the renew deadline is measured on
// it, and the elector waits on it. The timeouts of single requests are
// context deadlines, which follow the real clock (as does a testing/synctest
// bubble's fake one).
type Clock interface {
	// Now returns the current time. It must carry a monotonic reading when
	// the clock is real, so that expiry is immune to wall-clock steps.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not run yet; it reports whether it did.
	Stop() bool
}

// RealClock is the wall clock, with Go's monotonic readings.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
