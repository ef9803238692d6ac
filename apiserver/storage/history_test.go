package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// expectedHistoryBytes computes, from the rings, what HistoryBytes must be:
// every distinct object the retained events refer to (objects and previous
// states), an overhead per event, and the frames charged.
func expectedHistoryBytes(s *Store) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[*Object]bool{}
	var n int64
	for _, r := range s.resources {
		r.mu.RLock()
		for i := range r.history.len() {
			ev := r.history.at(i)
			n += eventOverhead
			if ev.state.Load() == frameCharged {
				n += ev.frameCost()
			}
			ev.encodingMu.Lock()
			for _, x := range ev.encodings {
				n += int64(len(x.b))
			}
			ev.encodingMu.Unlock()
			for _, o := range []*Object{ev.Object, ev.Prev} {
				if o != nil && !seen[o] {
					seen[o] = true
					n += o.cost
				}
			}
		}
		r.mu.RUnlock()
	}
	return n
}

// halfEncoding is an encoding of an event (Event.Encoded) of half the
// size of its object.
func halfEncoding(ev *Event) ([]byte, error) { return ev.Object.Data[:len(ev.Object.Data)/2], nil }

// filler is the bytes of sized's objects.
var filler = []byte(strings.Repeat("x", 1<<20))

// sized returns an encoder of an object of size bytes (at most 1 MiB). The
// objects share their bytes (the store never writes them): what the tests
// measure is the store's accounting, and the race detector makes
// allocations of this size slow.
func sized(ns, name string, size int) EncodeFunc {
	return func(rev int64) (*Object, error) {
		return &Object{Namespace: ns, Name: name, Data: []byte(filler[:size]), Fields: map[string]string{"metadata.name": name}}, nil
	}
}

// The history's cost follows every way events come and go — creates,
// updates, deletes and re-creates; frames and other encodings built; evictions by count, age,
// compaction and bytes, in several resources — and returns to zero when
// the history is empty.
func TestHistoryBytesAccounting(t *testing.T) {
	now := time.Unix(1e9, 0)
	s := newStore(t, Options{HistoryEvents: 7, HistoryAge: time.Minute, HistoryBytes: 20_000, Now: func() time.Time { return now }})
	rng := rand.New(rand.NewPCG(1, 2))
	watchers := map[string]*Watcher{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	for i := range 3000 {
		res := []string{"a", "b", "c"}[rng.IntN(3)]
		name := strconv.Itoa(rng.IntN(6))
		size := []int{10, 100, 2000}[rng.IntN(3)]
		var err error
		switch op := rng.IntN(10); {
		case op < 3:
			_, err = s.Create(res, "", name, sized("", name, size))
			if errors.Is(err, ErrAlreadyExists) {
				err = nil
			}
		case op < 7:
			_, err = s.Update(res, "", name, func(*Object) (EncodeFunc, error) { return sized("", name, size), nil })
		case op < 9:
			_, err = s.Delete(res, "", name, func(*Object) (EncodeFunc, error) { return sized("", name, 1), nil })
		default:
			switch rng.IntN(3) {
			case 0:
				now = now.Add(time.Duration(rng.IntN(40)) * time.Second)
			case 1:
				s.Compact(s.Revision() - int64(rng.IntN(5)))
			default:
				// A watcher frames what it reads (charging the frames).
				w := watchers[res]
				if w == nil {
					if w, err = s.Watch(res, WatchOptions{Revision: s.Revision()}); err != nil {
						t.Fatal(err)
					}
					watchers[res] = w
				}
				for {
					ev, err := w.Next(ctx)
					if err != nil {
						if errors.Is(err, ErrWatcherTooSlow) {
							delete(watchers, res)
						}
						break
					}
					ev.Frame()
					if rng.IntN(2) == 0 { // and sometimes another encoding
						if _, err := ev.Encoded("half", halfEncoding); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		if got, want := s.HistoryBytes(), expectedHistoryBytes(s); got != want {
			t.Fatalf("after op %d: HistoryBytes %d, want %d", i, got, want)
		}
		if got := s.HistoryBytes(); got > 20_000 {
			t.Fatalf("after op %d: HistoryBytes %d past the bound", i, got)
		}
	}
	s.Compact(s.Revision())
	if got := s.HistoryBytes(); got != 0 {
		t.Fatalf("empty history costs %d", got)
	}
}

// The case: a thousand updates of a 900 kB ConfigMap (1.4 GB of
// history with a count bound alone) stay within the default byte bound,
// which they fill (it is not undercounted); and so do updates a watcher
// frames (120 of them, 1.6 times the bound: a frame copies 900 kB, which
// the race detector makes slow).
func TestHistoryBytesBoundsLargeUpdates(t *testing.T) {
	for _, watched := range []bool{false, true} {
		t.Run(fmt.Sprintf("watched=%v", watched), func(t *testing.T) {
			s := newStore(t, Options{})
			if _, err := s.Create("configmaps", "ns", "big", sized("ns", "big", 900_000)); err != nil {
				t.Fatal(err)
			}
			w, err := s.Watch("configmaps", WatchOptions{Revision: s.Revision()})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			updates := 1000
			if watched {
				updates = 120
			}
			for i := range updates {
				if _, err := s.Update("configmaps", "ns", "big", func(*Object) (EncodeFunc, error) { return sized("ns", "big", 900_000), nil }); err != nil {
					t.Fatal(err)
				}
				if watched {
					ev, err := w.Next(ctx)
					if err != nil {
						t.Fatalf("update %d: the watcher: %v", i, err)
					}
					ev.Frame()
				}
				if got := s.HistoryBytes(); got > DefaultHistoryBytes {
					t.Fatalf("update %d: HistoryBytes %d past %d", i, got, DefaultHistoryBytes)
				}
			}
			r := s.resource("configmaps")
			r.mu.RLock()
			n := r.history.len()
			r.mu.RUnlock()
			perEvent := int64(900_000)
			if watched {
				perEvent *= 2
			}
			if got := s.HistoryBytes(); got < DefaultHistoryBytes-2*perEvent || int64(n) < DefaultHistoryBytes/perEvent-2 {
				t.Fatalf("HistoryBytes %d with %d events retained: the bound is not filled", got, n)
			}
			t.Logf("%d events retained, %d bytes accounted", n, s.HistoryBytes())
		})
	}
}

// Events evicted by the byte bound are gone exactly as with the count
// bound: a watch or an exact list from before the oldest retained revision
// gets ErrExpired, from it on everything retained is delivered, and a
// watcher left behind is disconnected. The oldest events go first whatever
// their resource.
func TestHistoryBytesExpired(t *testing.T) {
	s := newStore(t, Options{HistoryBytes: 64 << 10})
	update := func(res, name string, size int) int64 {
		t.Helper()
		o, err := s.Update(res, "", name, func(*Object) (EncodeFunc, error) { return sized("", name, size), nil })
		if err != nil {
			t.Fatal(err)
		}
		return o.ResourceVersion
	}
	for _, res := range []string{"a", "b"} {
		if _, err := s.Create(res, "", "x", sized("", "x", 10)); err != nil {
			t.Fatal(err)
		}
	}
	behind, err := s.Watch("a", WatchOptions{Revision: s.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	var revs []int64
	for range 10 {
		revs = append(revs, update("a", "x", 1000)) // 10 kB: nothing evicted
	}
	if _, err := s.Watch("a", WatchOptions{Revision: 1}); err != nil {
		t.Fatalf("before eviction: %v", err)
	}
	// 100 kB into b: a's older events go, then b's own oldest.
	for range 10 {
		update("b", "x", 10_000)
	}
	r := s.resource("a")
	r.mu.RLock()
	compacted, retained := r.history.compacted, r.history.len()
	r.mu.RUnlock()
	if compacted != revs[len(revs)-1] || retained != 0 {
		t.Fatalf("a: compacted at %d with %d events, want every event evicted (last %d)", compacted, retained, revs[len(revs)-1])
	}
	rb := s.resource("b")
	rb.mu.RLock()
	oldestB, retainedB := rb.history.compacted, rb.history.len()
	rb.mu.RUnlock()
	if retainedB < 4 || retainedB > 7 {
		t.Fatalf("b retains %d events of 10 kB under a 64 KiB bound", retainedB)
	}
	for _, tc := range []struct {
		res     string
		rev     int64
		expired bool
		events  int
	}{
		{"a", revs[0], true, 0},
		{"a", revs[len(revs)-2], true, 0},
		{"a", revs[len(revs)-1], false, 0}, // the newest evicted: nothing after it is missing
		{"b", oldestB - 1, true, 0},
		{"b", oldestB, false, retainedB}, // from the oldest retained revision on
	} {
		_, err := s.List(tc.res, ListOptions{Revision: tc.rev, Exact: true})
		var ee *ExpiredError
		if got := errors.As(err, &ee); got != tc.expired {
			t.Errorf("list %s at %d: %v, want expired=%v", tc.res, tc.rev, err, tc.expired)
		}
		w, err := s.Watch(tc.res, WatchOptions{Revision: tc.rev})
		if got := errors.As(err, &ee); got != tc.expired {
			t.Errorf("watch %s from %d: %v, want expired=%v", tc.res, tc.rev, err, tc.expired)
			continue
		}
		if tc.expired {
			if ee.Requested != tc.rev || (tc.res == "b" && ee.Oldest != oldestB) {
				t.Errorf("watch %s from %d: %+v", tc.res, tc.rev, ee)
			}
			continue
		}
		collect(t, w, tc.events)
	}
	if _, err := behind.Next(context.Background()); !errors.Is(err, ErrWatcherTooSlow) {
		t.Fatalf("a watcher behind the evicted events: %v", err)
	}
}

func TestHistoryBytesValidate(t *testing.T) {
	if _, err := New(Options{HistoryBytes: -1}); err == nil || !strings.Contains(err.Error(), "HistoryBytes") {
		t.Fatalf("New: %v", err)
	}
}
