package fifo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrentProducerConsumer runs a producer that plays the API server
// and the reflector (watch events, with some events "missed" and repaired by
// a relist), a consumer that applies every popped unit to the store, and a
// goroutine that resyncs, all at once (run with -race). Afterwards the store
// must equal the server's state, every Replace must have arrived in one
// piece, and resource versions per key must never go backwards. With
// Options.MaxRun, runs are popped while Replace and Resync look at the run
// in flight: a run holds no delta of a Replace batch and at most MaxRun
// deltas.
func TestConcurrentProducerConsumer(t *testing.T) {
	for _, maxRun := range []int{1, 16} {
		t.Run(fmt.Sprintf("maxRun=%d", maxRun), func(t *testing.T) { testConcurrentProducerConsumer(t, maxRun) })
	}
}

func testConcurrentProducerConsumer(t *testing.T, maxRun int) {
	s := newStore()
	f, err := New(Options[obj]{KnownObjects: s, MaxRun: maxRun})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var consumeErr error
	lastRV := map[string]int{} // consumer only
	longestRun := 0            // consumer only
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for {
			err := f.Pop(ctx, func(batch []Delta[obj]) error {
				if batch[0].Type == Replaced || batch[0].FinalStateUnknown {
					rv := batch[0].ResourceVersion
					for _, d := range batch {
						if d.ResourceVersion != rv || (d.Type != Replaced && !d.FinalStateUnknown) {
							return fmt.Errorf("mixed batch: %s", renderBatch(batch))
						}
					}
				} else {
					if len(batch) > maxRun {
						return fmt.Errorf("a run of %d deltas, MaxRun %d: %s", len(batch), maxRun, renderBatch(batch))
					}
					for _, d := range batch {
						if d.Type == Replaced || d.FinalStateUnknown {
							return fmt.Errorf("a run holds a delta of a Replace batch: %s", renderBatch(batch))
						}
					}
					longestRun = max(longestRun, len(batch))
				}
				for _, d := range batch {
					if d.Type == Bookmark || d.Object == nil {
						continue
					}
					var rv int
					fmt.Sscan(d.Object.ResourceVersion, &rv)
					if d.Type != Deleted && rv < lastRV[d.Key] {
						return fmt.Errorf("%s went back from rv %d to %s", d.Key, lastRV[d.Key], render(d))
					}
					lastRV[d.Key] = max(lastRV[d.Key], rv)
				}
				s.apply(batch)
				return nil
			})
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrClosed) {
					consumeErr = err
				}
				return
			}
		}
	}()

	stopResync := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stopResync:
				return
			default:
			}
			if err := f.Resync(); err != nil {
				t.Error(err)
				return
			}
		}
	})

	server := map[string]obj{}
	rv := 0
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c", "d"}
	for i := range 5000 {
		rv++
		key := keys[rng.IntN(len(keys))]
		missed := rng.IntN(10) == 0 // the watch drops this event
		_, exists := server[key]
		switch {
		case rng.IntN(50) == 0: // relist
			list := make([]obj, 0, len(server))
			for _, o := range server {
				list = append(list, o)
			}
			if err := f.Replace(list, fmt.Sprint(rv)); err != nil {
				t.Fatal(err)
			}
			continue
		case i%97 == 0:
			if err := f.Bookmark(fmt.Sprint(rv)); err != nil {
				t.Fatal(err)
			}
			continue
		case exists && rng.IntN(3) == 0:
			old := server[key]
			delete(server, key)
			if !missed {
				if err := f.Delete(old); err != nil {
					t.Fatal(err)
				}
			}
		default:
			o := mk(key, fmt.Sprint(rv))
			server[key] = o
			if missed {
				break
			}
			if exists {
				err = f.Update(o)
			} else {
				err = f.Add(o)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// A final relist repairs every missed event.
	list := make([]obj, 0, len(server))
	for _, o := range server {
		list = append(list, o)
	}
	if err := f.Replace(list, "final"); err != nil {
		t.Fatal(err)
	}
	close(stopResync)
	wg.Wait()
	// Wait for the consumer to drain (Len 0 and no Pop in flight).
	for {
		f.mu.Lock()
		idle := f.queue.Len() == 0 && !f.popping
		f.mu.Unlock()
		if idle {
			break
		}
		select {
		case <-consumerDone:
			t.Fatalf("consumer stopped: %v", consumeErr)
		default:
		}
	}
	cancel()
	<-consumerDone
	if consumeErr != nil {
		t.Fatal(consumeErr)
	}
	got := map[string]obj{}
	for _, k := range s.ListKeys() {
		got[k], _ = s.GetByKey(k)
	}
	if !maps.Equal(got, server) {
		t.Fatalf("store %s differs from the server (%d objects)", s, len(server))
	}
	if !f.HasSynced() {
		t.Fatal("not synced after everything was processed")
	}
	if maxRun > 1 && longestRun < 2 {
		t.Fatalf("no run of more than one delta was popped (MaxRun %d): runs were not exercised", maxRun)
	}
}

// TestConcurrentPops: several goroutines Pop from one FIFO; each unit (a
// delta, or with MaxRun a run) goes to exactly one of them and units never
// overlap, so order is kept.
func TestConcurrentPops(t *testing.T) {
	for _, maxRun := range []int{1, 8} {
		t.Run(fmt.Sprintf("maxRun=%d", maxRun), func(t *testing.T) { testConcurrentPops(t, maxRun) })
	}
}

func testConcurrentPops(t *testing.T, maxRun int) {
	f, err := New(Options[obj]{MaxRun: maxRun})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var mu sync.Mutex // guards seen, active
	var seen []string
	active := 0
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				err := f.Pop(ctx, func(b []Delta[obj]) error {
					mu.Lock()
					active++
					if active > 1 {
						t.Error("two process funcs ran at once")
					}
					if len(b) > maxRun {
						t.Errorf("a run of %d deltas, MaxRun %d", len(b), maxRun)
					}
					for _, d := range b {
						seen = append(seen, d.Object.ResourceVersion)
					}
					active--
					mu.Unlock()
					return nil
				})
				if err != nil {
					return
				}
			}
		})
	}
	for i := range n {
		if err := f.Add(mk("a/x", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	for {
		mu.Lock()
		done := len(seen) == n
		mu.Unlock()
		if done {
			break
		}
	}
	cancel()
	wg.Wait()
	for i, rv := range seen {
		if rv != fmt.Sprint(i) {
			t.Fatalf("unit %d was rv %s: order lost", i, rv)
		}
	}
}
