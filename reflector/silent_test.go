package reflector

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A watch that sends nothing — no event, no bookmark — for its
// timeoutSeconds plus the margin is stopped and opened again, after a
// backoff wait, from the last resourceVersion the reflector reached: no
// relist, no gap. Only the stream's silence counts: bookmarks keep a watch
// alive, and so does time the reflector spends in the store.
//
// With rand 0 every watch asks timeoutSeconds=300 (MinWatchTimeout) and
// backoff waits have no jitter (0.8 s first). A silent watch is given up
// once it has been silent for its limit (timeout + margin), and at most a
// sixteenth of the limit later (the watchdog looks at it that often).
func TestSilentWatch(t *testing.T) {
	listWatch := Options{DisableWatchList: true}
	const window = 330 * time.Second // 300 s + the 30 s default margin
	const backoff = 800 * time.Millisecond
	late := func(limit time.Duration) time.Duration { return (limit + watchdogTicks - 1) / watchdogTicks }
	tests := []struct {
		name     string
		opts     Options
		script   []reply
		slowAdd  time.Duration // each Add takes this long in the store
		requests []string
		store    []string
		// the fake time until the script ran out: in [elapsed,
		// elapsed+late]; the same for stoppedAfter.
		elapsed, late time.Duration
		// silentWatches and silentLists are the watches and streaming
		// lists reported ended with ErrSilentWatch.
		silentWatches, silentLists int
		// stoppedAfter is how long after it was opened the first watch
		// was stopped (0: not checked).
		stoppedAfter time.Duration
	}{{
		name: "silent after an event: stopped, reopened from that event's resourceVersion",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "", pod("a", "1"))},
			{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11")}}, // then silent
			{verb: "watch", events: []Event[*corev1.Pod]{added("c", "12")}},
		},
		requests:      []string{listRV0, watchFrom("10"), watchFrom("11")},
		store:         []string{"Replace 10 [a@1]", "Add b@11", "Add c@12"},
		elapsed:       window + backoff,
		late:          late(window),
		silentWatches: 1,
		stoppedAfter:  window,
	}, {
		name: "silent after events and a bookmark: the silence counts from the last of them",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11"), bookmarkEv("15")}, gap: 2 * time.Minute},
			{verb: "watch", events: []Event[*corev1.Pod]{added("c", "16")}},
		},
		requests:      []string{listRV0, watchFrom("10"), watchFrom("15")},
		store:         []string{"Replace 10 []", "Add b@11", "Bookmark 15", "Add c@16"},
		elapsed:       4*time.Minute + window + backoff,
		late:          late(window),
		silentWatches: 1,
		stoppedAfter:  4*time.Minute + window,
	}, {
		name: "bookmarks every minute keep a watch alive well past its timeout",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", gap: time.Minute, events: []Event[*corev1.Pod]{
				bookmarkEv("11"), bookmarkEv("12"), bookmarkEv("13"), bookmarkEv("14"), bookmarkEv("15"),
				bookmarkEv("16"), bookmarkEv("17"), bookmarkEv("18"), bookmarkEv("19"), bookmarkEv("20"),
				bookmarkEv("21"), bookmarkEv("22"), bookmarkEv("23"), bookmarkEv("24"), bookmarkEv("25"),
			}},
		},
		requests: []string{listRV0, watchFrom("10")},
		store: []string{"Replace 10 []", "Bookmark 11", "Bookmark 12", "Bookmark 13", "Bookmark 14", "Bookmark 15",
			"Bookmark 16", "Bookmark 17", "Bookmark 18", "Bookmark 19", "Bookmark 20",
			"Bookmark 21", "Bookmark 22", "Bookmark 23", "Bookmark 24", "Bookmark 25"},
		elapsed: 15 * time.Minute,
	}, {
		name: "time in the store is not silence",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11"), added("c", "12")}},
		},
		slowAdd:  10 * time.Minute,
		requests: []string{listRV0, watchFrom("10")},
		store:    []string{"Replace 10 []", "Add b@11", "Add c@12"},
		elapsed:  20 * time.Minute,
	}, {
		name: "a watch request never answered is given up the same way",
		opts: listWatch,
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch", hang: true},
			{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11")}},
		},
		requests:      []string{listRV0, watchFrom("10"), watchFrom("10")},
		store:         []string{"Replace 10 []", "Add b@11"},
		elapsed:       window + backoff,
		late:          late(window),
		silentWatches: 1,
	}, {
		name: "a streaming list silent before its end is streamed again",
		script: []reply{
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5")}},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("10")}},
		},
		requests:    []string{watchList, watchList},
		store:       []string{"Replace 10 [a@5]"},
		elapsed:     window + backoff,
		late:        late(window),
		silentLists: 1,
	}, {
		name: "the stream of a streaming list silent after its end: watched from the end bookmark",
		script: []reply{
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("10")}},
			{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11")}},
		},
		requests:      []string{watchList, watchFrom("10")},
		store:         []string{"Replace 10 [a@5]", "Add b@11"},
		elapsed:       window + backoff,
		late:          late(window),
		silentWatches: 1,
		stoppedAfter:  window,
	}, {
		name: "a margin of its own",
		opts: Options{DisableWatchList: true, WatchSilenceMargin: 5 * time.Second},
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch"},
			{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11")}},
		},
		requests:      []string{listRV0, watchFrom("10"), watchFrom("10")},
		store:         []string{"Replace 10 []", "Add b@11"},
		elapsed:       305*time.Second + backoff,
		late:          late(305 * time.Second),
		silentWatches: 1,
	}, {
		name: "short watch timeouts: the default margin is no longer than MinWatchTimeout",
		opts: Options{DisableWatchList: true, MinWatchTimeout: 10 * time.Second},
		script: []reply{
			{verb: "list", list: podList("10", "")},
			{verb: "watch"},
			{verb: "watch", events: []Event[*corev1.Pod]{added("b", "11")}},
		},
		requests:      []string{listRV0, watchFrom("10"), watchFrom("10")},
		store:         []string{"Replace 10 []", "Add b@11"},
		elapsed:       20*time.Second + backoff,
		late:          late(20 * time.Second),
		silentWatches: 1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeLW(t, tc.script...)
				st := &recStore{}
				if tc.slowAdd > 0 {
					st.onEvent = func() { time.Sleep(tc.slowAdd) }
				}
				m := &metricsRec{}
				opts := tc.opts
				opts.Metrics = m
				elapsed, r := run(t, f, st, opts, func(r *Reflector[*corev1.Pod]) {
					r.rand = func() float64 { return 0 }
				})
				if got := f.transcript(); !slices.Equal(got, tc.requests) {
					t.Errorf("requests:\n got %q\nwant %q", got, tc.requests)
				}
				if got := st.transcript(); !slices.Equal(got, tc.store) {
					t.Errorf("store calls:\n got %q\nwant %q", got, tc.store)
				}
				if elapsed < tc.elapsed || elapsed > tc.elapsed+tc.late {
					t.Errorf("elapsed %v, want %v (up to %v more)", elapsed, tc.elapsed, tc.late)
				}
				if n := count(m.watchErrors, ErrSilentWatch); n != tc.silentWatches {
					t.Errorf("%d watches reported silent, want %d (errors %v)", n, tc.silentWatches, m.watchErrors)
				}
				if n := count(m.listErrors, ErrSilentWatch); n != tc.silentLists {
					t.Errorf("%d streaming lists reported silent, want %d (errors %v)", n, tc.silentLists, m.listErrors)
				}
				if tc.stoppedAfter > 0 {
					w := f.watches[0]
					if d := w.stoppedAt.Sub(w.opened); !w.stopped || d < tc.stoppedAfter || d > tc.stoppedAfter+tc.late {
						t.Errorf("first watch stopped=%v %v after it opened, want %v (up to %v more)", w.stopped, d, tc.stoppedAfter, tc.late)
					}
				}
				for i, w := range f.watches {
					if !w.stopped {
						t.Errorf("watch %d never stopped", i)
					}
				}
				if r.HasSynced() != (len(tc.store) > 0) {
					t.Errorf("HasSynced = %v", r.HasSynced())
				}
			})
		})
	}
}

// A negative margin turns the check off: a silent watch stays open.
func TestSilentWatchCheckOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLW(t,
			reply{verb: "list", list: podList("10", "")},
			reply{verb: "watch"}, // silent, and the last reply
			reply{verb: "watch"},
		)
		r, err := New[*corev1.Pod](f, &recStore{}, Options{DisableWatchList: true, WatchSilenceMargin: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		time.Sleep(24 * time.Hour)
		if got, want := f.transcript(), []string{listRV0, watchFrom("10")}; !slices.Equal(got, want) {
			t.Errorf("requests after a day of silence %q, want %q", got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// The watchdog on its own: it fires once the reflector has waited on the
// stream for the limit — from the start when nothing ever arrives, at most
// a sixteenth of the limit late otherwise — not while the reflector is
// busy, and stop ends its goroutine.
func TestWatchdog(t *testing.T) {
	const limit = 16 * time.Second // ticks of 1 s
	for _, tc := range []struct {
		name string
		// run drives the reflector's side; it returns when the last wait
		// began.
		run       func(d *watchdog)
		min, max  time.Duration // from the last wait's start to the fire
		fromStart bool          // measured from the watchdog's start
	}{{
		name:      "nothing ever arrives",
		run:       func(*watchdog) {},
		min:       limit,
		max:       limit,
		fromStart: true,
	}, {
		name: "events, then silence",
		run: func(d *watchdog) {
			for range 20 {
				time.Sleep(700 * time.Millisecond)
				d.busy()
				d.waiting()
			}
		},
		min: limit, max: limit + time.Second,
	}, {
		name: "a long time in the store, then silence",
		run: func(d *watchdog) {
			time.Sleep(time.Second)
			d.busy()
			time.Sleep(time.Hour)
			d.waiting()
		},
		min: limit, max: limit + time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				begin := time.Now()
				d := startWatchdog(realClock{}, limit, cancel)
				tc.run(d)
				if d.silent() || ctx.Err() != nil {
					t.Fatal("fired while the stream was not silent")
				}
				start := time.Now()
				if tc.fromStart {
					start = begin
				}
				<-ctx.Done()
				if got := time.Since(start); got < tc.min || got > tc.max {
					t.Errorf("fired %v after the last wait began, want in [%v, %v]", got, tc.min, tc.max)
				}
				if !d.silent() {
					t.Error("silent = false after firing")
				}
				d.stop()
				d.stop()
			})
		})
	}
	t.Run("stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			d := startWatchdog(realClock{}, limit, cancel)
			time.Sleep(limit / 2)
			d.stop()
			time.Sleep(time.Hour)
			if d.silent() || ctx.Err() != nil {
				t.Error("a stopped watchdog fired")
			}
			cancel()
		})
	})
	var off *watchdog // the check turned off
	off.waiting()
	off.busy()
	off.stop()
	if off.silent() {
		t.Error("a nil watchdog reports silence")
	}
}
