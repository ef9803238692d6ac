package reflector

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// run runs a reflector over the script inside a synctest bubble until the
// script is exhausted, then cancels it. It returns the fake time elapsed
// until the script was exhausted.
func run(t *testing.T, f *fakeLW, st *recStore, opts Options, tweak func(*Reflector[*corev1.Pod])) (time.Duration, *Reflector[*corev1.Pod]) {
	t.Helper()
	r, err := New[*corev1.Pod](f, st, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if tweak != nil {
		tweak(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-f.exhausted
	elapsed := time.Since(start)
	synctest.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	return elapsed, r
}

const (
	listRV0   = `list rv="0" limit=500`
	listRVNew = `list rv="" limit=500`
	watchList = `watch rv="" match=NotOlderThan sendInitialEvents=true bookmarks`
)

func watchFrom(rv string) string { return `watch rv="` + rv + `" bookmarks` }

func TestTranscripts(t *testing.T) {
	listWatch := Options{DisableWatchList: true}
	tests := []struct {
		name     string
		opts     Options
		script   []reply
		requests []string
		store    []string
		// fake time until the script ran out: at least min, less than max
		// (max 0 means exactly min).
		min, max time.Duration
		lastRV   string
	}{{
		name: "list then watch from the list's resourceVersion",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "", pod("a", "1"), pod("b", "2"))},
			{verb: "watch", events: []Event[*corev1.Pod]{added("c", "11"), modified("a", "12"), deleted("b", "13")}},
		},
		requests: []string{listRV0, watchFrom("10")},
		store:    []string{"Replace 10 [a@1,b@2]", "Add c@11", "Update a@12", "Delete b@13"},
		lastRV:   "13",
	}, {
		name: "pagination: pages joined into one Replace at the first page's resourceVersion",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "t1", pod("a", "1"))},
			{verb: "list", list: podList("10", "t2", pod("b", "2"))},
			{verb: "list", list: podList("10", "", pod("c", "3"))},
		},
		requests: []string{listRV0, `list rv="" limit=500 continue=t1`, `list rv="" limit=500 continue=t2`, watchFrom("10")},
		store:    []string{"Replace 10 [a@1,b@2,c@3]"},
		lastRV:   "10",
	}, {
		name: "pagination disabled",
		opts: Options{DisableWatchList: true, PageSize: -1},
		script: []reply{
			{verb: "list", list: podList("10", "", pod("a", "1"))},
		},
		requests: []string{`list rv="0"`, watchFrom("10")},
		store:    []string{"Replace 10 [a@1]"},
		lastRV:   "10",
	}, {
		name: "bookmark-only progress: the next watch starts at the last bookmark",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "", pod("a", "1"))},
			{verb: "watch", events: []Event[*corev1.Pod]{bookmarkEv("20"), bookmarkEv("30")}, hold: 5 * time.Minute},
		},
		requests: []string{listRV0, watchFrom("10"), watchFrom("30")},
		store:    []string{"Replace 10 [a@1]", "Bookmark 20", "Bookmark 30"},
		min:      5 * time.Minute,
		lastRV:   "30",
	}, {
		name: "410 mid-stream with deletes in the gap: relist with a consistent read, at once",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "", pod("a", "1"), pod("b", "2"), pod("c", "3"))},
			{verb: "watch", events: []Event[*corev1.Pod]{modified("a", "11"), errorEv(gone())}},
			{verb: "list", list: podList("20", "", pod("a", "11"), pod("c", "15"))},
		},
		requests: []string{listRV0, watchFrom("10"), listRVNew, watchFrom("20")},
		store:    []string{"Replace 10 [a@1,b@2,c@3]", "Update a@11", "Replace 20 [a@11,c@15]"},
		lastRV:   "20",
	}, {
		name: "repeated 410s: the first relist at once, the next ones after growing waits",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", err: gone()},
			{verb: "list", list: podList("20", "")},
			{verb: "watch", err: gone()},
			{verb: "list", list: podList("30", "")},
			{verb: "watch", events: []Event[*corev1.Pod]{errorEv(gone())}},
			{verb: "list", list: podList("40", "")},
		},
		requests: []string{listRV0, watchFrom("10"), listRVNew, watchFrom("20"), listRVNew, watchFrom("30"), listRVNew, watchFrom("40")},
		store:    []string{"Replace 10 []", "Replace 20 []", "Replace 30 []", "Replace 40 []"},
		// 0, then 0.8 s and 1.6 s with up to 100 % jitter.
		min: 2400 * time.Millisecond, max: 4800 * time.Millisecond,
		lastRV: "40",
	}, {
		name: "410 when opening the watch",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "", pod("a", "1"))},
			{verb: "watch", err: gone()},
			{verb: "list", list: podList("20", "")},
		},
		requests: []string{listRV0, watchFrom("10"), listRVNew, watchFrom("20")},
		store:    []string{"Replace 10 [a@1]", "Replace 20 []"},
		lastRV:   "20",
	}, {
		// A server behind the one that answered the first list (after a
		// failover): its list at 50 would move the store back in time, so
		// it is refused and retried after a backoff until the server has
		// caught up with 100.
		name: "too large resourceVersion on the watch: older lists refused until one is at least as new",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("100", "", pod("a", "1"))},
			{verb: "watch", err: tooLarge()},
			{verb: "list", list: podList("50", "", pod("a", "1"))},
			{verb: "list", list: podList("80", "", pod("a", "1"))},
			{verb: "list", list: podList("120", "", pod("a", "1"), pod("b", "110"))},
		},
		requests: []string{listRV0, watchFrom("100"), listRVNew, listRVNew, listRVNew, watchFrom("120")},
		store:    []string{"Replace 100 [a@1]", "Replace 120 [a@1,b@110]"},
		// The relist at once, then 0.8 s and 1.6 s with up to 100 % jitter.
		min: 2400 * time.Millisecond, max: 4800 * time.Millisecond,
		lastRV: "120",
	}, {
		name: "too large resourceVersion as an ERROR event: a list at the same resourceVersion is accepted",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("100", "")},
			{verb: "watch", events: []Event[*corev1.Pod]{errorEv(tooLarge())}},
			{verb: "list", list: podList("50", "")},
			{verb: "list", list: podList("100", "")},
		},
		requests: []string{listRV0, watchFrom("100"), listRVNew, listRVNew, watchFrom("100")},
		store:    []string{"Replace 100 []", "Replace 100 []"},
		min:      800 * time.Millisecond, max: 1600 * time.Millisecond,
		lastRV: "100",
	}, {
		name: "watch-list: an older streaming list after a 410 is refused and streamed again",
		script: []reply{
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("100"), errorEv(gone())}},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("90")}, close: true},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), added("b", "101"), initialEnd("102")}},
		},
		requests: []string{watchList, watchList, watchList},
		store:    []string{"Replace 100 [a@5]", "Replace 102 [a@5,b@101]"},
		min:      800 * time.Millisecond, max: 1600 * time.Millisecond,
		lastRV: "102",
	}, {
		name: "opaque resourceVersions are not compared: the relist is accepted",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("b7", "", pod("a", "x1"))},
			{verb: "watch", err: gone()},
			{verb: "list", list: podList("a3", "", pod("a", "x2"))},
		},
		requests: []string{listRV0, watchFrom("b7"), listRVNew, watchFrom("a3")},
		store:    []string{"Replace b7 [a@x1]", "Replace a3 [a@x2]"},
		lastRV:   "a3",
	}, {
		name: "expired continue token: the list starts over with a consistent read",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "t1", pod("a", "1"))},
			{verb: "list", err: expiredContinue()},
			{verb: "list", list: podList("12", "t9", pod("a", "1"))},
			{verb: "list", list: podList("12", "", pod("b", "12"))},
		},
		requests: []string{listRV0, `list rv="" limit=500 continue=t1`, listRVNew, `list rv="" limit=500 continue=t9`, watchFrom("12")},
		store:    []string{"Replace 12 [a@1,b@12]"},
		lastRV:   "12",
	}, {
		name: "a continue token answered with itself fails the list instead of looping",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "t1", pod("a", "1"))},
			{verb: "list", list: podList("10", "t1", pod("b", "2"))},
			{verb: "list", list: podList("11", "", pod("a", "1"))},
		},
		requests: []string{listRV0, `list rv="" limit=500 continue=t1`, listRV0, watchFrom("11")},
		store:    []string{"Replace 11 [a@1]"},
		min:      800 * time.Millisecond, max: 1600 * time.Millisecond,
		lastRV: "11",
	}, {
		name: "a failed first list is retried after a backoff",
		opts: listWatch,
		script: []reply{
			{verb: "list", err: internal()},
			{verb: "list", list: podList("10", "")},
		},
		requests: []string{listRV0, listRV0, watchFrom("10")},
		store:    []string{"Replace 10 []"},
		min:      800 * time.Millisecond, max: 1600 * time.Millisecond,
		lastRV: "10",
	}, {
		name: "429 on the list honours Retry-After",
		opts: listWatch,
		script: []reply{
			{verb: "list", err: tooMany(5)},
			{verb: "list", list: podList("10", "")},
		},
		requests: []string{listRV0, listRV0, watchFrom("10")},
		store:    []string{"Replace 10 []"},
		min:      5 * time.Second,
		lastRV:   "10",
	}, {
		name: "429 on the watch: Retry-After, then the same resourceVersion, no relist",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", err: tooMany(7)},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "11")}},
		},
		requests: []string{listRV0, watchFrom("10"), watchFrom("10")},
		store:    []string{"Replace 10 []", "Add a@11"},
		min:      7 * time.Second,
		lastRV:   "11",
	}, {
		name: "429 as an ERROR event mid-watch resumes from the last event",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "11"), errorEv(tooMany(3))}},
		},
		requests: []string{listRV0, watchFrom("10"), watchFrom("11")},
		store:    []string{"Replace 10 []", "Add a@11"},
		min:      3 * time.Second,
		lastRV:   "11",
	}, {
		name: "500s back off, growing, and retry the watch without a relist storm",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", err: internal()},
			{verb: "watch", err: internal()},
			{verb: "watch", events: []Event[*corev1.Pod]{errorEv(internal())}},
		},
		requests: []string{listRV0, watchFrom("10"), watchFrom("10"), watchFrom("10"), watchFrom("10")},
		store:    []string{"Replace 10 []"},
		// 0.8 + 1.6 + 3.2 s, each with up to 100 % jitter.
		min: 5600 * time.Millisecond, max: 11200 * time.Millisecond,
		lastRV: "10",
	}, {
		name: "a broken stream resumes from the last event after a backoff",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "11")}, end: errors.New("unexpected EOF")},
		},
		requests: []string{listRV0, watchFrom("10"), watchFrom("11")},
		store:    []string{"Replace 10 []", "Add a@11"},
		min:      800 * time.Millisecond, max: 1600 * time.Millisecond,
		lastRV: "11",
	}, {
		// The server ends it after 5 min: the shortest timeoutSeconds the
		// reflector asks for.
		name: "a watch ended by its timeout is reopened at once",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "11")}, hold: 5 * time.Minute},
		},
		requests: []string{listRV0, watchFrom("10"), watchFrom("11")},
		store:    []string{"Replace 10 []", "Add a@11"},
		min:      5 * time.Minute,
		lastRV:   "11",
	}, {
		name: "a very short empty watch backs off",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", close: true},
		},
		requests: []string{listRV0, watchFrom("10"), watchFrom("10")},
		store:    []string{"Replace 10 []"},
		min:      800 * time.Millisecond, max: 1600 * time.Millisecond,
		lastRV: "10",
	}, {
		name: "watch-list: initial events as one Replace at the end bookmark, then the same stream",
		script: []reply{
			{verb: "watch", events: []Event[*corev1.Pod]{
				added("a", "5"), added("c", "6"), added("b", "7"), deleted("c", "8"), modified("a", "9"),
				bookmarkEv("9"), initialEnd("10"), modified("b", "11"), deleted("a", "12"), bookmarkEv("13"),
			}},
		},
		requests: []string{watchList},
		store:    []string{"Replace 10 [a@9,b@7]", "Update b@11", "Delete a@12", "Bookmark 13"},
		lastRV:   "13",
	}, {
		name: "watch-list rejected (422): list+watch, remembered across relists",
		script: []reply{
			{verb: "watch", err: invalidWatchList()},
			{verb: "list", list: podList("10", "", pod("a", "1"))},
			{verb: "watch", events: []Event[*corev1.Pod]{errorEv(gone())}},
			{verb: "list", list: podList("20", "", pod("a", "1"))},
		},
		requests: []string{watchList, listRV0, watchFrom("10"), listRVNew, watchFrom("20")},
		store:    []string{"Replace 10 [a@1]", "Replace 20 [a@1]"},
		lastRV:   "20",
	}, {
		name: "watch-list: 410 after sync streams again with a consistent read",
		script: []reply{
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), added("b", "6"), initialEnd("10"), errorEv(gone())}},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("20")}},
		},
		requests: []string{watchList, watchList},
		store:    []string{"Replace 10 [a@5,b@6]", "Replace 20 [a@5]"},
		lastRV:   "20",
	}, {
		name: "watch-list: 429 backs off and streams again (no fallback)",
		script: []reply{
			{verb: "watch", err: tooMany(4)},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("10")}},
		},
		requests: []string{watchList, watchList},
		store:    []string{"Replace 10 [a@5]"},
		min:      4 * time.Second,
		lastRV:   "10",
	}, {
		name: "watch-list: a server that never ends the initial events gets list+watch after 3 tries",
		script: []reply{
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5")}, hold: time.Minute},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5")}, hold: time.Minute},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5")}, hold: time.Minute},
			{verb: "list", list: podList("10", "", pod("a", "5"))},
		},
		requests: []string{watchList, watchList, watchList, listRV0, watchFrom("10")},
		store:    []string{"Replace 10 [a@5]"},
		// three 1-minute streams and two backoffs (0.8 s and 1.6 s base)
		min: 3*time.Minute + 2400*time.Millisecond, max: 3*time.Minute + 4800*time.Millisecond,
		lastRV: "10",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeLW(t, tc.script...)
				st := &recStore{}
				elapsed, r := run(t, f, st, tc.opts, nil)
				if got := f.transcript(); !slices.Equal(got, tc.requests) {
					t.Errorf("requests:\n got %q\nwant %q", got, tc.requests)
				}
				if got := st.transcript(); !slices.Equal(got, tc.store) {
					t.Errorf("store calls:\n got %q\nwant %q", got, tc.store)
				}
				if tc.max == 0 && elapsed != tc.min {
					t.Errorf("elapsed %v, want %v", elapsed, tc.min)
				}
				if tc.max != 0 && (elapsed < tc.min || elapsed >= tc.max) {
					t.Errorf("elapsed %v, want in [%v, %v)", elapsed, tc.min, tc.max)
				}
				if got := r.LastSyncResourceVersion(); got != tc.lastRV {
					t.Errorf("LastSyncResourceVersion = %q, want %q", got, tc.lastRV)
				}
				checkNeverBack(t, "store", storeRVs(st.transcript()))
				if !r.HasSynced() {
					t.Error("HasSynced = false after a list")
				}
				for _, s := range f.timeouts {
					if s < 300 || s > 600 {
						t.Errorf("watch timeoutSeconds %d outside [300, 600]", s)
					}
				}
			})
		})
	}
}

// recClock is the real clock (fake inside a synctest bubble) that records
// every wait asked of it.
type recClock struct {
	mu    sync.Mutex // guards waits
	waits []time.Duration
}

func (c *recClock) Now() time.Time { return time.Now() }
func (c *recClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return time.After(d)
}

func TestBackoffGrowthAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var script []reply
		script = append(script, reply{verb: "list", list: podList("10", "")})
		for range 8 {
			script = append(script, reply{verb: "watch", err: internal()})
		}
		// Two healthy minutes reset the backoff.
		script = append(script,
			reply{verb: "watch", events: []Event[*corev1.Pod]{added("a", "11")}, hold: 2 * time.Minute},
			reply{verb: "watch", err: internal()},
			reply{verb: "watch", err: internal()})
		f := newFakeLW(t, script...)
		clk := &recClock{}
		// The silence check off: its timer waits would mix with the
		// backoff's (TestSilentWatch checks it).
		run(t, f, &recStore{}, Options{DisableWatchList: true, Clock: clk, WatchSilenceMargin: -1}, func(r *Reflector[*corev1.Pod]) {
			r.rand = func() float64 { return 0 } // no jitter
		})
		ms := time.Millisecond
		want := []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second,
			800 * ms, 1600 * ms}
		if !slices.Equal(clk.waits, want) {
			t.Errorf("waits %v, want %v", clk.waits, want)
		}
	})
}

func TestBackoffJitter(t *testing.T) {
	for _, x := range []float64{0, 0.5, 0.999} {
		b := backoff{initial: 800 * time.Millisecond, max: 30 * time.Second, resetAfter: 2 * time.Minute,
			rand: func() float64 { return x }}
		now := time.Unix(0, 0)
		base := 800 * time.Millisecond
		for range 10 {
			d := b.next(now)
			want := base + time.Duration(x*float64(base))
			if d != want {
				t.Errorf("rand %v: wait %v, want %v", x, d, want)
			}
			now = now.Add(d)
			base = min(2*base, 30*time.Second)
		}
	}
}

func TestWatchTimeoutRange(t *testing.T) {
	for _, tc := range []struct {
		rand float64
		want int64
	}{{0, 300}, {0.5, 450}, {0.9999, 599}} {
		r, err := New[*corev1.Pod](newFakeLW(t), &recStore{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.rand = func() float64 { return tc.rand }
		if got := *r.watchTimeout(); got != tc.want {
			t.Errorf("rand %v: timeoutSeconds %d, want %d", tc.rand, got, tc.want)
		}
	}
	// With real randomness, many watches spread over [300, 600].
	synctest.Test(t, func(t *testing.T) {
		script := []reply{{verb: "list", list: podList("10", "")}}
		for i := range 50 {
			script = append(script, reply{verb: "watch", events: []Event[*corev1.Pod]{bookmarkEv(string(rune('a' + i%26)))}, hold: time.Minute})
		}
		f := newFakeLW(t, script...)
		run(t, f, &recStore{}, Options{DisableWatchList: true}, nil)
		seen := map[int64]bool{}
		for _, s := range f.timeouts {
			if s < 300 || s > 600 {
				t.Errorf("timeoutSeconds %d outside [300, 600]", s)
			}
			seen[s] = true
		}
		if len(f.timeouts) != 51 || len(seen) < 10 {
			t.Errorf("%d watches with %d distinct timeouts; want 51 spread ones", len(f.timeouts), len(seen))
		}
	})
}

func TestCancelStopsPromptly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []reply
	}{
		{"while backing off", []reply{{verb: "list", err: internal()}}},
		{"while watching", []reply{{verb: "list", list: podList("10", "")}, {verb: "watch", events: []Event[*corev1.Pod]{added("a", "11")}}}},
		{"while streaming the list", []reply{{verb: "watch", events: []Event[*corev1.Pod]{added("a", "11")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeLW(t, tc.script...)
				r, err := New[*corev1.Pod](f, &recStore{}, Options{DisableWatchList: tc.script[0].verb == "list"})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- r.Run(ctx) }()
				// Let it reach the blocking point (a backoff timer or a read).
				synctest.Wait()
				start := time.Now()
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("Run returned %v after cancel, want at once", d)
				}
			})
		})
	}
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := New[*corev1.Pod](newFakeLW(t), &recStore{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		synctest.Wait()
		if err := r.Run(ctx); err == nil {
			t.Error("second Run returned nil, want an error")
		}
		if r.HasSynced() {
			t.Error("HasSynced before any list")
		}
		cancel()
		<-done
	})
}

func TestNewValidates(t *testing.T) {
	f, st := newFakeLW(t), &recStore{}
	tests := []struct {
		name string
		lw   ListerWatcher[*corev1.Pod]
		st   Store[*corev1.Pod]
		opts Options
		ok   bool
	}{
		{"zero options", f, st, Options{}, true},
		{"nil lw", nil, st, Options{}, false},
		{"nil store", f, nil, Options{}, false},
		{"typed nil lw", (*fakeLW)(nil), st, Options{}, false},
		{"typed nil store", f, (*recStore)(nil), Options{}, false},
		{"negative backoff", f, st, Options{InitialBackoff: -1}, false},
		{"max below initial", f, st, Options{InitialBackoff: time.Minute, MaxBackoff: time.Second}, false},
		{"watch timeout below 1s", f, st, Options{MinWatchTimeout: time.Millisecond}, false},
		{"max watch timeout below min", f, st, Options{MinWatchTimeout: time.Minute, MaxWatchTimeout: time.Second}, false},
		{"custom", f, st, Options{MinWatchTimeout: time.Minute, MaxWatchTimeout: time.Minute, InitialBackoff: time.Second, MaxBackoff: time.Second}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.lw, tc.st, tc.opts)
			if tc.ok != (err == nil) || tc.ok != (r != nil) {
				t.Errorf("New: %v, %v; want ok=%v", r, err, tc.ok)
			}
		})
	}
}

// metricsRec records metric observations.
type metricsRec struct {
	mu                           sync.Mutex // guards the fields below
	lists, listItems, watches    int
	listErrs, watchErrs, rvMoves int
	lastRV                       string
	// rvs are the positions observed, in order; listErrors and
	// watchErrors the errors observed.
	rvs                     []string
	listErrors, watchErrors []error
}

// count returns how many of errs wrap target.
func count(errs []error, target error) int {
	n := 0
	for _, err := range errs {
		if errors.Is(err, target) {
			n++
		}
	}
	return n
}

func (m *metricsRec) ObserveList(_ string, _ time.Duration, items int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists++
	m.listItems += items
	if err != nil {
		m.listErrs++
		m.listErrors = append(m.listErrors, err)
	}
}
func (m *metricsRec) ObserveWatch(_ string, _ time.Duration, _ int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watches++
	if err != nil {
		m.watchErrs++
		m.watchErrors = append(m.watchErrors, err)
	}
}
func (m *metricsRec) ObserveResourceVersion(_ string, rv string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rvMoves++
	m.lastRV = rv
	m.rvs = append(m.rvs, rv)
}

func TestMetricsAndStoreErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLW(t,
			reply{verb: "list", err: internal()},
			reply{verb: "list", list: podList("10", "", pod("a", "1"), pod("b", "2"))},
			reply{verb: "watch", events: []Event[*corev1.Pod]{added("c", "11"), bookmarkEv("12")}, hold: time.Minute},
			reply{verb: "watch", err: internal()},
		)
		m := &metricsRec{}
		st := &recStore{}
		run(t, f, st, Options{DisableWatchList: true, Metrics: m}, nil)
		if m.lists != 2 || m.listErrs != 1 || m.listItems != 2 {
			t.Errorf("lists %d (errors %d, items %d), want 2 (1, 2)", m.lists, m.listErrs, m.listItems)
		}
		if m.watches != 2 || m.watchErrs != 1 {
			t.Errorf("watches %d (errors %d), want 2 (1)", m.watches, m.watchErrs)
		}
		if m.lastRV != "12" || m.rvMoves != 3 {
			t.Errorf("resourceVersion %q after %d moves, want 12 after 3", m.lastRV, m.rvMoves)
		}
	})
	// A store that fails: watch events are logged and skipped, a failed
	// Replace is retried after a backoff.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLW(t,
			reply{verb: "list", list: podList("10", "", pod("a", "1"))},
			reply{verb: "list", list: podList("10", "", pod("a", "1"))},
		)
		st := &recStore{fail: errors.New("store full")}
		elapsed, r := run(t, f, st, Options{DisableWatchList: true}, nil)
		if r.HasSynced() {
			t.Error("HasSynced although every Replace failed")
		}
		if elapsed < 2400*time.Millisecond {
			t.Errorf("elapsed %v, want two backoffs", elapsed)
		}
		if got, want := st.transcript(), []string{"Replace 10 [a@1]", "Replace 10 [a@1]"}; !slices.Equal(got, want) {
			t.Errorf("store calls %q, want %q", got, want)
		}
	})
}

// Whoever finds a watch event in the store — a handler an informer calls
// once its cache has the event — reads LastSyncResourceVersion at least at
// that event's version: it moves before the store is handed the event.
func TestLastSyncResourceVersionBeforeWatchEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []string
		st := &recStore{}
		run(t, newFakeLW(t,
			reply{verb: "list", list: podList("10", "", pod("a", "1"))},
			reply{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11"), modified("a", "12"), deleted("b", "13"), bookmarkEv("14")}},
		), st, Options{DisableWatchList: true}, func(r *Reflector[*corev1.Pod]) {
			st.onEvent = func() { seen = append(seen, r.LastSyncResourceVersion()) }
		})
		if want := []string{"11", "12", "13", "14"}; !slices.Equal(seen, want) {
			t.Fatalf("LastSyncResourceVersion as the store gets each event: %q, want %q", seen, want)
		}
	})
}

// Whoever finds a complete list in the store — an informer that synced on
// it — reads LastSyncResourceVersion at least at that list's version: it is
// set before Replace, by the list and by the watch-list alike, and goes back
// when the store refuses the list.
func TestLastSyncResourceVersionBeforeReplace(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   Options
		script []reply
	}{
		{"list", Options{DisableWatchList: true}, []reply{{verb: "list", list: podList("10", "", pod("a", "1"))}}},
		{"watch-list", Options{}, []reply{{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("10")}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seen []string
				st := &recStore{}
				run(t, newFakeLW(t, tt.script...), st, tt.opts, func(r *Reflector[*corev1.Pod]) {
					st.onReplace = func(string) { seen = append(seen, r.LastSyncResourceVersion()) }
				})
				if !slices.Equal(seen, []string{"10"}) {
					t.Fatalf("LastSyncResourceVersion during Replace: %q, want [10]", seen)
				}
			})
		})
	}
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st := &recStore{fail: errors.New("store closed")}
			_, r := run(t, newFakeLW(t, reply{verb: "list", list: podList("10", "", pod("a", "1"))}), st, Options{DisableWatchList: true}, nil)
			if rv := r.LastSyncResourceVersion(); rv != "" {
				t.Fatalf("LastSyncResourceVersion after a refused Replace: %q, want \"\"", rv)
			}
		})
	})
}
