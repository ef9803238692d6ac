package reflector

import "time"

// backoff computes the waits between failed attempts: the base wait starts
// at initial and doubles on each consecutive failure up to max; each wait is
// the base plus a random share of it (jitter 1.0, as client-go: the wait is
// in [base, 2·base)). After resetAfter without any failure the base falls
// back to initial.
//
// backoff is owned by the reflector's Run goroutine; it needs no lock.
type backoff struct {
	initial, max, resetAfter time.Duration
	rand                     func() float64 // in [0,1)

	base time.Duration // next base wait; 0 before the first failure
	last time.Time     // when the previous wait was computed
}

// next returns the wait after a failure observed at now.
func (b *backoff) next(now time.Time) time.Duration {
	if b.base == 0 || (!b.last.IsZero() && now.Sub(b.last) >= b.resetAfter) {
		b.base = b.initial
	}
	b.last = now
	d := b.base
	b.base *= 2
	if b.base > b.max {
		b.base = b.max
	}
	return d + time.Duration(b.rand()*float64(d))
}

// relist returns the wait before a relist the server forced (410 Gone, too
// large resourceVersion) at now: none when the reflector had been healthy
// for resetAfter, so a rare 410 is repaired at once; otherwise the next
// backoff wait, so that a server answering 410 again and again is not hit
// by a storm of full lists.
func (b *backoff) relist(now time.Time) time.Duration {
	if b.base == 0 || (!b.last.IsZero() && now.Sub(b.last) >= b.resetAfter) {
		b.base = b.initial
		b.last = now
		return 0
	}
	return b.next(now)
}
