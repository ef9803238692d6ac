package workqueue

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// worker loops on Get then Next until shutdown; process is called with each
// key. It checks that no key is handed to two workers at once.
func worker(t *testing.T, q *Queue[int], holders []atomic.Int32, process func(k int)) {
	k, _, shutdown := q.GetWithPriority()
	for !shutdown {
		if !holders[k].CompareAndSwap(0, 1) {
			t.Errorf("key %d handed to two workers at once", k)
		}
		process(k)
		holders[k].Store(0)
		k, _, shutdown = q.Next(k)
	}
}

// settle waits until cond holds (read under q.mu), at most 10 s.
func settle(t *testing.T, q *Queue[int], what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q.mu.Lock()
		ok := cond()
		state := "ready " + strconv.Itoa(q.ready) + ", held " + strconv.Itoa(len(q.inFlight)) +
			", waiters " + strconv.Itoa(q.waiters) + ", waking " + strconv.Itoa(q.waking) +
			", waiting " + strconv.Itoa(len(q.heap)-q.stale)
		q.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened (%s)", what, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestNextManyWorkers: workers looping on Next (more of them than Done
// compares one by one, and fewer) against adds, delayed adds and priorities
// from several producers: no key is handed to two workers at once, every
// add is followed by a hand-out of its key (none is lost, none waits
// forever), and once idle every worker waits with no key ready, held or
// waiting and no wake-up outstanding.
func TestNextManyWorkers(t *testing.T) {
	tests := []struct {
		workers, producers, keys, adds int
	}{
		{workers: 1, producers: 1, keys: 10, adds: 5000},
		{workers: 4, producers: 2, keys: 3, adds: 5000},
		{workers: heldScan, producers: 2, keys: 40, adds: 5000},
		{workers: heldScan + 1, producers: 2, keys: 40, adds: 5000},
		{workers: 16, producers: 3, keys: 64, adds: 4000},
		{workers: 16, producers: 2, keys: 2000, adds: 4000},
	}
	for _, tt := range tests {
		name := strconv.Itoa(tt.workers) + " workers, " + strconv.Itoa(tt.keys) + " keys"
		t.Run(name, func(t *testing.T) {
			q, err := New(Options[int]{})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			t.Cleanup(func() { q.ShutDown(); wg.Wait() }) // also when the test fails
			holders := make([]atomic.Int32, tt.keys)
			// pending[k] is set before each add of k and cleared by the
			// worker that receives k: an add of a held key makes it dirty,
			// so the key comes back and clears it again.
			pending := make([]atomic.Int32, tt.keys)
			var handed atomic.Int64
			for range tt.workers {
				wg.Go(func() {
					worker(t, q, holders, func(k int) {
						pending[k].Store(0)
						handed.Add(1)
						if k%5 == 0 {
							time.Sleep(time.Microsecond)
						}
					})
				})
			}
			var producers sync.WaitGroup
			for p := range tt.producers {
				producers.Go(func() {
					for i := range tt.adds {
						k := (i*7 + p*13) % tt.keys
						pending[k].Store(1)
						switch i % 6 {
						case 0:
							q.AddAfter(k, time.Duration(i%50)*time.Microsecond)
						case 1:
							q.AddWithOptions(k, AddOptions{Priority: i % 3})
						case 2:
							q.AddWithOptions(k, AddOptions{Priority: -1, After: time.Microsecond})
						default:
							q.Add(k)
						}
						if i%500 == 0 {
							time.Sleep(100 * time.Microsecond) // workers run dry
						}
					}
				})
			}
			producers.Wait()
			settle(t, q, "every key handed out after its last add", func() bool {
				for k := range pending {
					if pending[k].Load() != 0 {
						return false
					}
				}
				return q.ready == 0 && len(q.inFlight) == 0 && len(q.heap) == q.stale
			})
			// A worker signalled for a key that another one took counts as
			// waiting until it is back in Wait: wait for it, not just for
			// the count of waiters.
			settle(t, q, "every worker waiting, no wake-up outstanding", func() bool {
				return q.waiters == tt.workers && q.waking == 0
			})
			q.mu.Lock()
			indexed := q.inUse()
			q.mu.Unlock()
			if indexed != 0 {
				t.Errorf("idle: %d keys indexed", indexed)
			}
			if handed.Load() == 0 {
				t.Error("no key handed out")
			}
			q.ShutDown()
			wg.Wait()
		})
	}
}

// TestShutDownWithDrainNext: ShutDownWithDrain while workers loop on Next
// and keep adding the key they hold (dirty: Next hands it back at once)
// returns once no key is held, and no key is handed out after it returned;
// the workers then all stop. Keys waiting for a delay are dropped.
func TestShutDownWithDrainNext(t *testing.T) {
	tests := []struct {
		workers, keys, reAdds int
	}{
		{workers: 1, keys: 1, reAdds: 1000},
		{workers: 2, keys: 8, reAdds: 300},
		{workers: heldScan + 1, keys: 40, reAdds: 100},
		{workers: 16, keys: 16, reAdds: 100},
		{workers: 16, keys: 4, reAdds: 1000}, // most workers wait
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.workers)+" workers, "+strconv.Itoa(tt.keys)+" keys", func(t *testing.T) {
			q, err := New(Options[int]{})
			if err != nil {
				t.Fatal(err)
			}
			holders := make([]atomic.Int32, tt.keys+1)
			var active, handed atomic.Int64
			reAdds := make([]atomic.Int32, tt.keys)
			var wg sync.WaitGroup
			t.Cleanup(func() { q.ShutDown(); wg.Wait() }) // also when the test fails
			for range tt.workers {
				wg.Go(func() {
					worker(t, q, holders, func(k int) {
						active.Add(1)
						handed.Add(1)
						if k == tt.keys {
							t.Error("the delayed key was handed out")
						} else if reAdds[k].Add(1) <= int32(tt.reAdds) {
							q.Add(k) // held: dirty
						}
						time.Sleep(time.Duration(k%3) * time.Microsecond)
						active.Add(-1)
					})
				})
			}
			for k := range tt.keys {
				q.Add(k)
			}
			q.AddAfter(tt.keys, time.Hour) // dropped by the shutdown
			// Let the workers run, then wait until no key is ready: from
			// then on only Next makes a key ready (a dirty one), and takes
			// it in the same critical section.
			settle(t, q, "some work done", func() bool { return handed.Load() >= int64(tt.keys) })
			settle(t, q, "no key ready", func() bool { return q.ready == 0 })
			drained := make(chan int64)
			go func() {
				q.ShutDownWithDrain()
				if n := active.Load(); n != 0 {
					t.Errorf("ShutDownWithDrain returned with %d keys in process", n)
				}
				drained <- handed.Load()
			}()
			var atDrain int64
			select {
			case atDrain = <-drained:
			case <-time.After(10 * time.Second):
				t.Fatal("ShutDownWithDrain never returned")
			}
			wg.Wait()
			if n := handed.Load(); n != atDrain {
				t.Errorf("%d keys handed out after ShutDownWithDrain returned", n-atDrain)
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			// Shut down: not even idle keys stay indexed.
			if q.ready != 0 || len(q.inFlight) != 0 || len(q.index) != 0 || q.idleN != 0 || q.idleHead != -1 || len(q.heap) != 0 {
				t.Errorf("after the drain: %d ready, %d held, %d indexed (%d idle, %d in the idle list), %d in the heap",
					q.ready, len(q.inFlight), len(q.index), q.idleN, q.idleLen(), len(q.heap))
			}
		})
	}
}

// TestForgetConcurrent: Forget skips its lock while no key has failures;
// with goroutines failing and forgetting their own keys at once (as workers
// do), a goroutine's Forget always clears its key and its When always counts
// from what it left, and the count of keys with failures ends at zero.
func TestForgetConcurrent(t *testing.T) {
	tests := []struct {
		name       string
		goroutines int
		failures   int // failures of a key before it is forgotten
	}{
		{name: "one failure each", goroutines: 8, failures: 1},
		{name: "several failures each", goroutines: 8, failures: 4},
		{name: "one goroutine", goroutines: 1, failures: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewExponential[int](ExponentialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := range tt.goroutines {
				wg.Go(func() {
					for round := range 300 {
						k := g*1000 + round%7
						for i := range tt.failures {
							if d, want := r.When(k), backoff(DefaultBaseDelay, DefaultMaxDelay, i); d != want {
								t.Errorf("key %d failure %d: When = %v, want %v", k, i, d, want)
								return
							}
						}
						if round%3 == 0 {
							r.Forget(k + 500) // a key without failures
						}
						r.Forget(k)
						if n := r.NumRequeues(k); n != 0 {
							t.Errorf("key %d: %d requeues after Forget", k, n)
							return
						}
					}
				})
			}
			wg.Wait()
			if n := r.failures.keys.Load(); n != 0 || len(r.failures.m) != 0 {
				t.Fatalf("after every Forget: %d keys counted, %d in the map", n, len(r.failures.m))
			}
		})
	}
}
