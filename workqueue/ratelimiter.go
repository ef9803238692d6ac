package workqueue

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimiter decides how long a key waits before it is retried.
type RateLimiter[K comparable] interface {
	// When records a failure of key and returns how long to wait before
	// retrying it.
	When(key K) time.Duration
	// Forget clears the failures of key: it is done, for good or for bad.
	Forget(key K)
	// NumRequeues is the number of failures of key since it was last forgotten.
	NumRequeues(key K) int
}

// Defaults of the rate limiters, as client-go's default controller rate limiter.
const (
	DefaultBaseDelay = 5 * time.Millisecond
	DefaultMaxDelay  = 1000 * time.Second
	DefaultQPS       = 10
	DefaultBurst     = 100
)

// ExponentialOptions configures an Exponential limiter. The zero value is
// client-go's default per-key backoff.
type ExponentialOptions struct {
	// Base is the first delay. Default 5 ms.
	Base time.Duration
	// Max caps the delay. Default 1000 s.
	Max time.Duration
}

// Exponential backs off per key: Base, 2×Base, 4×Base … capped at Max.
// It never overflows, whatever the number of failures.
type Exponential[K comparable] struct {
	base, max time.Duration
	failures  failureCounts[K]
}

// failureCounts counts the failures of each key since it was last forgotten.
type failureCounts[K comparable] struct {
	mu sync.Mutex // guards m
	m  map[K]int  // absent means 0
	// keys is len(m), written under mu: forget skips the lock while no key
	// has failures, the common case of a reconcile that succeeded (a key
	// is counted by the one worker that holds it, so no failure of the key
	// being forgotten can be counted meanwhile).
	keys atomic.Int64
}

// add counts a failure of key and returns the count before it.
func (f *failureCounts[K]) add(key K) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[K]int)
	}
	n := f.m[key]
	f.m[key] = n + 1
	f.keys.Store(int64(len(f.m)))
	return n
}

func (f *failureCounts[K]) forget(key K) {
	if f.keys.Load() == 0 {
		return
	}
	f.mu.Lock()
	delete(f.m, key)
	f.keys.Store(int64(len(f.m)))
	f.mu.Unlock()
}

func (f *failureCounts[K]) count(key K) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key]
}

// NewExponential returns a per-key exponential backoff.
func NewExponential[K comparable](o ExponentialOptions) (*Exponential[K], error) {
	if o.Base == 0 {
		o.Base = DefaultBaseDelay
	}
	if o.Max == 0 {
		o.Max = DefaultMaxDelay
	}
	if o.Base < 0 || o.Max < o.Base {
		return nil, fmt.Errorf("workqueue: exponential backoff needs 0 < base <= max, got base %v, max %v", o.Base, o.Max)
	}
	return &Exponential[K]{base: o.Base, max: o.Max}, nil
}

// When records a failure and returns Base × 2^(failures before it), capped at Max.
func (r *Exponential[K]) When(key K) time.Duration {
	return backoff(r.base, r.max, r.failures.add(key))
}

// backoff is base×2^exp capped at max, without overflow.
func backoff(base, maxDelay time.Duration, exp int) time.Duration {
	if exp >= 62 || base > maxDelay>>uint(exp) {
		return maxDelay
	}
	return base << uint(exp)
}

// Forget clears the failures of key.
func (r *Exponential[K]) Forget(key K) { r.failures.forget(key) }

// NumRequeues returns the failures of key.
func (r *Exponential[K]) NumRequeues(key K) int { return r.failures.count(key) }

// BucketOptions configures a Bucket limiter. The zero value is client-go's
// default overall bucket.
type BucketOptions struct {
	// QPS is the sustained rate of retries per second. Default 10.
	QPS float64
	// Burst is the number of retries allowed at once. Default 100.
	Burst int
	// Clock defaults to RealClock.
	Clock Clock
}

// Bucket is a token bucket shared by all keys: it lets Burst retries through
// at once, then QPS per second. A retry that finds the bucket empty reserves a
// future token and waits for it, as golang.org/x/time/rate's Reserve does.
type Bucket[K comparable] struct {
	clock Clock
	epoch time.Time
	// interval is the time one token takes to come back (1/QPS) and window
	// the time the whole burst takes (Burst/QPS), both in ns, both > 0 and
	// at most maxWindow.
	interval, window int64

	mu sync.Mutex // guards full
	// full is when the bucket will be full again, in ns since epoch (the
	// "theoretical arrival time" of the generic cell rate algorithm, which
	// is a token bucket counted in time): at time t it holds
	// Burst - (full-t)/interval tokens, Burst when full <= t, fewer than
	// zero when tokens have been reserved ahead. Integer time needs no
	// floating point and no rounding on the hot path.
	full int64
}

// maxWindow bounds the bucket's times so that additions never overflow:
// about 73 years.
const maxWindow = math.MaxInt64 / 4

// NewBucket returns a token bucket limiter.
func NewBucket[K comparable](o BucketOptions) (*Bucket[K], error) {
	if o.QPS == 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.QPS < 0 || math.IsNaN(o.QPS) || math.IsInf(o.QPS, 0) || o.Burst < 0 {
		return nil, fmt.Errorf("workqueue: token bucket needs qps > 0 and burst > 0, got qps %v, burst %d", o.QPS, o.Burst)
	}
	b := &Bucket[K]{clock: o.Clock, epoch: o.Clock.Now()}
	b.setRate(o.QPS, o.Burst)
	return b, nil
}

// setRate sets interval and window for qps > 0 and burst > 0.
func (b *Bucket[K]) setRate(qps float64, burst int) {
	interval := math.Round(1e9 / qps)
	b.interval = int64(max(1, min(interval, maxWindow)))
	b.window = int64(max(1, min(interval*float64(burst), maxWindow)))
}

// When takes a token and returns how long until it is available.
func (b *Bucket[K]) When(K) time.Duration {
	now := int64(b.clock.Since(b.epoch))
	b.mu.Lock()
	d := b.take(now)
	b.mu.Unlock()
	return d
}

// take takes one token at now, reserving a future one when the bucket is
// empty, and returns how long until the token it took is there. b.mu is held.
func (b *Bucket[K]) take(now int64) time.Duration {
	full := max(b.full, now) + b.interval
	b.full = min(full, now+maxWindow) // a reservation further ahead than 73 years is as good as one at 73
	return time.Duration(max(0, full-now-b.window))
}

// Forget does nothing: the bucket keeps no per-key state.
func (b *Bucket[K]) Forget(K) {}

// NumRequeues is always 0: the bucket keeps no per-key state.
func (b *Bucket[K]) NumRequeues(K) int { return 0 }

// MaxOf combines limiters: the delay is the longest of theirs, the requeue
// count the largest, and Forget forgets in all of them.
type MaxOf[K comparable] struct {
	limiters []RateLimiter[K]
}

// NewMaxOf returns the combination of limiters.
func NewMaxOf[K comparable](limiters ...RateLimiter[K]) (*MaxOf[K], error) {
	if len(limiters) == 0 {
		return nil, fmt.Errorf("workqueue: MaxOf needs at least one limiter")
	}
	for i, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("workqueue: MaxOf limiter %d is nil", i)
		}
	}
	return &MaxOf[K]{limiters: limiters}, nil
}

// When asks every limiter and returns the longest delay.
func (m *MaxOf[K]) When(key K) time.Duration {
	var d time.Duration
	for _, l := range m.limiters {
		d = max(d, l.When(key))
	}
	return d
}

// Forget forgets key in every limiter.
func (m *MaxOf[K]) Forget(key K) {
	for _, l := range m.limiters {
		l.Forget(key)
	}
}

// NumRequeues returns the largest count of the limiters.
func (m *MaxOf[K]) NumRequeues(key K) int {
	n := 0
	for _, l := range m.limiters {
		n = max(n, l.NumRequeues(key))
	}
	return n
}

// FastSlowOptions configures a FastSlow limiter.
type FastSlowOptions struct {
	// Fast is the delay of the first MaxFast retries. Default 5 ms.
	Fast time.Duration
	// Slow is the delay of the retries after them. Default 10 s.
	Slow time.Duration
	// MaxFast is the number of fast retries. Default 3.
	MaxFast int
}

// FastSlow retries a key quickly MaxFast times, then slowly.
type FastSlow[K comparable] struct {
	fast, slow time.Duration
	maxFast    int
	failures   failureCounts[K]
}

// NewFastSlow returns a fast-then-slow limiter.
func NewFastSlow[K comparable](o FastSlowOptions) (*FastSlow[K], error) {
	if o.Fast == 0 {
		o.Fast = DefaultBaseDelay
	}
	if o.Slow == 0 {
		o.Slow = 10 * time.Second
	}
	if o.MaxFast == 0 {
		o.MaxFast = 3
	}
	if o.Fast < 0 || o.Slow < 0 || o.MaxFast < 0 {
		return nil, fmt.Errorf("workqueue: fast-slow limiter needs non-negative delays and count, got %v, %v, %d", o.Fast, o.Slow, o.MaxFast)
	}
	return &FastSlow[K]{fast: o.Fast, slow: o.Slow, maxFast: o.MaxFast}, nil
}

// When records a failure and returns Fast for the first MaxFast ones, Slow after.
func (r *FastSlow[K]) When(key K) time.Duration {
	if r.failures.add(key) < r.maxFast {
		return r.fast
	}
	return r.slow
}

// Forget clears the failures of key.
func (r *FastSlow[K]) Forget(key K) { r.failures.forget(key) }

// NumRequeues returns the failures of key.
func (r *FastSlow[K]) NumRequeues(key K) int { return r.failures.count(key) }

// DefaultRateLimiter returns client-go's default controller rate limiter:
// the larger of a per-key exponential backoff (5 ms doubling to 1000 s) and an
// overall 10 qps, burst 100 token bucket. It behaves exactly as
// NewMaxOf(NewExponential(zero), NewBucket(zero)), fused under one lock so
// that When and Forget cost little and allocate nothing. clock may be nil.
func DefaultRateLimiter[K comparable](clock Clock) RateLimiter[K] {
	if clock == nil {
		clock = RealClock{}
	}
	_, real := clock.(RealClock)
	return &defaultLimiter[K]{
		bucket:   Bucket[K]{clock: clock, epoch: clock.Now(), interval: 1e9 / DefaultQPS, window: DefaultBurst * 1e9 / DefaultQPS},
		failures: make(map[K]int),
		real:     real,
	}
}

type defaultLimiter[K comparable] struct {
	// bucket's own mutex guards the bucket, slot, slotN and failures.
	bucket Bucket[K]
	// slot is one failing key whose count, slotN, is kept outside the map:
	// a controller mostly has at most one key in backoff at a time, and a
	// failure followed by a success then costs no hashing, no map growth
	// and no new hash seed (Go draws one, a random number, whenever a map
	// becomes empty). slotN == 0 means the slot is free (slot is then the
	// zero K, holding no reference).
	slot  K
	slotN int
	// failures counts the failures of the other keys since they were last
	// forgotten (absent means 0). Invariant: it never holds slot while
	// slotN > 0, so a key's count is in exactly one place.
	failures map[K]int
	// real: the clock is RealClock, read without an interface call.
	real bool
}

func (r *defaultLimiter[K]) When(key K) time.Duration {
	var now int64
	if r.real {
		now = int64(time.Since(r.bucket.epoch))
	} else {
		now = int64(r.bucket.clock.Since(r.bucket.epoch))
	}
	r.bucket.mu.Lock()
	f := r.fail(key)
	d := r.bucket.take(now)
	r.bucket.mu.Unlock()
	return max(d, backoff(DefaultBaseDelay, DefaultMaxDelay, f))
}

// fail counts a failure of key and returns the count before it. The mutex
// is held.
func (r *defaultLimiter[K]) fail(key K) int {
	if r.slotN > 0 {
		if r.slot == key {
			f := r.slotN
			r.slotN++
			return f
		}
	} else if len(r.failures) == 0 {
		r.slot, r.slotN = key, 1
		return 0
	} else if _, ok := r.failures[key]; !ok {
		r.slot, r.slotN = key, 1
		return 0
	}
	f := r.failures[key]
	r.failures[key] = f + 1
	return f
}

func (r *defaultLimiter[K]) Forget(key K) {
	r.bucket.mu.Lock()
	if r.slotN > 0 && r.slot == key {
		var zero K
		r.slot, r.slotN = zero, 0
	} else if len(r.failures) > 0 {
		delete(r.failures, key)
	}
	r.bucket.mu.Unlock()
}

func (r *defaultLimiter[K]) NumRequeues(key K) int {
	r.bucket.mu.Lock()
	defer r.bucket.mu.Unlock()
	if r.slotN > 0 && r.slot == key {
		return r.slotN
	}
	return r.failures[key]
}
