package workqueue

import (
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"kloop.dev/kloop/internal/testutil"
)

// runTranscript drives a queue through a script, one operation per line, and
// checks every expectation on the way:
//
//	add K [pN]            Add, or AddWithOptions with priority N
//	after K D [pN]        AddAfter / AddWithOptions{After: D}
//	ratelimited K         AddRateLimited
//	addall K,K… [D] [rl] [pN]  AddAll of the keys, After D, RateLimited
//	get K                 Get must hand out K now
//	done K                Done
//	forget K              Forget
//	requeues K N          NumRequeues must be N
//	len N                 Len must be N
//	tick D                advance the fake clock by D
//	shutdown              ShutDown
//	closed                Get must report shutdown now
func runTranscript(t *testing.T, q *Queue[string], clock *fakeClock, script string) {
	t.Helper()
	for lineNo, line := range strings.Split(strings.TrimSpace(script), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		where := "line " + strconv.Itoa(lineNo+1) + " (" + strings.TrimSpace(line) + ")"
		prio := 0
		if last := f[len(f)-1]; len(f) > 1 && strings.HasPrefix(last, "p") {
			if n, err := strconv.Atoi(last[1:]); err == nil {
				prio = n
				f = f[:len(f)-1]
			}
		}
		dur := func(s string) time.Duration {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			return d
		}
		num := func(s string) int {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			return n
		}
		switch f[0] {
		case "add":
			q.AddWithOptions(f[1], AddOptions{Priority: prio})
		case "after":
			q.AddWithOptions(f[1], AddOptions{Priority: prio, After: dur(f[2])})
		case "ratelimited":
			q.AddRateLimited(f[1])
		case "addall":
			o := AddOptions{Priority: prio}
			for _, a := range f[2:] {
				if a == "rl" {
					o.RateLimited = true
				} else {
					o.After = dur(a)
				}
			}
			q.AddAll(strings.Split(f[1], ","), o)
		case "get":
			if q.Len() == 0 {
				t.Fatalf("%s: nothing ready", where)
			}
			got, shutdown := q.Get()
			if shutdown || got != f[1] {
				t.Fatalf("%s: Get = %q, shutdown %v", where, got, shutdown)
			}
		case "done":
			q.Done(f[1])
		case "forget":
			q.Forget(f[1])
		case "requeues":
			if got := q.NumRequeues(f[1]); got != num(f[2]) {
				t.Fatalf("%s: NumRequeues = %d", where, got)
			}
		case "len":
			if got := q.Len(); got != num(f[1]) {
				t.Fatalf("%s: Len = %d", where, got)
			}
		case "tick":
			clock.Advance(dur(f[1]))
		case "shutdown":
			q.ShutDown()
		case "closed":
			if got, shutdown := q.Get(); !shutdown {
				t.Fatalf("%s: Get = %q, want shutdown", where, got)
			}
		default:
			t.Fatalf("%s: unknown operation", where)
		}
	}
}

func newTestQueue(t *testing.T, limiter RateLimiter[string]) (*Queue[string], *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	q, err := New(Options[string]{Clock: clock, RateLimiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.ShutDown)
	return q, clock
}

func TestTranscripts(t *testing.T) {
	tests := []struct{ name, script string }{
		{"fair: keys leave in the order they came", `
			add a
			add b
			add c
			len 3
			get a
			get b
			get c
			len 0`},
		{"stingy: repeated adds are handed out once", `
			add a
			add b
			add a
			add a
			len 2
			get a
			get b
			len 0`},
		{"dirty re-add: a held key is not handed out, then comes back at Done", `
			add a
			get a
			add a
			add a
			len 0
			add b
			get b
			done a
			len 1
			get a
			done a
			done b
			len 0`},
		{"done without re-add forgets the key", `
			add a
			get a
			done a
			len 0
			add a
			get a`},
		{"delays come out in time order, not add order", `
			after a 30ms
			after b 10ms
			after c 20ms
			len 0
			tick 9ms
			len 0
			tick 1ms
			get b
			tick 10ms
			get c
			tick 10ms
			get a`},
		{"equal delays keep add order", `
			after a 10ms
			after b 10ms
			tick 10ms
			get a
			get b`},
		{"an earlier AddAfter moves a waiting key earlier", `
			after a 50ms
			after a 10ms
			tick 10ms
			get a
			done a
			tick 100ms
			len 0`},
		{"a later AddAfter never moves a waiting key later", `
			after a 10ms
			after a 50ms
			tick 10ms
			get a`},
		{"Add makes a waiting key ready now and it does not come again", `
			after a 50ms
			add a
			get a
			done a
			tick 100ms
			len 0`},
		{"AddAfter of a ready key changes nothing", `
			add a
			after a 10ms
			get a
			done a
			tick 20ms
			len 0`},
		{"AddAfter of a held key re-queues it after the delay, at Done if still held", `
			add a
			get a
			after a 10ms
			tick 10ms
			len 0
			done a
			get a
			done a`},
		{"AddAfter of a held key, Done first: it waits for its time", `
			add a
			get a
			after a 10ms
			done a
			len 0
			tick 10ms
			get a`},
		{"zero and negative delays are Add", `
			after a 0s
			after b -1s
			get a
			get b`},
		{"higher priority first, FIFO within one", `
			add a
			add b
			add c p5
			add d p5
			add e p-1
			get c
			get d
			get a
			get b
			get e`},
		{"re-adding with a higher priority raises, with a lower does not lower", `
			add a
			add b
			add c
			add c p10
			add a p-5
			get c
			get a
			get b
			len 0`},
		{"a delayed key keeps its priority when it becomes ready", `
			add a
			after b 10ms p3
			tick 10ms
			get b
			get a`},
		{"priority raise of a waiting key by an immediate add", `
			add a p1
			after b 10ms
			add b p2
			get b
			get a`},
		{"rate limited adds back off per key and Forget resets", `
			ratelimited a
			requeues a 1
			tick 5ms
			get a
			ratelimited a
			done a
			requeues a 2
			tick 9ms
			len 0
			tick 1ms
			get a
			done a
			forget a
			requeues a 0
			ratelimited a
			tick 5ms
			get a`},
		{"addall: as many adds, under one lock", `
			add b
			get b
			addall a,b,c,a
			len 2
			get a
			get c
			done b
			get b
			done a
			addall d,e p1
			addall f,a p2
			get f
			get a
			get d
			get e
			addall x,y 10ms
			addall y 5ms p1
			len 0
			tick 5ms
			get y
			tick 5ms
			get x
			addall z,w rl
			requeues z 1
			requeues w 1
			tick 4ms
			len 0
			tick 1ms
			get z
			get w
			shutdown
			addall q,r
			closed`},
		{"shutdown hands out what is ready, drops what waits, ignores adds", `
			add a
			add b
			after c 10ms
			shutdown
			add d
			get a
			get b
			tick 20ms
			closed
			closed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			limiter, err := NewExponential[string](ExponentialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			q, err := New(Options[string]{Clock: clock, RateLimiter: limiter})
			if err != nil {
				t.Fatal(err)
			}
			defer q.ShutDown()
			runTranscript(t, q, clock, tt.script)
		})
	}
}

// The zero Options work, and the default limiter is client-go's.
func TestZeroOptions(t *testing.T) {
	q, err := New(Options[int]{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	q.Add(1)
	if k, shutdown := q.Get(); k != 1 || shutdown {
		t.Fatalf("Get = %v, %v", k, shutdown)
	}
	q.Done(1)
	if _, ok := q.limiter.(*defaultLimiter[int]); !ok {
		t.Fatalf("default limiter is %T", q.limiter)
	}
}

func TestGetBlocksUntilAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := New(Options[string]{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string)
		go func() {
			k, _ := q.Get()
			got <- k
		}()
		synctest.Wait()
		select {
		case k := <-got:
			t.Fatalf("Get returned %q on an empty queue", k)
		default:
		}
		q.Add("a")
		if k := <-got; k != "a" {
			t.Fatalf("Get = %q", k)
		}
		q.Done("a")
		q.ShutDown()
	})
}

// A worker blocked in Get is not handed a key another worker holds; it gets it
// once the holder calls Done.
func TestOneWorkerPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New(Options[string]{})
		q.Add("a")
		k, _ := q.Get()
		got := make(chan string, 1)
		go func() {
			k, _ := q.Get()
			got <- k
		}()
		q.Add("a")
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("a held key was handed to a second worker")
		}
		q.Done(k)
		if k2 := <-got; k2 != "a" {
			t.Fatalf("second Get = %q", k2)
		}
		q.Done("a")
		q.ShutDown()
	})
}

// With the real clock inside a synctest bubble, a delayed key becomes ready
// exactly when its time comes.
func TestAddAfterRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New(Options[string]{})
		start := time.Now()
		q.AddAfter("b", 2*time.Second)
		q.AddAfter("a", time.Second)
		for _, want := range []struct {
			key string
			at  time.Duration
		}{{"a", time.Second}, {"b", 2 * time.Second}} {
			k, _ := q.Get()
			if k != want.key || time.Since(start) != want.at {
				t.Fatalf("Get = %q after %v, want %q after %v", k, time.Since(start), want.key, want.at)
			}
			q.Done(k)
		}
		q.ShutDown()
	})
}

func TestShutDownWakesGet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New(Options[string]{})
		var wg sync.WaitGroup
		var shut atomic.Int32
		for range 3 {
			wg.Go(func() {
				if _, shutdown := q.Get(); shutdown {
					shut.Add(1)
				}
			})
		}
		synctest.Wait()
		q.ShutDown()
		wg.Wait()
		if shut.Load() != 3 {
			t.Fatalf("%d of 3 blocked Gets saw the shutdown", shut.Load())
		}
		if !q.ShuttingDown() {
			t.Fatal("ShuttingDown = false")
		}
	})
}

func TestShutDownWithDrainWaitsForDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := New(Options[string]{})
		q.Add("a")
		q.Add("b")
		k, _ := q.Get()
		drained := make(chan struct{})
		go func() {
			q.ShutDownWithDrain()
			close(drained)
		}()
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("ShutDownWithDrain returned while a key was held")
		default:
		}
		// The ready key is still handed out during the drain.
		k2, shutdown := q.Get()
		if shutdown || k2 != "b" {
			t.Fatalf("Get during drain = %q, %v", k2, shutdown)
		}
		q.Done(k)
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("ShutDownWithDrain returned while a key was held")
		default:
		}
		q.Done(k2)
		<-drained
		if _, shutdown := q.Get(); !shutdown {
			t.Fatal("Get after drain did not report shutdown")
		}
	})
}

func TestShutDownWithDrainNothingHeld(t *testing.T) {
	q, _ := New(Options[string]{})
	q.ShutDownWithDrain() // returns at once
	q.ShutDown()          // idempotent
	q.Done("never-got")   // harmless
}

// Under a producer that adds as fast as it can, workers keep making progress:
// every key added is handed out, none twice at once.
func TestProgressUnderLoad(t *testing.T) {
	for _, keys := range []int{100, 10_000} {
		t.Run(strconv.Itoa(keys)+" keys", func(t *testing.T) {
			q, _ := New(Options[int]{})
			const adds = 200_000
			var held sync.Map
			var processed atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						k, shutdown := q.Get()
						if shutdown {
							return
						}
						if _, dup := held.LoadOrStore(k, true); dup {
							t.Errorf("key %d held by two workers", k)
						}
						processed.Add(1)
						held.Delete(k)
						q.Done(k)
					}
				})
			}
			for i := range adds {
				q.Add(i % keys)
			}
			// Every key's last add is handed out before the drain finishes.
			q.ShutDownWithDrain()
			wg.Wait()
			if p := processed.Load(); p < int64(keys) || p > adds {
				t.Fatalf("processed %d items for %d adds of %d keys", p, adds, keys)
			}
		})
	}
}

func depthOf(s Stats, prio int) int {
	for _, d := range s.Depth {
		if d.Priority == prio {
			return d.Ready
		}
	}
	return 0
}

func TestMetrics(t *testing.T) {
	clock := newFakeClock()
	m := &testutil.Provider[Stats]{}
	q, err := New(Options[string]{Name: "test", Clock: clock, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	if names := m.Names(); len(names) != 1 || names[0] != "test" {
		t.Fatalf("registered as %q", names)
	}
	q.Add("a")
	q.Add("a") // not a new add
	q.AddWithOptions("b", AddOptions{Priority: 2})
	if s := m.Only(); s.Adds != 2 || depthOf(s, 0) != 1 || depthOf(s, 2) != 1 || s.Depth[0].Priority != 2 {
		t.Fatalf("after adds: %+v", s)
	}
	clock.Advance(3 * time.Millisecond)
	b, _ := q.Get()
	clock.Advance(2 * time.Millisecond)
	a, _ := q.Get()
	if s := m.Only(); s.Unfinished != 2*time.Millisecond || s.Longest != 2*time.Millisecond {
		t.Fatalf("in flight = %v, %v", s.Unfinished, s.Longest)
	}
	clock.Advance(7 * time.Millisecond)
	if s := m.Only(); s.Unfinished != 16*time.Millisecond || s.Longest != 9*time.Millisecond {
		t.Fatalf("in flight = %v, %v", s.Unfinished, s.Longest)
	}
	q.Done(b)
	q.Done(a)
	s := m.Only()
	if s.Unfinished != 0 || s.Longest != 0 {
		t.Fatalf("in flight after Done = %v, %v", s.Unfinished, s.Longest)
	}
	// 3 ms and 5 ms fall in the (1 ms, 10 ms] bucket, index 6.
	if h := s.QueueDuration; h.Count != 2 || h.Sum != 8*time.Millisecond || h.Buckets[6] != 2 {
		t.Fatalf("queue duration %+v", h)
	}
	if h := s.WorkDuration; h.Count != 2 || h.Sum != 16*time.Millisecond || h.Buckets[6] != 2 {
		t.Fatalf("work duration %+v", h)
	}
	if depthOf(s, 0) != 0 || depthOf(s, 2) != 0 {
		t.Fatalf("depth %v", s.Depth)
	}
	q.AddRateLimited("c")
	q.AddAfter("d", time.Second)
	if s := m.Only(); s.Retries != 2 || s.Adds != 2 {
		t.Fatalf("retries %d, adds %d", s.Retries, s.Adds)
	}
	clock.Advance(time.Second)
	if s := m.Only(); s.Adds != 4 || depthOf(s, 0) != 2 {
		t.Fatalf("after delays: %+v", s)
	}
	// A priority raise moves the key between depths.
	q.AddWithOptions("c", AddOptions{Priority: 9})
	if s := m.Only(); depthOf(s, 0) != 1 || depthOf(s, 9) != 1 || s.Adds != 4 {
		t.Fatalf("after raise: %+v", s)
	}
}

func TestHistogramBuckets(t *testing.T) {
	tests := []struct {
		d      time.Duration
		bucket int
	}{
		{0, 0}, {10 * time.Nanosecond, 0}, {11 * time.Nanosecond, 1}, {time.Microsecond, 2},
		{time.Second, 8}, {1000 * time.Second, 11}, {1001 * time.Second, 12}, {time.Duration(1<<63 - 1), 12},
	}
	for _, tt := range tests {
		var h Histogram
		h.observe(tt.d)
		if h.Buckets[tt.bucket] != 1 || h.Count != 1 || h.Sum != tt.d {
			t.Errorf("observe(%v): %+v, want bucket %d", tt.d, h, tt.bucket)
		}
	}
}

// Moving many waiting keys earlier leaves stale heap entries behind; the heap
// is rebuilt once they outnumber the live ones, and the order stays exact.
func TestDelayHeapRebuild(t *testing.T) {
	q, clock := newTestQueue(t, nil)
	const n = 3000
	for i := range n {
		q.AddAfter(strconv.Itoa(i), time.Hour+time.Duration(i)*time.Millisecond)
	}
	for round := 1; round <= 3; round++ {
		for i := range n {
			// Reverse the order: key i becomes due at (n-i) ms.
			q.AddAfter(strconv.Itoa(i), time.Duration(n-i)*time.Millisecond-time.Duration(round)*time.Microsecond)
		}
	}
	q.mu.Lock()
	heapLen, stale := len(q.heap), q.stale
	q.mu.Unlock()
	if heapLen > 2*n+1024 || stale > heapLen {
		t.Fatalf("heap of %d entries, %d stale: not compacted", heapLen, stale)
	}
	// Every other key is made ready now: its entries go stale too.
	for i := 0; i < n; i += 2 {
		q.Add(strconv.Itoa(i))
	}
	for i := 0; i < n; i += 2 {
		if k, _ := q.Get(); k != strconv.Itoa(i) {
			t.Fatalf("Get = %s, want %d", k, i)
		}
	}
	clock.Advance(time.Duration(n) * time.Millisecond)
	for i := n - 1; i >= 0; i -= 2 {
		if k, _ := q.Get(); k != strconv.Itoa(i) {
			t.Fatalf("Get = %s, want %d", k, i)
		}
	}
	clock.Advance(2 * time.Hour)
	if q.Len() != 0 {
		t.Fatalf("Len = %d after everything came out once", q.Len())
	}
}

func TestGetWithPriority(t *testing.T) {
	q, clock := newTestQueue(t, nil)
	q.AddWithOptions("low", AddOptions{Priority: -100})
	q.AddWithOptions("waiting", AddOptions{Priority: 7, After: time.Second})
	q.Add("normal")
	for _, want := range []struct {
		key  string
		prio int
	}{{"normal", 0}, {"low", -100}} {
		k, p, shutdown := q.GetWithPriority()
		if k != want.key || p != want.prio || shutdown {
			t.Fatalf("GetWithPriority = %q, %d, %v; want %q, %d", k, p, shutdown, want.key, want.prio)
		}
		q.Done(k)
	}
	clock.Advance(time.Second)
	if k, p, _ := q.GetWithPriority(); k != "waiting" || p != 7 {
		t.Fatalf("GetWithPriority = %q, %d", k, p)
	}
	q.ShutDown()
	if _, _, shutdown := q.GetWithPriority(); !shutdown {
		t.Fatal("no shutdown")
	}
}

// TestDoneWithManyHeld: Done finds a held key by comparing the few held
// keys, or by the index when more than heldScan are held; a key that is not
// held, or a copy of a held key in other memory, is handled the same way in
// both regimes.
func TestDoneWithManyHeld(t *testing.T) {
	for _, held := range []int{1, heldScan, heldScan + 1, 3 * heldScan} {
		t.Run(fmt.Sprint(held), func(t *testing.T) {
			q, _ := newTestQueue(t, nil)
			for i := range held {
				q.Add(fmt.Sprintf("k%d", i))
			}
			keys := make([]string, held)
			for i := range keys {
				k, shutdown := q.Get()
				if shutdown {
					t.Fatal("shutdown")
				}
				keys[i] = k
			}
			q.Add("ready") // ready, not held: Done leaves it alone
			q.Done("ready")
			q.Done("absent")
			q.Add(keys[0]) // dirty while held: ready again at Done
			for i := len(keys) - 1; i >= 0; i-- {
				q.Done(strings.Clone(keys[i])) // equal key, other memory
			}
			got := map[string]bool{}
			for q.Len() > 0 {
				k, _ := q.Get()
				got[k] = true
				q.Done(k)
			}
			if want := map[string]bool{"ready": true, keys[0]: true}; !maps.Equal(got, want) {
				t.Fatalf("ready after Done: %v, want %v", got, want)
			}
			if q.Len() != 0 || len(q.inFlight) != 0 || q.inUse() != 0 {
				t.Fatalf("left: %d ready, %d held, %d indexed", q.Len(), len(q.inFlight), q.inUse())
			}
		})
	}
}

// TestNoLostWakeUp: workers are woken one after the other while they find
// keys (see Queue.waking); every key added is handed out without a
// shutdown to wake anybody, for bursts of any size and any number of
// workers, added one by one or with AddAll, and once idle every worker
// waits with no wake-up outstanding.
func TestNoLostWakeUp(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8} {
		t.Run(strconv.Itoa(workers)+" workers", func(t *testing.T) {
			q, _ := New(Options[int]{})
			var processed atomic.Int64
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for {
						k, shutdown := q.Get()
						if shutdown {
							return
						}
						if k%7 == 0 {
							runtime.Gosched() // some keys take a while
						}
						processed.Add(1)
						q.Done(k)
					}
				})
			}
			const total = 20_000
			next := 0
			for next < total {
				burst := min(total-next, 1+next%97)
				if burst%4 == 0 { // a batch
					keys := make([]int, burst)
					for i := range keys {
						keys[i] = next + i
					}
					q.AddAll(keys, AddOptions{})
					next += burst
					continue
				}
				for range burst {
					if next%5 == 0 {
						q.AddAfter(next, time.Microsecond) // through the timer
					} else {
						q.Add(next)
					}
					next++
				}
				if next%3 == 0 {
					time.Sleep(50 * time.Microsecond) // let the workers run dry
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for processed.Load() < total {
				if time.Now().After(deadline) {
					q.mu.Lock()
					t.Fatalf("processed %d of %d: %d ready, %d waiters, %d waking", processed.Load(), total, q.ready, q.waiters, q.waking)
				}
				time.Sleep(time.Millisecond)
			}
			// A worker signalled for a key that another one took is still
			// counted among the waiters until it is back in Wait, with its
			// wake-up outstanding meanwhile: wait until that is over, and
			// fail only if it never is.
			for {
				q.mu.Lock()
				waiters, waking := q.waiters, q.waking
				q.mu.Unlock()
				if waiters == workers && waking == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d workers wait, %d wake-ups outstanding", waiters, workers, waking)
				}
				time.Sleep(time.Millisecond)
			}
			q.ShutDown()
			wg.Wait()
		})
	}
}

// Next is Done then GetWithPriority: the finished key leaves (or comes back
// if it was added while held), then the next ready key is handed out.
func TestNext(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(q *Queue[string]) // after "a" was handed out
		want    string
		wantLen int // ready keys left after Next
	}{
		{"next ready key", func(q *Queue[string]) { q.Add("b") }, "b", 0},
		{"dirty key comes back behind the ready ones", func(q *Queue[string]) { q.Add("b"); q.Add("a") }, "b", 1},
		{"dirty key alone comes back at once", func(q *Queue[string]) { q.Add("a") }, "a", 0},
		{"higher priority first", func(q *Queue[string]) {
			q.Add("b")
			q.AddWithOptions("c", AddOptions{Priority: 5})
		}, "c", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(t, nil)
			q.Add("a")
			if k, _ := q.Get(); k != "a" {
				t.Fatalf("Get = %q", k)
			}
			tt.setup(q)
			k, _, shutdown := q.Next("a")
			if k != tt.want || shutdown {
				t.Fatalf("Next = %q, %v; want %q", k, shutdown, tt.want)
			}
			if q.Len() != tt.wantLen {
				t.Fatalf("Len = %d, want %d", q.Len(), tt.wantLen)
			}
			if _, held := q.held("a"); held && k != "a" {
				t.Fatal("a still held after Next")
			}
		})
	}
	t.Run("blocks until a key is ready", func(t *testing.T) {
		q, _ := newTestQueue(t, nil)
		q.Add("a")
		q.Get()
		got := make(chan string)
		go func() {
			k, _, _ := q.Next("a")
			got <- k
		}()
		time.Sleep(10 * time.Millisecond)
		q.Add("b")
		if k := <-got; k != "b" {
			t.Fatalf("Next = %q", k)
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		q, _ := newTestQueue(t, nil)
		q.Add("a")
		q.Get()
		q.ShutDown()
		if _, _, shutdown := q.Next("a"); !shutdown {
			t.Fatal("Next after ShutDown: no shutdown")
		}
		if len(q.inFlight) != 0 {
			t.Fatal("a still held")
		}
	})
}

// TestAddAfterHugeDelay: a delay so long that the due time overflows waits
// (saturated at the end of time) instead of wrapping round to a due time in
// the past: such a key became ready with the next key's timer, and an
// earlier add could no longer move it up.
func TestAddAfterHugeDelay(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	tests := []struct {
		name  string
		add   func(q *Queue[string])
		ready []string // after an hour, in order
	}{
		{"max duration", func(q *Queue[string]) { q.AddAfter("k", huge) }, nil},
		{"max duration minus a second", func(q *Queue[string]) { q.AddAfter("k", huge-time.Second) }, nil},
		{"a hundred years", func(q *Queue[string]) { q.AddAfter("k", 100*365*24*time.Hour) }, nil},
		{"with a priority", func(q *Queue[string]) {
			q.AddWithOptions("k", AddOptions{Priority: 3, After: huge})
		}, nil},
		{"not made ready by another key's timer", func(q *Queue[string]) {
			q.AddAfter("k", huge)
			q.AddAfter("other", time.Minute)
		}, []string{"other"}},
		{"an earlier add moves it up", func(q *Queue[string]) {
			q.AddAfter("k", huge)
			q.AddAfter("k", time.Minute)
		}, []string{"k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clock := newTestQueue(t, nil)
			clock.Advance(time.Hour) // the queue's clock is past its epoch
			tt.add(q)
			if q.Len() != 0 {
				t.Fatalf("ready at once: Len = %d", q.Len())
			}
			clock.Advance(time.Hour)
			var got []string
			for q.Len() > 0 {
				k, _ := q.Get()
				got = append(got, k)
				q.Done(k)
			}
			if !slices.Equal(got, tt.ready) {
				t.Fatalf("ready after an hour: %q, want %q", got, tt.ready)
			}
		})
	}
}

// A queue used with many priorities, or with a burst of ready keys, gives
// the memory back once they are handed out: empty levels beyond keepLevels
// are dropped and a drained ring larger than ringKeep is freed.
func TestReadyMemoryReleased(t *testing.T) {
	tests := []struct {
		name       string
		keys       int
		priorities int
	}{
		{"one priority, small", 100, 1},
		{"one priority, burst", 10 * ringKeep, 1},
		{"two priorities", 1000, 2},
		{"many priorities", 1000, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := newTestQueue(t, nil)
			for i := range tt.keys {
				q.AddWithOptions(strconv.Itoa(i), AddOptions{Priority: i % tt.priorities})
			}
			if got := len(q.levels); got != tt.priorities {
				t.Fatalf("%d levels for %d priorities", got, tt.priorities)
			}
			last := tt.priorities
			for range tt.keys {
				k, p, _ := q.GetWithPriority()
				if p > last {
					t.Fatalf("priority %d after %d", p, last)
				}
				last = p
				q.Done(k)
			}
			if q.Len() != 0 {
				t.Fatalf("Len = %d", q.Len())
			}
			if got := len(q.levels); got > keepLevels {
				t.Fatalf("%d levels left after the drain, want at most %d", got, keepLevels)
			}
			for _, l := range q.levels {
				if len(l.ring.buf) > ringKeep {
					t.Fatalf("priority %d keeps a ring of %d entries", l.prio, len(l.ring.buf))
				}
			}
			// The kept levels still work.
			q.AddWithOptions("again", AddOptions{Priority: tt.priorities - 1})
			if k, _ := q.Get(); k != "again" {
				t.Fatalf("Get = %q", k)
			}
		})
	}
}

// idleLen walks the idle list, checking its links, and returns its length
// (-1 if the links are broken or it holds a node that is not idle).
func (q *Queue[K]) idleLen() int {
	n, prev := 0, int32(-1)
	for i := q.idleHead; i >= 0; i = q.nodes[i].idleNext {
		if q.nodes[i].idlePrev != prev || q.nodes[i].flags != flagIdle || n > len(q.nodes) {
			return -1
		}
		prev = i
		n++
	}
	if prev != q.idleTail {
		return -1
	}
	return n
}

// inUse is the number of keys ready, waiting or held: the indexed ones
// that are not idle.
func (q *Queue[K]) inUse() int { return len(q.index) - q.idleN }

// A key that leaves the queue stays indexed, idle, for its next add — up
// to maxIdle of them, the oldest freed first; keys coming back leave stale
// entries that are compacted away; ShutDown frees them all.
func TestIdleKeys(t *testing.T) {
	q, _ := newTestQueue(t, nil)
	cycle := func(k string) {
		q.Add(k)
		got, _ := q.Get()
		if got != k {
			t.Fatalf("Get = %q, want %q", got, k)
		}
		q.Done(k)
	}
	for i := range 10 {
		cycle(fmt.Sprint("k", i))
	}
	if q.idleN != 10 || len(q.index) != 10 || q.inUse() != 0 {
		t.Fatalf("after 10 keys: %d idle, %d indexed", q.idleN, len(q.index))
	}
	nodes := len(q.nodes)
	for range 1000 {
		cycle("k3") // comes back: no new node, the idle ring stays small
	}
	if len(q.nodes) != nodes || q.idleN != 10 || q.idleLen() != 10 {
		t.Fatalf("a returning key: %d nodes (was %d), %d idle, %d in the idle list", len(q.nodes), nodes, q.idleN, q.idleLen())
	}
	for i := range maxIdle + 100 {
		cycle(fmt.Sprint("m", i))
	}
	if q.idleN != maxIdle || len(q.index) != maxIdle {
		t.Fatalf("past maxIdle: %d idle, %d indexed", q.idleN, len(q.index))
	}
	if _, ok := q.index["k0"]; ok {
		t.Fatal("the oldest idle key was not the one freed")
	}
	if _, ok := q.index[fmt.Sprint("m", maxIdle+99)]; !ok {
		t.Fatal("the newest idle key was freed")
	}
	// A revived idle key behaves as a new one.
	if n := &q.nodes[q.index["m4000"]]; n.flags != flagIdle {
		t.Fatalf("m4000 is not idle: flags %b", n.flags)
	}
	q.AddWithOptions("m4000", AddOptions{Priority: 3})
	q.Add("x")
	if got, p, _ := q.GetWithPriority(); got != "m4000" || p != 3 {
		t.Fatalf("GetWithPriority = %q p%d, want m4000 p3", got, p)
	}
	q.ShutDown()
	if q.idleN != 0 || len(q.index) != 2 || q.idleHead != -1 || q.idleTail != -1 {
		t.Fatalf("after ShutDown: %d idle, %d indexed (want the held and the ready key), idle list %d…%d", q.idleN, len(q.index), q.idleHead, q.idleTail)
	}
	q.Done("m4000")
	if got, _ := q.Get(); got != "x" {
		t.Fatalf("Get = %q, want x", got)
	}
	q.Done("x")
	if len(q.index) != 0 || q.idleN != 0 {
		t.Fatalf("after the last Done: %d indexed, %d idle", len(q.index), q.idleN)
	}
}

// An idle key comes back as a new key, by every kind of add: at its new
// add's priority (not the one it left at), delayed if the add is, idle
// again after its Done — and freed, not left indexed, by a ShutDown while
// it is back.
func TestIdleKeyRevival(t *testing.T) {
	tests := []struct {
		name  string
		add   func(q *Queue[string])
		prio  int
		delay time.Duration
	}{
		{"add", func(q *Queue[string]) { q.Add("a") }, 0, 0},
		{"add at a lower priority", func(q *Queue[string]) { q.AddWithOptions("a", AddOptions{Priority: -1}) }, -1, 0},
		{"add after", func(q *Queue[string]) { q.AddAfter("a", time.Second) }, 0, time.Second},
		{"add after at a priority", func(q *Queue[string]) { q.AddWithOptions("a", AddOptions{Priority: 2, After: time.Second}) }, 2, time.Second},
		{"add all", func(q *Queue[string]) { q.AddAll([]string{"a", "a"}, AddOptions{}) }, 0, 0},
		{"add all after", func(q *Queue[string]) { q.AddAll([]string{"a"}, AddOptions{After: time.Second}) }, 0, time.Second},
	}
	for _, tt := range tests {
		for _, shutdown := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/shutdown=%t", tt.name, shutdown), func(t *testing.T) {
				q, clock := newTestQueue(t, nil)
				// a leaves the queue at priority 5, after a delay and a
				// re-add while held: every field of its node was used.
				q.AddWithOptions("a", AddOptions{Priority: 5, After: time.Millisecond})
				clock.Advance(time.Millisecond)
				if got, p, _ := q.GetWithPriority(); got != "a" || p != 5 {
					t.Fatalf("GetWithPriority = %q p%d, want a p5", got, p)
				}
				q.AddWithOptions("a", AddOptions{Priority: 5})
				q.Done("a")
				if got, _ := q.Get(); got != "a" {
					t.Fatalf("Get = %q, want a", got)
				}
				q.Done("a")
				if n := &q.nodes[q.index["a"]]; n.flags != flagIdle || q.idleN != 1 {
					t.Fatalf("a left the queue: flags %b, %d idle", n.flags, q.idleN)
				}

				tt.add(q)
				if q.idleN != 0 || q.inUse() != 1 {
					t.Fatalf("a is back: %d idle, %d keys in use", q.idleN, q.inUse())
				}
				if shutdown {
					q.ShutDown()
					q.mu.Lock()
					defer q.mu.Unlock()
					if tt.delay > 0 {
						// Dropped with the delayed keys.
						if len(q.index) != 0 {
							t.Fatalf("after ShutDown: %d keys indexed, want none", len(q.index))
						}
					} else if len(q.index) != 1 || q.ready != 1 {
						t.Fatalf("after ShutDown: %d keys indexed, %d ready; want the ready a", len(q.index), q.ready)
					}
					if q.idleN != 0 || q.idleLen() != 0 {
						t.Fatalf("after ShutDown: %d idle, %d in the idle list", q.idleN, q.idleLen())
					}
					return
				}
				if tt.delay > 0 {
					if q.Len() != 0 {
						t.Fatal("a delayed add made a ready at once")
					}
					clock.Advance(tt.delay)
				}
				if q.Len() != 1 {
					t.Fatalf("Len = %d, want 1", q.Len())
				}
				if got, p, _ := q.GetWithPriority(); got != "a" || p != tt.prio {
					t.Fatalf("GetWithPriority = %q p%d, want a p%d", got, p, tt.prio)
				}
				q.Done("a")
				if q.idleN != 1 || len(q.index) != 1 || q.Len() != 0 {
					t.Fatalf("after Done: %d idle, %d indexed, Len %d", q.idleN, len(q.index), q.Len())
				}
			})
		}
	}
}
