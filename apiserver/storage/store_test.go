package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// enc returns an encoder of a tiny JSON object carrying value v.
func enc(ns, name, v string, labels map[string]string) EncodeFunc {
	return func(rev int64) (*Object, error) {
		data := fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q,"resourceVersion":"%d"},"v":%q}`, name, ns, rev, v)
		return &Object{Namespace: ns, Name: name, UID: "uid-" + name, Data: []byte(data), Labels: labels,
			Fields: map[string]string{"metadata.name": name, "v": v}}, nil
	}
}

func set(ns, name, v string) UpdateFunc {
	return func(*Object) (EncodeFunc, error) { return enc(ns, name, v, nil), nil }
}

func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func value(o *Object) string { return o.Fields["v"] }

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"negative history", Options{HistoryEvents: -1}, false},
		{"negative age", Options{HistoryAge: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if (err == nil) != tc.ok {
				t.Fatalf("New: err=%v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestCRUD(t *testing.T) {
	s := newStore(t, Options{})
	a, err := s.Create("pods", "ns", "a", enc("ns", "a", "1", nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.ResourceVersion != 1 || s.Revision() != 1 {
		t.Fatalf("rv=%d rev=%d, want 1", a.ResourceVersion, s.Revision())
	}
	if _, err := s.Create("pods", "ns", "a", enc("ns", "a", "1", nil)); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: %v, want ErrAlreadyExists", err)
	}
	// The same name in another resource or namespace is another object.
	if _, err := s.Create("configmaps", "ns", "a", enc("ns", "a", "x", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create("pods", "other", "a", enc("other", "a", "x", nil)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("pods", "ns", "a")
	if err != nil || got != a {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if _, err := s.Get("pods", "ns", "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}

	// Update with a stale precondition conflicts; with the right one it succeeds.
	stale := Preconditions{ResourceVersion: 99}
	_, err = s.Update("pods", "ns", "a", func(cur *Object) (EncodeFunc, error) {
		if err := stale.Check(cur); err != nil {
			return nil, err
		}
		return enc("ns", "a", "2", nil), nil
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: %v, want ErrConflict", err)
	}
	b, err := s.Update("pods", "ns", "a", func(cur *Object) (EncodeFunc, error) {
		if err := (Preconditions{ResourceVersion: a.ResourceVersion, UID: "uid-a"}).Check(cur); err != nil {
			return nil, err
		}
		return enc("ns", "a", "2", nil), nil
	})
	if err != nil || value(b) != "2" || b.ResourceVersion != 4 {
		t.Fatalf("update = %+v, %v", b, err)
	}
	// No change: nothing written.
	c, err := s.Update("pods", "ns", "a", func(*Object) (EncodeFunc, error) { return nil, nil })
	if err != nil || c != b || s.Revision() != 4 {
		t.Fatalf("no-op update = %+v, %v, rev %d", c, err, s.Revision())
	}
	if _, err := s.Update("pods", "ns", "missing", set("ns", "missing", "")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	// An encoder for another key is refused.
	if _, err := s.Update("pods", "ns", "a", set("ns", "b", "")); !errors.Is(err, ErrInvalidObject) {
		t.Fatalf("wrong key: %v", err)
	}
	d, err := s.Delete("pods", "ns", "a", set("ns", "a", "2"))
	if err != nil || d.ResourceVersion <= b.ResourceVersion {
		t.Fatalf("delete = %+v, %v", d, err)
	}
	if _, err := s.Get("pods", "ns", "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after delete: %v", err)
	}
	if _, err := s.Delete("pods", "ns", "a", set("ns", "a", "2")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestUpdateRetriesOnConcurrentChange(t *testing.T) {
	s := newStore(t, Options{})
	if _, err := s.Create("cm", "", "x", enc("", "x", "0", nil)); err != nil {
		t.Fatal(err)
	}
	// Increment a counter from many goroutines: the retry makes it exact.
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := s.Update("cm", "", "x", func(cur *Object) (EncodeFunc, error) {
				v, _ := strconv.Atoi(value(cur))
				return enc("", "x", strconv.Itoa(v+1), nil), nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	o, _ := s.Get("cm", "", "x")
	if value(o) != strconv.Itoa(n) {
		t.Fatalf("counter = %s, want %d", value(o), n)
	}
}

func TestListPaginationAndExactRevision(t *testing.T) {
	s := newStore(t, Options{})
	for _, ns := range []string{"b", "a"} {
		for _, name := range []string{"y", "x", "z"} {
			if _, err := s.Create("pods", ns, name, enc(ns, name, "0", map[string]string{"ns": ns})); err != nil {
				t.Fatal(err)
			}
		}
	}
	keys := func(objs []*Object) (out []string) {
		for _, o := range objs {
			out = append(out, o.Key())
		}
		return out
	}
	all, err := s.List("pods", ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys(all.Objects)); got != "[a/x a/y a/z b/x b/y b/z]" || all.Revision != 6 {
		t.Fatalf("list = %s at %d", got, all.Revision)
	}
	one, _ := s.List("pods", ListOptions{Namespace: "b"})
	if got := fmt.Sprint(keys(one.Objects)); got != "[b/x b/y b/z]" {
		t.Fatalf("namespace list = %s", got)
	}
	pred, _ := s.List("pods", ListOptions{Predicate: func(o *Object) bool { return o.Name == "y" }})
	if got := fmt.Sprint(keys(pred.Objects)); got != "[a/y b/y]" {
		t.Fatalf("predicate list = %s", got)
	}

	// Page through while writes happen: every page shows the first page's state.
	page, _ := s.List("pods", ListOptions{Limit: 4})
	if page.Next != "b/x" || page.Remaining != 2 || len(page.Objects) != 4 {
		t.Fatalf("page 1: next %q remaining %d objects %v", page.Next, page.Remaining, keys(page.Objects))
	}
	if _, err := s.Delete("pods", "b", "z", set("b", "z", "0")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update("pods", "b", "y", set("b", "y", "changed")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create("pods", "b", "w", enc("b", "w", "0", nil)); err != nil {
		t.Fatal(err)
	}
	page2, err := s.List("pods", ListOptions{Limit: 4, StartAfter: page.Next, Revision: page.Revision, Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(keys(page2.Objects)); got != "[b/y b/z]" || page2.Next != "" || value(page2.Objects[0]) != "0" {
		t.Fatalf("page 2 = %s next %q", got, page2.Next)
	}
	now, _ := s.List("pods", ListOptions{Namespace: "b"})
	if got := fmt.Sprint(keys(now.Objects)); got != "[b/w b/x b/y]" {
		t.Fatalf("current = %s", got)
	}
	if _, err := s.List("pods", ListOptions{Revision: 1000}); !errors.Is(err, ErrTooLargeResourceVersion) {
		t.Fatalf("future list: %v", err)
	}
}

func TestListExactExpired(t *testing.T) {
	s := newStore(t, Options{HistoryEvents: 2})
	for i := range 5 {
		if _, err := s.Create("pods", "", strconv.Itoa(i), enc("", strconv.Itoa(i), "", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.List("pods", ListOptions{Revision: 2, Exact: true}); !errors.Is(err, ErrExpired) {
		t.Fatalf("list at compacted revision: %v", err)
	}
	l, err := s.List("pods", ListOptions{Revision: 4, Exact: true})
	if err != nil || len(l.Objects) != 4 {
		t.Fatalf("list at 4: %d objects, %v", len(l.Objects), err)
	}
}

// Compact expires every older revision in every resource (and in resources
// first written after it), like etcd's compaction; the current one still works.
func TestCompact(t *testing.T) {
	s := newStore(t, Options{})
	for i := range 3 {
		if _, err := s.Create("pods", "", strconv.Itoa(i), enc("", strconv.Itoa(i), "", nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.List("pods", ListOptions{Revision: 1, Exact: true}); err != nil {
		t.Fatalf("list at 1 before compaction: %v", err)
	}
	s.Compact(s.Revision())
	for _, tc := range []struct {
		res     string
		rev     int64
		expired bool
	}{
		{"pods", 1, true},
		{"pods", 2, true},
		{"pods", 3, false},
		{"configmaps", 2, true}, // first used after the compaction
	} {
		_, err := s.List(tc.res, ListOptions{Revision: tc.rev, Exact: true})
		if got := errors.Is(err, ErrExpired); got != tc.expired {
			t.Errorf("list %s at %d: %v, want expired=%v", tc.res, tc.rev, err, tc.expired)
		}
		_, err = s.Watch(tc.res, WatchOptions{Revision: tc.rev})
		if got := errors.Is(err, ErrExpired); got != tc.expired {
			t.Errorf("watch %s from %d: %v, want expired=%v", tc.res, tc.rev, err, tc.expired)
		}
	}
}

// collect reads n events from w.
func collect(t *testing.T, w *Watcher, n int) []*Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*Event
	for range n {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
	return out
}

func describe(evs []*Event) string {
	var out []string
	for _, e := range evs {
		if e.Type == Bookmark {
			out = append(out, fmt.Sprintf("BOOKMARK@%d end=%v", e.Revision, e.InitialEventsEnd))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s=%s@%d", e.Type, e.Object.Key(), value(e.Object), e.Revision))
	}
	return fmt.Sprint(out)
}

func TestWatch(t *testing.T) {
	s := newStore(t, Options{})
	lbl := func(v string) map[string]string { return map[string]string{"app": v} }
	mustCreate := func(name, v string) {
		if _, err := s.Create("pods", "ns", name, enc("ns", name, v, lbl(v))); err != nil {
			t.Fatal(err)
		}
	}
	mustUpdate := func(name, v string) {
		if _, err := s.Update("pods", "ns", name, func(*Object) (EncodeFunc, error) { return enc("ns", name, v, lbl(v)), nil }); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate("a", "web")                                                                                                                    // 1
	mustCreate("b", "db")                                                                                                                     // 2
	mustUpdate("a", "db")                                                                                                                     // 3
	if _, err := s.Delete("pods", "ns", "b", func(*Object) (EncodeFunc, error) { return enc("ns", "b", "db", lbl("db")), nil }); err != nil { // 4
		t.Fatal(err)
	}
	mustCreate("c", "web")                                                                          // 5
	if _, err := s.Create("pods", "other", "d", enc("other", "d", "web", lbl("web"))); err != nil { // 6
		t.Fatal(err)
	}
	isWeb := func(o *Object) bool { return o.Labels["app"] == "web" }
	for _, tc := range []struct {
		name string
		opts WatchOptions
		n    int
		want string
	}{
		{"from 0", WatchOptions{}, 6, "[ADDED ns/a=web@1 ADDED ns/b=db@2 MODIFIED ns/a=db@3 DELETED ns/b=db@4 ADDED ns/c=web@5 ADDED other/d=web@6]"},
		{"from 2", WatchOptions{Revision: 2}, 4, "[MODIFIED ns/a=db@3 DELETED ns/b=db@4 ADDED ns/c=web@5 ADDED other/d=web@6]"},
		{"namespace", WatchOptions{Revision: 2, Namespace: "ns"}, 3, "[MODIFIED ns/a=db@3 DELETED ns/b=db@4 ADDED ns/c=web@5]"},
		{"predicate turns update into delete", WatchOptions{Predicate: isWeb}, 4, "[ADDED ns/a=web@1 DELETED ns/a=db@3 ADDED ns/c=web@5 ADDED other/d=web@6]"},
		{"initial events", WatchOptions{SendInitialEvents: true, InitialEventsEnd: true, Namespace: "ns"}, 3, "[ADDED ns/a=db@3 ADDED ns/c=web@5 BOOKMARK@6 end=true]"},
		{"initial events with predicate", WatchOptions{SendInitialEvents: true, Predicate: isWeb}, 2, "[ADDED ns/c=web@5 ADDED other/d=web@6]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := s.Watch("pods", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(collect(t, w, tc.n)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := s.Watch("pods", WatchOptions{Revision: 7}); !errors.Is(err, ErrTooLargeResourceVersion) {
		t.Fatalf("future watch: %v", err)
	}
	// Live events arrive after the initial ones, and frames are shared.
	w, err := s.Watch("pods", WatchOptions{Revision: 6})
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate("c", "x")
	ev := collect(t, w, 1)[0]
	want := `{"type":"MODIFIED","object":{"metadata":{"name":"c","namespace":"ns","resourceVersion":"7"},"v":"x"}}` + "\n"
	if string(ev.Frame()) != want {
		t.Fatalf("frame = %s", ev.Frame())
	}
	if &ev.Frame()[0] != &ev.Frame()[0] {
		t.Fatal("frame is not cached")
	}
}

func TestWatchExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, Options{HistoryEvents: 3, HistoryAge: time.Minute})
		for i := range 5 {
			if _, err := s.Create("cm", "", strconv.Itoa(i), enc("", strconv.Itoa(i), "", nil)); err != nil {
				t.Fatal(err)
			}
		}
		// Revisions 3..5 are retained: a watch from 2 sees all of them, from 1 not.
		if _, err := s.Watch("cm", WatchOptions{Revision: 1}); !errors.Is(err, ErrExpired) {
			t.Fatalf("watch from 1: %v", err)
		}
		if _, err := s.Watch("cm", WatchOptions{Revision: 2}); err != nil {
			t.Fatalf("watch from 2: %v", err)
		}
		// After the age limit the history is empty and only the current revision is valid.
		time.Sleep(2 * time.Minute)
		if _, err := s.Watch("cm", WatchOptions{Revision: 4}); !errors.Is(err, ErrExpired) {
			t.Fatalf("watch from 4 after aging: %v", err)
		}
		if _, err := s.Watch("cm", WatchOptions{Revision: 5}); err != nil {
			t.Fatalf("watch from 5: %v", err)
		}
		// A quiet resource has complete (empty) history from revision 0.
		if _, err := s.Watch("quiet", WatchOptions{Revision: 1}); err != nil {
			t.Fatalf("watch quiet resource: %v", err)
		}
	})
}

func TestSlowWatcherIsDisconnected(t *testing.T) {
	s := newStore(t, Options{HistoryEvents: 10})
	slow, err := s.Watch("cm", WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fast, err := s.Watch("cm", WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 30 {
		if _, err := s.Create("cm", "", strconv.Itoa(i), enc("", strconv.Itoa(i), "", nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := fast.Next(ctx); err != nil {
			t.Fatalf("fast watcher: %v", err)
		}
	}
	if _, err := slow.Next(ctx); !errors.Is(err, ErrWatcherTooSlow) {
		t.Fatalf("slow watcher: %v", err)
	}
}

func TestBookmarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, Options{})
		if _, err := s.Create("cm", "", "a", enc("", "a", "", nil)); err != nil {
			t.Fatal(err)
		}
		w, err := s.Watch("cm", WatchOptions{Revision: 1, BookmarkInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// Writes to another resource move the revision; the bookmark carries it.
		if _, err := s.Create("other", "", "x", enc("", "x", "", nil)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ev, err := w.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != Bookmark || ev.Revision != 2 || time.Since(start) != time.Second {
			t.Fatalf("got %s@%d after %s", ev.Type, ev.Revision, time.Since(start))
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := w.Next(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Next: %v", err)
		}
	})
}

// TestConcurrentWritersAndWatchers checks that watchers started at various
// revisions while writers run see every event after their start exactly once
// and in order.
func TestConcurrentWritersAndWatchers(t *testing.T) {
	s := newStore(t, Options{HistoryEvents: 100_000})
	const writers, perWriter, watchers = 4, 500, 8
	total := writers * perWriter
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	type result struct {
		from int64
		revs []int64
	}
	results := make(chan result, watchers)
	for i := range watchers {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Millisecond)
			from := s.Revision()
			w, err := s.Watch("cm", WatchOptions{Revision: from})
			if err != nil {
				t.Error(err)
				return
			}
			var revs []int64
			for int64(len(revs)) < int64(total)-from {
				ev, err := w.Next(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				revs = append(revs, ev.Revision)
			}
			results <- result{from, revs}
		})
	}
	for i := range writers {
		wg.Go(func() {
			for j := range perWriter {
				name := fmt.Sprintf("w%d-%d", i, j%10)
				var err error
				if j < 10 {
					_, err = s.Create("cm", "", name, enc("", name, "0", nil))
				} else {
					_, err = s.Update("cm", "", name, set("", name, strconv.Itoa(j)))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		// Only this resource is written, so revisions are contiguous.
		for i, rev := range r.revs {
			if want := r.from + int64(i) + 1; rev != want {
				t.Fatalf("watcher from %d: event %d has revision %d, want %d", r.from, i, rev, want)
			}
		}
	}
}

// An event's other encodings are made once per key, shared by every
// caller (concurrent ones wait for the first), kept with their error, and
// charged to the history until the event leaves it.
func TestEventEncoded(t *testing.T) {
	s := newStore(t, Options{})
	if _, err := s.Create("widgets", "ns", "a", sized("ns", "a", 100)); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch("widgets", WatchOptions{Revision: s.Revision() - 1})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := w.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := s.HistoryBytes()
	var calls atomic.Int32
	enc := func(ev *Event) ([]byte, error) {
		calls.Add(1)
		return []byte("proto:" + ev.Object.Name), nil
	}
	var wg sync.WaitGroup
	got := make([][]byte, 8)
	for i := range got {
		wg.Go(func() {
			b, err := ev.Encoded("proto", enc)
			if err != nil {
				t.Error(err)
			}
			got[i] = b
		})
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("encoded %d times, want once", calls.Load())
	}
	for _, b := range got {
		if string(b) != "proto:a" || &b[0] != &got[0][0] {
			t.Fatalf("encodings %q are not one shared encoding", got)
		}
	}
	if d := s.HistoryBytes() - before; d != int64(len("proto:a")) {
		t.Fatalf("the encoding costs the history %d bytes, want %d", d, len("proto:a"))
	}
	boom := errors.New("boom")
	for range 2 {
		if _, err := ev.Encoded("other", func(*Event) ([]byte, error) { calls.Add(1); return nil, boom }); !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("a failed encoding ran %d times in all, want once", calls.Load()-1)
	}
	s.Compact(s.Revision())
	if got := s.HistoryBytes(); got != 0 {
		t.Fatalf("empty history costs %d", got)
	}
	if _, err := ev.Encoded("late", enc); err != nil || s.HistoryBytes() != 0 {
		t.Fatalf("an encoding made after the eviction: err %v, history costs %d", err, s.HistoryBytes())
	}
}
