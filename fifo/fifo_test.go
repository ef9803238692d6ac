package fifo

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestTranscript runs scripts of operations against a FIFO whose consumer
// applies every popped unit to a store that is also the FIFO's KnownObjects,
// and checks every popped unit, error, Len and HasSynced.
//
// Script: "add|update|delete KEY RV", "replace LISTRV KEY:RV…", "bookmark RV",
// "resync", "pop" (want: the unit), "len" (want: count), "synced" (want:
// true/false), "store" (want: the store), "close".
func TestTranscript(t *testing.T) {
	type step struct{ do, want string }
	tests := []struct {
		name     string
		known    string // initial store content, "a/x:1 …"
		nilKnown bool
		maxRun   int // Options.MaxRun
		steps    []step
	}{
		{
			name: "every delta in order, no merging",
			steps: []step{
				{"add a/x 1", ""}, {"update a/x 2", ""}, {"update a/x 3", ""}, {"add b/y 1", ""}, {"delete a/x 4", ""},
				{"len", "5"},
				{"pop", "Added a/x@1"}, {"pop", "Updated a/x@2"}, {"pop", "Updated a/x@3"}, {"pop", "Added b/y@1"}, {"pop", "Deleted a/x@4"},
				{"len", "0"}, {"store", "b/y@1"},
			},
		},
		{
			name: "cluster-scoped keys and bookmarks",
			steps: []step{
				{"add node-1 1", ""}, {"bookmark 5", ""}, {"update node-1 6", ""},
				{"pop", "Added node-1@1"}, {"pop", "Bookmark 5"}, {"pop", "Updated node-1@6"},
			},
		},
		{
			name:  "replace: Replaced for the list, then Deleted? for known keys it lacks, as one batch",
			known: "a/x:1 a/y:1 b/z:1",
			steps: []step{
				{"replace 10 a/x:2 c/w:1", ""},
				{"len", "4"},
				{"pop", "[Replaced a/x@2 list=10 | Replaced c/w@1 list=10 | Deleted? a/y@1 list=10 | Deleted? b/z@1 list=10]"},
				{"store", "a/x@2 c/w@1"},
			},
		},
		{
			name:  "replace after queued deltas: the queued ones first, deletions from the last queued state",
			known: "a/x:1 a/y:1",
			steps: []step{
				{"add b/y 1", ""}, {"update a/y 2", ""}, {"delete a/x 3", ""}, {"bookmark 4", ""},
				{"replace 10", ""},
				{"pop", "Added b/y@1"}, {"pop", "Updated a/y@2"}, {"pop", "Deleted a/x@3"}, {"pop", "Bookmark 4"},
				// b/y and a/y were last Added/Updated: deleted with that state; a/x
				// was last Deleted: nothing more.
				{"pop", "[Deleted? b/y@1 list=10 | Deleted? a/y@2 list=10]"},
				{"store", ""},
			},
		},
		{
			name:  "replace after a queued delete of a listed key (re-created)",
			known: "a/x:1",
			steps: []step{
				{"delete a/x 2", ""}, {"replace 10 a/x:5", ""},
				{"pop", "Deleted a/x@2"}, {"pop", "[Replaced a/x@5 list=10]"},
				{"store", "a/x@5"},
			},
		},
		{
			name: "replace with nothing listed and nothing known queues nothing and syncs",
			steps: []step{
				{"synced", "false"}, {"replace 10", ""}, {"len", "0"}, {"synced", "true"},
			},
		},
		{
			// The first Replace builds no key set (nothing known or queued);
			// the second must still find what the first listed and it lacks.
			name: "replace twice before a pop, nothing known: the second deletes what only the first listed",
			steps: []step{
				{"replace 10 a/x:1 a/y:1", ""}, {"replace 20 a/x:2", ""},
				{"pop", "[Replaced a/x@1 list=10 | Replaced a/y@1 list=10]"},
				{"pop", "[Replaced a/x@2 list=20 | Deleted? a/y@1 list=20]"},
				{"store", "a/x@2"},
			},
		},
		{
			name:     "replace twice before a pop without KnownObjects",
			nilKnown: true,
			steps: []step{
				{"replace 10 a/x:1 a/y:1", ""}, {"replace 20 a/y:2", ""},
				{"pop", "[Replaced a/x@1 list=10 | Replaced a/y@1 list=10]"},
				{"pop", "[Replaced a/y@2 list=20 | Deleted? a/x@1 list=20]"},
			},
		},
		{
			name:     "replace without KnownObjects finds deletions among queued deltas only",
			nilKnown: true,
			steps: []step{
				{"add a/x 1", ""}, {"pop", "Added a/x@1"},
				{"add a/y 2", ""}, {"replace 10 b/z:1", ""},
				{"pop", "Added a/y@2"}, {"pop", "[Replaced b/z@1 list=10 | Deleted? a/y@2 list=10]"},
				{"resync", ""}, {"len", "0"},
			},
		},
		{
			name: "HasSynced after the first Replace batch, and what was queued before it, is processed",
			steps: []step{
				{"bookmark 1", ""}, {"replace 10 a/x:1 a/y:1", ""}, {"add a/z 11", ""},
				{"synced", "false"},
				{"pop", "Bookmark 1"}, {"synced", "false"},
				{"pop", "[Replaced a/x@1 list=10 | Replaced a/y@1 list=10]"}, {"synced", "true"},
				{"pop", "Added a/z@11"}, {"synced", "true"},
				{"replace 20", ""}, {"synced", "true"},
			},
		},
		{
			name: "HasSynced at once when populated by Add before any Replace",
			steps: []step{
				{"synced", "false"}, {"bookmark 1", ""}, {"synced", "false"}, {"add a/x 1", ""}, {"synced", "true"},
			},
		},
		{
			name:  "resync skips keys with a queued delta",
			known: "a/x:1 a/y:1 b/z:1",
			steps: []step{
				{"update a/x 2", ""}, {"delete b/z 3", ""}, {"resync", ""}, {"len", "3"},
				{"pop", "Updated a/x@2"}, {"pop", "Deleted b/z@3"}, {"pop", "Sync a/y@1"},
				{"resync", ""}, {"pop", "Sync a/x@2"}, {"pop", "Sync a/y@1"}, {"len", "0"},
			},
		},
		{
			name: "invalid objects are refused and queue nothing",
			steps: []step{
				{"add a/ 1", "err: fifo: Added: invalid object: key of a/: empty name"},
				{"replace 10 a/x:1 b/:2", "err: fifo: replace: invalid object: key of b/: empty name"},
				{"len", "0"}, {"synced", "false"},
			},
		},
		{
			name:   "runs: a Pop takes the single deltas behind the head, in order, up to MaxRun",
			maxRun: 3,
			steps: []step{
				{"add a/x 1", ""}, {"update a/x 2", ""}, {"bookmark 3", ""}, {"add b/y 4", ""}, {"delete a/x 5", ""},
				{"len", "5"},
				{"pop", "[Added a/x@1 | Updated a/x@2 | Bookmark 3]"}, {"len", "2"},
				{"pop", "[Added b/y@4 | Deleted a/x@5]"}, {"len", "0"},
				{"store", "b/y@4"},
			},
		},
		{
			// A Replace batch of one delta is still a batch: it must not
			// join the run before it or start one with what follows.
			name:   "runs stop at a Replace batch, which is handed alone even when it holds one delta",
			maxRun: 8,
			steps: []step{
				{"add a/x 1", ""}, {"update a/x 2", ""}, {"replace 10 a/x:5", ""}, {"add b/y 11", ""}, {"update b/y 12", ""},
				{"replace 20 a/x:5 b/y:12", ""}, {"bookmark 21", ""},
				{"pop", "[Added a/x@1 | Updated a/x@2]"},
				{"pop", "[Replaced a/x@5 list=10]"},
				{"pop", "[Added b/y@11 | Updated b/y@12]"},
				{"pop", "[Replaced a/x@5 list=20 | Replaced b/y@12 list=20]"},
				{"pop", "Bookmark 21"}, {"len", "0"},
				{"store", "a/x@5 b/y@12"},
			},
		},
		{
			name:   "runs: HasSynced counts every delta of the runs before the first Replace",
			maxRun: 2,
			steps: []step{
				{"bookmark 1", ""}, {"bookmark 2", ""}, {"bookmark 3", ""}, {"replace 10 a/x:1", ""}, {"add a/y 11", ""},
				{"synced", "false"},
				{"pop", "[Bookmark 1 | Bookmark 2]"}, {"synced", "false"},
				{"pop", "Bookmark 3"}, {"synced", "false"},
				{"pop", "[Replaced a/x@1 list=10]"}, {"synced", "true"},
				{"pop", "Added a/y@11"},
			},
		},
		{
			name:   "runs: resync Syncs run together, and a relist after them deletes what it lacks",
			known:  "a/x:1 a/y:1",
			maxRun: 4,
			steps: []step{
				{"update a/x 2", ""}, {"resync", ""}, {"len", "2"},
				{"pop", "[Updated a/x@2 | Sync a/y@1]"},
				{"resync", ""}, {"pop", "[Sync a/x@2 | Sync a/y@1]"},
				{"replace 10 a/y:1", ""}, {"pop", "[Replaced a/y@1 list=10 | Deleted? a/x@2 list=10]"},
				{"store", "a/y@1"},
			},
		},
		{
			name: "close drops the queue and refuses everything",
			steps: []step{
				{"add a/x 1", ""}, {"close", ""}, {"len", "0"},
				{"add a/y 1", "err: fifo: closed"}, {"replace 10", "err: fifo: closed"}, {"bookmark 2", "err: fifo: closed"},
				{"resync", "err: fifo: closed"}, {"pop", "err: fifo: closed"}, {"close", ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(parseObjs(t, tt.known)...)
			opts := Options[obj]{KnownObjects: s, MaxRun: tt.maxRun}
			if tt.nilKnown {
				opts.KnownObjects = nil
			}
			f, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tt.steps {
				fields := strings.Fields(st.do)
				var got string
				switch fields[0] {
				case "add", "update", "delete":
					o := mk(fields[1], fields[2])
					switch fields[0] {
					case "add":
						got = fmtErr(f.Add(o))
					case "update":
						got = fmtErr(f.Update(o))
					case "delete":
						got = fmtErr(f.Delete(o))
					}
				case "replace":
					got = fmtErr(f.Replace(parseObjs(t, strings.Join(fields[2:], " ")), fields[1]))
				case "bookmark":
					got = fmtErr(f.Bookmark(fields[1]))
				case "resync":
					got = fmtErr(f.Resync())
				case "pop":
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err := f.Pop(ctx, func(batch []Delta[obj]) error {
						got = renderBatch(batch)
						s.apply(batch)
						return nil
					})
					cancel()
					if err != nil {
						got = fmtErr(err)
					}
				case "len":
					got = strconv.Itoa(f.Len())
				case "synced":
					got = strconv.FormatBool(f.HasSynced())
					select {
					case <-f.Synced():
						if !f.HasSynced() {
							t.Fatalf("step %d: Synced closed while HasSynced is false", i)
						}
					default:
						if f.HasSynced() {
							t.Fatalf("step %d: HasSynced true but Synced not closed", i)
						}
					}
				case "store":
					got = s.String()
				case "close":
					f.Close()
				default:
					t.Fatalf("bad step %q", st.do)
				}
				if got != st.want {
					t.Fatalf("step %d %q:\n got %s\nwant %s", i, st.do, got, st.want)
				}
			}
		})
	}
}

// TestInFlightCountsAsQueued: while a Pop is processing a unit that the
// consumer has not applied yet, Replace and Resync must treat it as queued.
func TestInFlightCountsAsQueued(t *testing.T) {
	s := newStore(mk("a/x", "1"), mk("a/y", "1"))
	f, err := New(Options[obj]{KnownObjects: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(mk("b/new", "2")); err != nil {
		t.Fatal(err)
	}
	if err := f.Update(mk("a/x", "3")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Processing "Added b/new": a relist without b/new arrives before the
	// consumer stored it. The deletion must still be queued.
	err = f.Pop(ctx, func(batch []Delta[obj]) error {
		if err := f.Replace([]obj{mk("a/x", "3"), mk("a/y", "1")}, "10"); err != nil {
			return err
		}
		s.apply(batch)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Processing "Updated a/x@3": a resync must not queue the old a/x@1.
	err = f.Pop(ctx, func(batch []Delta[obj]) error {
		if err := f.Resync(); err != nil {
			return err
		}
		s.apply(batch)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	drainExpect(t, f, s, "[Replaced a/x@3 list=10 | Replaced a/y@1 list=10 | Deleted? b/new@2 list=10]", "a/x@3 a/y@1")
}

// drainExpect pops every queued unit into s and checks the units, one per
// line, and then the store.
func drainExpect(t *testing.T, f *FIFO[obj], s *store, want, wantStore string) {
	t.Helper()
	var got []string
	for f.Len() > 0 {
		got = append(got, popOne(t, f, s))
	}
	if strings.Join(got, "\n") != want {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	if s.String() != wantStore {
		t.Fatalf("store = %s, want %s", s, wantStore)
	}
}

func TestPopErrorsAndCancel(t *testing.T) {
	f, err := New(Options[obj]{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := f.Add(mk("a/x", "1")); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(mk("a/x", "2")); err != nil {
		t.Fatal(err)
	}
	if err := f.Pop(context.Background(), func([]Delta[obj]) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Pop = %v, want the process error", err)
	}
	if f.Len() != 1 {
		t.Fatalf("Len = %d after a failed process: the unit must be consumed", f.Len())
	}
	if err := f.Pop(context.Background(), nil); err == nil {
		t.Fatal("Pop with nil func succeeded")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Pop(ctx, func([]Delta[obj]) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop with a cancelled ctx = %v", err)
	}
	if f.Len() != 1 {
		t.Fatalf("a cancelled Pop consumed a delta")
	}

	// A panicking process func leaves the FIFO usable.
	func() {
		defer func() { _ = recover() }()
		_ = f.Pop(context.Background(), func([]Delta[obj]) error { panic("handler bug") })
	}()
	if err := f.Add(mk("a/x", "3")); err != nil {
		t.Fatal(err)
	}
	if got := popOne(t, f, nil); got != "Added a/x@3" {
		t.Fatalf("after a panic, popped %s", got)
	}
}

// TestPopBlocks checks, inside a synctest bubble (no sleeps), that Pop
// blocks while the FIFO is empty and wakes for a push, a cancel and a Close,
// and that a second Pop waits while a first one is processing.
func TestPopBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := New(Options[obj]{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 2)
		pop := func(ctx context.Context) {
			err := f.Pop(ctx, func(b []Delta[obj]) error {
				got <- renderBatch(b)
				return nil
			})
			if err != nil {
				got <- err.Error()
			}
		}
		expect := func(want string) {
			t.Helper()
			synctest.Wait()
			select {
			case g := <-got:
				if g != want {
					t.Fatalf("got %q, want %q", g, want)
				}
			default:
				if want != "" {
					t.Fatalf("nothing yet, want %q", want)
				}
			}
		}

		go pop(context.Background())
		expect("") // blocked on an empty FIFO
		must(t, f.Update(mk("a/x", "1")))
		expect("Updated a/x@1")

		ctx, cancel := context.WithCancel(context.Background())
		go pop(ctx)
		expect("")
		cancel()
		expect("context canceled")

		// A Pop waits while another is processing, then takes the next unit.
		release := make(chan struct{})
		must(t, f.Add(mk("a/x", "2")))
		must(t, f.Add(mk("a/x", "3")))
		go func() {
			_ = f.Pop(context.Background(), func(b []Delta[obj]) error {
				<-release
				got <- renderBatch(b)
				return nil
			})
		}()
		synctest.Wait()
		go pop(context.Background())
		expect("")
		close(release)
		synctest.Wait()
		if a, b := <-got, <-got; a != "Added a/x@2" || b != "Added a/x@3" {
			t.Fatalf("got %q then %q", a, b)
		}

		go pop(context.Background())
		expect("")
		f.Close()
		expect("fifo: closed")
	})
}

func TestTransform(t *testing.T) {
	s := newStore(mk("a/old", "1"))
	f, err := New(Options[obj]{
		KnownObjects: s,
		Transform: func(o obj) (obj, error) {
			if o.Name == "refused" {
				return nil, errors.New("refused by transform")
			}
			o.ManagedFields = nil
			o.ResourceVersion += "t"
			return o, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(mk("a/x", "1")); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(mk("a/refused", "1")); err == nil || !strings.Contains(err.Error(), "refused by transform") {
		t.Fatalf("Add of a refused object = %v", err)
	}
	if err := f.Replace([]obj{mk("a/y", "2")}, "10"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Added a/x@1t",
		// Deletions from queued deltas first (a/x), then from KnownObjects
		// (a/old, not transformed again).
		"[Replaced a/y@2t list=10 | Deleted? a/x@1t list=10 | Deleted? a/old@1 list=10]",
	}
	for _, w := range want {
		if got := popOne(t, f, s); got != w {
			t.Fatalf("got %s, want %s", got, w)
		}
	}
}

// TestSyncedDespiteProcessError: like client-go, a failed process func
// still consumes the initial batch.
func TestSyncedDespiteProcessError(t *testing.T) {
	f, err := New(Options[obj]{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, f.Replace([]obj{mk("a/x", "1")}, "1"))
	if f.HasSynced() {
		t.Fatal("synced before the batch was popped")
	}
	boom := errors.New("boom")
	if err := f.Pop(context.Background(), func([]Delta[obj]) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Pop = %v", err)
	}
	if !f.HasSynced() {
		t.Fatal("not synced after the initial batch was processed with an error")
	}
}

func TestOptionsValidate(t *testing.T) {
	var typedNil *store
	if _, err := New(Options[obj]{KnownObjects: typedNil}); err == nil {
		t.Error("a typed-nil KnownObjects was accepted")
	}
	if _, err := New(Options[obj]{}); err != nil {
		t.Errorf("zero Options: %v", err)
	}
}

func TestDeltaTypeString(t *testing.T) {
	for typ, want := range map[DeltaType]string{Added: "Added", Updated: "Updated", Deleted: "Deleted", Replaced: "Replaced", Sync: "Sync", Bookmark: "Bookmark", 0: "DeltaType(0)"} {
		if got := typ.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", typ, got, want)
		}
	}
}

// TestBurstDrainsInOrder pushes a burst of many chunks of the queue, pops
// some meanwhile, drains it, and checks the order (internal/chunkq's tests
// check that drained chunks are given back).
func TestBurstDrainsInOrder(t *testing.T) {
	f, err := New(Options[obj]{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10_000
	next := 0
	for i := range n {
		if err := f.Add(mk("a/x", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 { // interleave pops so the queue's head moves across chunks
			if got, want := popOne(t, f, nil), "Added a/x@"+strconv.Itoa(next); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			next++
		}
	}
	for f.Len() > 0 {
		if got, want := popOne(t, f, nil), "Added a/x@"+strconv.Itoa(next); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		next++
	}
	if next != n {
		t.Fatalf("popped %d, pushed %d", next, n)
	}
}

// TestInFlightRunCountsAsQueued: every delta of a run being processed
// counts as queued for Replace and Resync, not only its first.
func TestInFlightRunCountsAsQueued(t *testing.T) {
	s := newStore(mk("a/x", "1"), mk("a/y", "1"))
	f, err := New(Options[obj]{KnownObjects: s, MaxRun: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Update(mk("a/x", "3")); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(mk("b/new", "2")); err != nil {
		t.Fatal(err)
	}
	// Processing the run "Updated a/x@3, Added b/new@2": a relist without
	// b/new must queue its deletion (last state @2), and a resync must not
	// queue the old a/x@1 behind it.
	err = f.Pop(context.Background(), func(batch []Delta[obj]) error {
		if got := renderBatch(batch); got != "[Updated a/x@3 | Added b/new@2]" {
			t.Errorf("run = %s", got)
		}
		if err := f.Replace([]obj{mk("a/x", "3"), mk("a/y", "1")}, "10"); err != nil {
			return err
		}
		if err := f.Resync(); err != nil {
			return err
		}
		s.apply(batch)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	drainExpect(t, f, s, "[Replaced a/x@3 list=10 | Replaced a/y@1 list=10 | Deleted? b/new@2 list=10]", "a/x@3 a/y@1")
}

// TestFirstReplaceDuringInFlightRun: the first Replace may be queued while a
// Pop processes deltas queued before it (Bookmarks, or the Syncs of a Resync
// over a store the consumer filled beforehand). Those in-flight deltas are
// not part of the initial population that Replace counts, so their end must
// not count against it: HasSynced stays false until the Replace batch itself
// has been processed.
func TestFirstReplaceDuringInFlightRun(t *testing.T) {
	tests := []struct {
		name   string
		known  string
		maxRun int
		queue  func(f *FIFO[obj]) error // before the Pop
		list   string                   // the first Replace, made during the Pop
		run    string                   // the unit in flight
		batch  string                   // the Replace batch popped next
	}{
		{
			name:   "a run of Syncs in flight, a first list as long as the run",
			known:  "a/x:1 a/y:1 a/z:1",
			maxRun: 4,
			queue:  func(f *FIFO[obj]) error { return f.Resync() },
			list:   "a/x:2 a/y:2 a/z:2",
			run:    "[Sync a/x@1 | Sync a/y@1 | Sync a/z@1]",
			batch:  "[Replaced a/x@2 list=10 | Replaced a/y@2 list=10 | Replaced a/z@2 list=10]",
		},
		{
			name:   "a run of Bookmarks in flight",
			maxRun: 8,
			queue: func(f *FIFO[obj]) error {
				for _, rv := range []string{"1", "2", "3"} {
					if err := f.Bookmark(rv); err != nil {
						return err
					}
				}
				return nil
			},
			list:  "a/x:5 a/y:5",
			run:   "[Bookmark 1 | Bookmark 2 | Bookmark 3]",
			batch: "[Replaced a/x@5 list=10 | Replaced a/y@5 list=10]",
		},
		{
			name:   "one Bookmark in flight, a first list of one object (no runs)",
			maxRun: 1,
			queue:  func(f *FIFO[obj]) error { return f.Bookmark("1") },
			list:   "a/x:5",
			run:    "Bookmark 1",
			batch:  "[Replaced a/x@5 list=10]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(parseObjs(t, tt.known)...)
			f, err := New(Options[obj]{KnownObjects: s, MaxRun: tt.maxRun})
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.queue(f); err != nil {
				t.Fatal(err)
			}
			err = f.Pop(context.Background(), func(batch []Delta[obj]) error {
				if got := renderBatch(batch); got != tt.run {
					t.Errorf("in flight: %s, want %s", got, tt.run)
				}
				if err := f.Replace(parseObjs(t, tt.list), "10"); err != nil {
					return err
				}
				s.apply(batch)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if f.HasSynced() {
				t.Fatalf("HasSynced before the first Replace batch was popped (%d deltas still queued)", f.Len())
			}
			select {
			case <-f.Synced():
				t.Fatal("Synced closed before the first Replace batch was popped")
			default:
			}
			var synced bool
			err = f.Pop(context.Background(), func(batch []Delta[obj]) error {
				if got := renderBatch(batch); got != tt.batch {
					t.Errorf("popped %s, want %s", got, tt.batch)
				}
				synced = f.HasSynced()
				s.apply(batch)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if synced {
				t.Fatal("HasSynced while the first Replace batch was being processed")
			}
			if !f.HasSynced() {
				t.Fatal("HasSynced false after the first Replace batch was processed")
			}
		})
	}
}

// TestRunEndings: a run whose process func fails, panics, or closes the
// FIFO is consumed whole, and the FIFO is left as after any Pop: nothing of
// the run counts as in flight any more (a Resync queues Syncs for its keys
// again), the next Pop takes what follows, and the run's deltas count for
// HasSynced.
func TestRunEndings(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		process func(f *FIFO[obj]) error
		wantErr error
		panics  bool
		after   []string // pops after a Resync, which must succeed
	}{
		{
			name:    "error",
			process: func(*FIFO[obj]) error { return boom },
			wantErr: boom,
			after:   []string{"[Updated b/z@5 | Sync a/x@1 | Sync a/y@1]"},
		},
		{
			name:    "panic",
			process: func(*FIFO[obj]) error { panic("handler bug") },
			panics:  true,
			after:   []string{"[Updated b/z@5 | Sync a/x@1 | Sync a/y@1]"},
		},
		{
			name:    "close",
			process: func(f *FIFO[obj]) error { f.Close(); return nil },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(mk("a/x", "1"), mk("a/y", "1"), mk("b/z", "1"))
			f, err := New(Options[obj]{KnownObjects: s, MaxRun: 4})
			if err != nil {
				t.Fatal(err)
			}
			must(t, f.Bookmark("1"))
			must(t, f.Bookmark("2"))
			must(t, f.Replace([]obj{mk("a/x", "1"), mk("a/y", "1"), mk("b/z", "1")}, "2"))
			// Before the first Replace's batch, the run of Bookmarks goes
			// wrong too: it still counts for HasSynced.
			var ended error
			func() {
				defer func() {
					if r := recover(); r != nil && !tt.panics {
						t.Fatalf("panic: %v", r)
					}
				}()
				ended = f.Pop(context.Background(), func(batch []Delta[obj]) error {
					if got := renderBatch(batch); got != "[Bookmark 1 | Bookmark 2]" {
						t.Errorf("first run %s", got)
					}
					if tt.name == "close" {
						return boom // keep the FIFO open for the run below
					}
					return tt.process(f)
				})
			}()
			if tt.wantErr != nil && !errors.Is(ended, tt.wantErr) {
				t.Fatalf("Pop = %v, want %v", ended, tt.wantErr)
			}
			if f.HasSynced() {
				t.Fatal("synced before the first Replace batch was processed")
			}
			if got := popOne(t, f, s); got != "[Replaced a/x@1 list=2 | Replaced a/y@1 list=2 | Replaced b/z@1 list=2]" {
				t.Fatalf("popped %s", got)
			}
			if !f.HasSynced() {
				t.Fatal("not synced after the first Replace batch, behind a run that went wrong")
			}

			for _, err := range []error{f.Update(mk("a/x", "2")), f.Update(mk("a/y", "2")), f.Update(mk("a/x", "3")), f.Update(mk("a/y", "4")), f.Update(mk("b/z", "5"))} {
				must(t, err)
			}
			ended = nil
			func() {
				defer func() {
					if r := recover(); r != nil && !tt.panics {
						t.Fatalf("panic: %v", r)
					} else if r == nil && tt.panics {
						t.Fatal("the panic of the process func was swallowed")
					}
				}()
				ended = f.Pop(context.Background(), func(batch []Delta[obj]) error {
					if got := renderBatch(batch); got != "[Updated a/x@2 | Updated a/y@2 | Updated a/x@3 | Updated a/y@4]" {
						t.Errorf("run %s", got)
					}
					return tt.process(f)
				})
			}()
			if !errors.Is(ended, tt.wantErr) {
				t.Fatalf("Pop = %v, want %v", ended, tt.wantErr)
			}
			if tt.name == "close" {
				if f.Len() != 0 {
					t.Fatalf("Len = %d after Close", f.Len())
				}
				if err := f.Resync(); !errors.Is(err, ErrClosed) {
					t.Fatalf("Resync after Close = %v", err)
				}
				if err := f.Pop(context.Background(), func([]Delta[obj]) error { return nil }); !errors.Is(err, ErrClosed) {
					t.Fatalf("Pop after Close = %v", err)
				}
				return
			}
			if f.Len() != 1 {
				t.Fatalf("Len = %d, want 1: the run must be consumed whole", f.Len())
			}
			// The store never got the run: a resync queues the known
			// states of a/x and a/y again (their run is no longer in
			// flight), not b/z's (still queued).
			must(t, f.Resync())
			var got []string
			for f.Len() > 0 {
				got = append(got, popOne(t, f, s))
			}
			if !slices.Equal(got, tt.after) {
				t.Fatalf("after the run:\n got %q\nwant %q", got, tt.after)
			}
		})
	}
}
