package workqueue

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestExponentialSequence(t *testing.T) {
	r, err := NewExponential[string](ExponentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	for i, w := range want {
		if got := r.When("a"); got != w {
			t.Fatalf("failure %d: When = %v, want %v", i+1, got, w)
		}
	}
	if got := r.When("b"); got != 5*time.Millisecond {
		t.Fatalf("another key starts at %v", got)
	}
	if n := r.NumRequeues("a"); n != 5 {
		t.Fatalf("NumRequeues = %d", n)
	}
	// 5 ms × 2^17 = 655 s; × 2^18 = 1310 s, capped.
	for range 12 {
		r.When("a")
	}
	if got := r.When("a"); got != 5*time.Millisecond<<17 {
		t.Fatalf("18th failure: %v", got)
	}
	if got := r.When("a"); got != 1000*time.Second {
		t.Fatalf("19th failure: %v, want the 1000 s cap", got)
	}
	r.Forget("a")
	if n := r.NumRequeues("a"); n != 0 {
		t.Fatalf("NumRequeues after Forget = %d", n)
	}
	if got := r.When("a"); got != 5*time.Millisecond {
		t.Fatalf("after Forget: %v", got)
	}
}

func TestBackoffNeverOverflows(t *testing.T) {
	tests := []struct {
		base, max time.Duration
		exp       int
		want      time.Duration
	}{
		{5 * time.Millisecond, 1000 * time.Second, 0, 5 * time.Millisecond},
		{5 * time.Millisecond, 1000 * time.Second, 62, 1000 * time.Second},
		{5 * time.Millisecond, 1000 * time.Second, 63, 1000 * time.Second},
		{5 * time.Millisecond, 1000 * time.Second, 1 << 40, 1000 * time.Second},
		{1, time.Duration(1<<63 - 1), 61, 1 << 61},
		{1, time.Duration(1<<63 - 1), 62, time.Duration(1<<63 - 1)},
		{time.Hour, time.Duration(1<<63 - 1), 40, time.Duration(1<<63 - 1)},
	}
	for _, tt := range tests {
		if got := backoff(tt.base, tt.max, tt.exp); got != tt.want {
			t.Errorf("backoff(%v, %v, %d) = %v, want %v", tt.base, tt.max, tt.exp, got, tt.want)
		}
	}
	r, _ := NewExponential[int](ExponentialOptions{})
	for i := range 100_000 {
		if d := r.When(1); d <= 0 || d > 1000*time.Second {
			t.Fatalf("failure %d: %v", i, d)
		}
	}
}

func TestBucketBurstThenRate(t *testing.T) {
	clock := newFakeClock()
	b, err := NewBucket[string](BucketOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if d := b.When("k"); d != 0 {
			t.Fatalf("burst item %d delayed %v", i, d)
		}
	}
	for i := 1; i <= 5; i++ {
		if d := b.When("k"); d != time.Duration(i)*100*time.Millisecond {
			t.Fatalf("item %d after the burst: %v", i, d)
		}
	}
	// One second later ten tokens came back; five of them were reserved
	// already, so five retries pass at once, then 10/s again.
	clock.Advance(time.Second)
	for i := range 5 {
		if d := b.When("k"); d != 0 {
			t.Fatalf("refilled item %d delayed %v", i, d)
		}
	}
	if d := b.When("k"); d != 100*time.Millisecond {
		t.Fatalf("after the refill: %v", d)
	}
	clock.Advance(time.Hour) // refills to the burst, never beyond
	for i := range 100 {
		if d := b.When("k"); d != 0 {
			t.Fatalf("refilled burst item %d delayed %v", i, d)
		}
	}
	if d := b.When("k"); d != 100*time.Millisecond {
		t.Fatalf("past the refilled burst: %v", d)
	}
}

// TestBucketMatchesTokenModel drives the bucket (counted in time) and a
// token bucket counted in tokens, as golang.org/x/time/rate counts, through
// the same random takes and clock steps: every delay agrees within a
// nanosecond per token of rounding.
func TestBucketMatchesTokenModel(t *testing.T) {
	for _, tt := range []struct {
		qps   float64
		burst int
	}{{10, 100}, {3, 1}, {0.5, 7}, {1000, 5}, {7.3, 20}} {
		clock := newFakeClock()
		b, err := NewBucket[int](BucketOptions{QPS: tt.qps, Burst: tt.burst, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		tokens, rng := float64(tt.burst), rand.New(rand.NewPCG(uint64(tt.burst), 1))
		for i := range 5000 {
			if rng.IntN(3) == 0 {
				step := time.Duration(rng.Int64N(int64(3e9 / tt.qps)))
				clock.Advance(step)
				tokens = min(float64(tt.burst), tokens+step.Seconds()*tt.qps)
			}
			tokens--
			want := time.Duration(0)
			if tokens < 0 {
				want = time.Duration(math.Ceil(-tokens * 1e9 / tt.qps))
			}
			got := b.When(0)
			// Each token's interval is rounded to the nanosecond: allow a
			// nanosecond per token held or reserved, and two for the model's
			// own floating point.
			tol := time.Duration(tt.burst) + time.Duration(float64(want)*tt.qps/1e9) + 2
			if diff := got - want; diff < -tol || diff > tol {
				t.Fatalf("qps %v burst %d, take %d: delay %v, token model %v", tt.qps, tt.burst, i, got, want)
			}
		}
	}
}

// TestBucketExtremeRates: rates far outside any sensible range still give
// sane, non-negative delays and never overflow.
func TestBucketExtremeRates(t *testing.T) {
	for _, qps := range []float64{1e-300, 1e-12, 1e12, 1e300} {
		clock := newFakeClock()
		b, err := NewBucket[int](BucketOptions{QPS: qps, Burst: 1 << 30, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		prev := time.Duration(-1)
		for range 1000 {
			d := b.When(0)
			if d < 0 || d < prev && d != 0 {
				t.Fatalf("qps %v: delay %v after %v", qps, d, prev)
			}
			prev = d
			clock.Advance(time.Millisecond)
		}
	}
}

func TestDefaultLimiterIsMaxOfExponentialAndBucket(t *testing.T) {
	clockA, clockB := newFakeClock(), newFakeClock()
	fused := DefaultRateLimiter[int](clockA)
	exp, _ := NewExponential[int](ExponentialOptions{})
	bucket, _ := NewBucket[int](BucketOptions{Clock: clockB})
	composed, err := NewMaxOf[int](exp, bucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		key := i % 7
		if i%50 == 49 {
			clockA.Advance(300 * time.Millisecond)
			clockB.Advance(300 * time.Millisecond)
		}
		if i%11 == 10 {
			fused.Forget(key)
			composed.Forget(key)
		}
		if a, b := fused.When(key), composed.When(key); a != b {
			t.Fatalf("step %d key %d: fused %v, MaxOf %v", i, key, a, b)
		}
		if a, b := fused.NumRequeues(key), composed.NumRequeues(key); a != b {
			t.Fatalf("step %d key %d: requeues fused %d, MaxOf %d", i, key, a, b)
		}
	}
}

func TestFastSlow(t *testing.T) {
	r, err := NewFastSlow[string](FastSlowOptions{Fast: time.Millisecond, Slow: time.Minute, MaxFast: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{time.Millisecond, time.Millisecond, time.Minute, time.Minute} {
		if got := r.When("a"); got != want {
			t.Fatalf("failure %d: %v, want %v", i+1, got, want)
		}
	}
	if r.NumRequeues("a") != 4 {
		t.Fatalf("NumRequeues = %d", r.NumRequeues("a"))
	}
	r.Forget("a")
	if got := r.When("a"); got != time.Millisecond {
		t.Fatalf("after Forget: %v", got)
	}
}

func TestLimiterOptionErrors(t *testing.T) {
	if _, err := NewExponential[int](ExponentialOptions{Base: time.Second, Max: time.Millisecond}); err == nil {
		t.Error("max < base accepted")
	}
	if _, err := NewExponential[int](ExponentialOptions{Base: -1}); err == nil {
		t.Error("negative base accepted")
	}
	if _, err := NewBucket[int](BucketOptions{QPS: -1}); err == nil {
		t.Error("negative qps accepted")
	}
	if _, err := NewFastSlow[int](FastSlowOptions{MaxFast: -1}); err == nil {
		t.Error("negative MaxFast accepted")
	}
	if _, err := NewMaxOf[int](); err == nil {
		t.Error("empty MaxOf accepted")
	}
	if _, err := NewMaxOf[int](nil); err == nil {
		t.Error("nil limiter accepted")
	}
}

// FuzzDefaultLimiter drives the fused default limiter and its definition,
// MaxOf(Exponential, Bucket), with the same When/Forget/NumRequeues calls on a
// few keys (the zero key among them) and clock advances, and checks that they
// answer alike and agree on every key's count after each step: the fused one
// keeps one key outside its map, and keys move between the two.
func FuzzDefaultLimiter(f *testing.F) {
	f.Add([]byte{0, 4, 1, 5, 2, 8, 12, 0, 1, 6, 3})
	f.Add([]byte{1, 1, 1, 5, 0, 0, 9, 2, 2, 6, 4, 5})
	f.Add([]byte{2, 6, 1, 2, 5, 10, 1, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		clockA, clockB := newFakeClock(), newFakeClock()
		fused := DefaultRateLimiter[int](clockA)
		exp, _ := NewExponential[int](ExponentialOptions{})
		bucket, _ := NewBucket[int](BucketOptions{Clock: clockB})
		composed, err := NewMaxOf[int](exp, bucket)
		if err != nil {
			t.Fatal(err)
		}
		for i, op := range ops {
			key := int(op & 3)
			switch op >> 2 & 3 {
			case 0, 1:
				if a, b := fused.When(key), composed.When(key); a != b {
					t.Fatalf("op %d When(%d): fused %v, MaxOf %v", i, key, a, b)
				}
			case 2:
				fused.Forget(key)
				composed.Forget(key)
			case 3:
				d := time.Duration(op>>4) * 100 * time.Millisecond
				clockA.Advance(d)
				clockB.Advance(d)
			}
			for k := range 4 {
				if a, b := fused.NumRequeues(k), composed.NumRequeues(k); a != b {
					t.Fatalf("op %d: NumRequeues(%d) fused %d, MaxOf %d", i, k, a, b)
				}
			}
		}
	})
}

// TestForgetTracksKeysWithFailures: Forget skips its lock while no key has
// failures; the count of keys with failures follows When and Forget.
func TestForgetTracksKeysWithFailures(t *testing.T) {
	r, err := NewExponential[string](ExponentialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		op, key string
		keys    int64
	}{
		{"forget", "a", 0},
		{"when", "a", 1},
		{"when", "a", 1},
		{"when", "b", 2},
		{"forget", "c", 2},
		{"forget", "a", 1},
		{"forget", "a", 1},
		{"forget", "b", 0},
		{"when", "b", 1},
	}
	for i, s := range steps {
		if s.op == "when" {
			r.When(s.key)
		} else {
			r.Forget(s.key)
		}
		if got := r.failures.keys.Load(); got != s.keys {
			t.Fatalf("step %d (%s %s): %d keys with failures, want %d", i, s.op, s.key, got, s.keys)
		}
	}
	if n := r.NumRequeues("b"); n != 1 {
		t.Fatalf("NumRequeues(b) = %d, want 1", n)
	}
}
