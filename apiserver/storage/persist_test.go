package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// openDir opens a store on dir and closes it when the test ends.
func openDir(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	opts.Dir = dir
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// state describes what a store holds: every resource's objects and retained
// events, its compaction and the store's revision.
func state(s *Store) string {
	var b strings.Builder
	s.mu.RLock()
	names := make([]string, 0, len(s.resources))
	for n := range s.resources {
		names = append(names, n)
	}
	s.mu.RUnlock()
	slices.Sort(names)
	for _, n := range names {
		r := s.resource(n)
		r.mu.RLock()
		fmt.Fprintf(&b, "%s compacted=%d\n", n, r.history.compacted)
		for _, k := range r.sortedKeys() {
			o := r.objects[k]
			fmt.Fprintf(&b, "  %s@%d uid=%s api=%s labels=%v fields=%v %s\n", k, o.ResourceVersion, o.UID, o.APIVersion, o.Labels, o.Fields, o.Data)
		}
		for i := range r.history.len() {
			ev := r.history.at(i)
			prev := int64(0)
			if ev.Prev != nil {
				prev = ev.Prev.ResourceVersion
			}
			fmt.Fprintf(&b, "  %s %d %s prev=%d at=%d\n", ev.Type, ev.Revision, ev.Object.Key(), prev, ev.at.UnixNano())
		}
		r.mu.RUnlock()
	}
	fmt.Fprintf(&b, "compacted=%d history=%d\n", s.compacted, s.HistoryBytes())
	return b.String()
}

// writeSome makes n writes of every kind over two resources.
func writeSome(t testing.TB, s *Store, n int) {
	t.Helper()
	for i := range n {
		res := []string{"cm", "apps/deployments"}[i%2]
		ns, name := strconv.Itoa(i%3), "o"+strconv.Itoa(i%7)
		var err error
		switch i % 5 {
		case 0, 1:
			_, err = s.Create(res, ns, name, enc(ns, name, strconv.Itoa(i), map[string]string{"i": strconv.Itoa(i)}))
		case 2, 3:
			_, err = s.Update(res, ns, name, set(ns, name, strconv.Itoa(i)))
		case 4:
			_, err = s.Delete(res, ns, name, set(ns, name, strconv.Itoa(i)))
		}
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyExists) {
			t.Fatal(err)
		}
	}
}

func TestPersistRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"log only", Options{}},
		{"snapshots", Options{SnapshotBytes: 2 << 10}},
		{"short history", Options{SnapshotBytes: 2 << 10, HistoryEvents: 5}},
		{"byte-bounded history", Options{SnapshotBytes: 2 << 10, HistoryBytes: 8 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openDir(t, dir, tc.opts)
			writeSome(t, s, 300)
			s.disk.snapshots.Wait()
			writeSome(t, s, 7)
			want, rev := state(s), s.Revision()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create("cm", "x", "y", enc("x", "y", "v", nil)); !errors.Is(err, ErrClosed) {
				t.Fatalf("write after Close: %v, want ErrClosed", err)
			}
			s2 := openDir(t, dir, tc.opts)
			if got := state(s2); got != want {
				t.Fatalf("state after restart:\n%s\nwant:\n%s", got, want)
			}
			if s2.Revision() < rev || s2.Revision() >= rev+reserveBlock+1 {
				t.Fatalf("revision after restart %d, want in [%d, %d]", s2.Revision(), rev, rev+reserveBlock)
			}
			// The store goes on: writes after the restart, and a third
			// store sees them too.
			writeSome(t, s2, 50)
			want = state(s2)
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			s3 := openDir(t, dir, tc.opts)
			if got := state(s3); got != want {
				t.Fatalf("state after the second restart:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestPersistSnapshotReplacesLog(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir, Options{SnapshotBytes: 4 << 10})
	writeSome(t, s, 500)
	s.disk.snapshots.Wait()
	s.disk.mu.Lock()
	snap, seg, err := s.disk.snap, s.disk.seg, s.disk.snapshotErr
	s.disk.mu.Unlock()
	if err != nil || snap == 0 {
		t.Fatalf("no snapshot (err %v)", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if i, ok := parseIndex(e.Name(), "wal-", ".log"); ok && (i < snap || i > seg) {
			t.Errorf("segment %s left behind (snapshot %d, segment %d)", e.Name(), snap, seg)
		}
		if i, ok := parseIndex(e.Name(), "snap-", ".snap"); ok && i != snap {
			t.Errorf("snapshot %s left behind (newest %d)", e.Name(), snap)
		}
	}
	if !slices.Contains(names, snapshotName(snap)) || !slices.Contains(names, segmentName(seg)) {
		t.Fatalf("files %v, want %s and %s", names, snapshotName(snap), segmentName(seg))
	}
}

func TestPersistWatchAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir, Options{SnapshotBytes: 1 << 10})
	writeSome(t, s, 40)
	from := s.Revision()
	writeSome(t, s, 200)
	s.disk.snapshots.Wait()
	w, err := s.Watch("cm", WatchOptions{Revision: from})
	if err != nil {
		t.Fatal(err)
	}
	before := collectAll(t, w)
	last := s.Revision()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openDir(t, dir, Options{SnapshotBytes: 1 << 10})
	w2, err := s2.Watch("cm", WatchOptions{Revision: from})
	if err != nil {
		t.Fatal(err)
	}
	if got := collectAll(t, w2); describe(got) != describe(before) {
		t.Fatalf("events after %d, after the restart: %s\nbefore it: %s", from, describe(got), describe(before))
	}
	// A watch from the last revision before the restart, or from the
	// first after it (which no write of the first store took), sees the
	// writes after the restart, no more.
	var watchers []*Watcher
	for _, rev := range []int64{last, s2.Revision()} {
		w, err := s2.Watch("cm", WatchOptions{Revision: rev})
		if err != nil {
			t.Fatal(err)
		}
		watchers = append(watchers, w)
	}
	o, err := s2.Create("cm", "n", "after", enc("n", "after", "v", nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.ResourceVersion <= last {
		t.Fatalf("revision %d after a restart at %d", o.ResourceVersion, last)
	}
	for _, w := range watchers {
		if evs := collectAll(t, w); len(evs) != 1 || evs[0].Object != o {
			t.Fatalf("watch from %d: got %s, want the create of %s only", w.progress, describe(evs), o.Name)
		}
	}
}

// collectAll reads the events a watcher has ready.
func collectAll(t *testing.T, w *Watcher) []*Event {
	t.Helper()
	var out []*Event
	for w.Pending() {
		ev, err := w.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func TestPersistCompactionAndAge(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	dir := t.TempDir()
	s := openDir(t, dir, Options{Now: clock})
	write := func(res, name string, create bool) {
		t.Helper()
		var err error
		if create {
			_, err = s.Create(res, "ns", name, enc("ns", name, "0", nil))
		} else {
			_, err = s.Update(res, "ns", name, set("ns", name, "1"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	write("cm", "a", true)
	write("cm", "b", true)
	compacted := s.Revision()
	s.Compact(compacted)
	write("cm", "a", false)
	write("apps/deployments", "d", true)
	resourceCompacted := s.Revision()
	if err := s.CompactResource("apps/deployments", resourceCompacted); err != nil {
		t.Fatal(err)
	}
	advance(3 * time.Minute)
	write("cm", "b", false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDir(t, dir, Options{Now: clock})
	if _, err := s.Watch("cm", WatchOptions{Revision: compacted - 1}); !errors.Is(err, ErrExpired) {
		t.Fatalf("watch from before the compaction: %v, want ErrExpired", err)
	}
	w, err := s.Watch("cm", WatchOptions{Revision: compacted})
	if err != nil {
		t.Fatalf("watch from the compaction: %v", err)
	}
	if got := describe(collectAll(t, w)); got != "[MODIFIED ns/a=1@3 MODIFIED ns/b=1@5]" {
		t.Fatalf("watch from the compaction: %s", got)
	}
	// The compaction of one resource, later than the store's, holds too,
	// for that resource alone.
	if _, err := s.Watch("apps/deployments", WatchOptions{Revision: compacted}); !errors.Is(err, ErrExpired) {
		t.Fatalf("watch of the resource compacted at %d from %d: %v, want ErrExpired", resourceCompacted, compacted, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Past the history's age (5 minutes), the events of the first minute
	// are gone, and with them the watch from the compaction.
	advance(4 * time.Minute)
	s = openDir(t, dir, Options{Now: clock})
	if _, err := s.Watch("cm", WatchOptions{Revision: compacted}); !errors.Is(err, ErrExpired) {
		t.Fatalf("watch from before events older than HistoryAge: %v, want ErrExpired", err)
	}
	w, err = s.Watch("cm", WatchOptions{Revision: compacted + 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(collectAll(t, w)); got != "[MODIFIED ns/b=1@5]" {
		t.Fatalf("watch after the events older than HistoryAge: %s", got)
	}
}

func TestPersistLock(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	if _, err := New(Options{Dir: dir}); !errors.Is(err, ErrInUse) {
		t.Fatalf("second store on the directory: %v, want ErrInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openDir(t, dir, Options{})
}

func TestPersistConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir, Options{SnapshotBytes: 8 << 10})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			res := "r" + strconv.Itoa(g%2)
			for i := range 200 {
				ns, name := "ns", fmt.Sprintf("g%d-%d", g, i%20)
				var err error
				if i < 20 {
					_, err = s.Create(res, ns, name, enc(ns, name, "0", nil))
				} else {
					_, err = s.Update(res, ns, name, set(ns, name, strconv.Itoa(i)))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	s.disk.snapshots.Wait()
	want := state(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := state(openDir(t, dir, Options{SnapshotBytes: 8 << 10})); got != want {
		t.Fatalf("state after restart:\n%s\nwant:\n%s", got, want)
	}
}

// files returns the segment and snapshot files of dir, oldest first.
func files(t *testing.T, dir string) (segs, snaps []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if _, ok := parseIndex(e.Name(), "wal-", ".log"); ok {
			segs = append(segs, p)
		} else if _, ok := parseIndex(e.Name(), "snap-", ".snap"); ok {
			snaps = append(snaps, p)
		}
	}
	return segs, snaps
}

func TestPersistDamage(t *testing.T) {
	edit := func(path string, f func(b []byte) []byte) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(path, f(b), 0o600)
	}
	lastSeg := func(t *testing.T, dir string) string { segs, _ := files(t, dir); return segs[len(segs)-1] }
	for _, tc := range []struct {
		name     string
		snapshot bool
		damage   func(t *testing.T, dir string) error
		// want is the error of New; with none, the store opens and
		// holds every write but the last if lost is set.
		want error
		lost bool
	}{
		{"torn last record", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { return b[:len(b)-5] })
		}, nil, true},
		{"damaged last record", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b })
		}, nil, true},
		{"torn frame after the last record", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { return append(b, 9, 0, 0) })
		}, nil, false},
		{"zeros after the last record", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { return append(b, make([]byte, 4096)...) })
		}, nil, false},
		{"damaged record before others", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { b[fileHeader+frameHeader+3] ^= 0xff; return b })
		}, ErrCorrupt, false},
		{"bad length", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { b[fileHeader+3] = 0x7f; return b })
		}, ErrCorrupt, false},
		{"torn record in a segment before the last", false, func(t *testing.T, dir string) error {
			seg := lastSeg(t, dir)
			i, _ := parseIndex(filepath.Base(seg), "wal-", ".log")
			if err := os.WriteFile(filepath.Join(dir, segmentName(i+1)), header(walMagic), 0o600); err != nil {
				return err
			}
			return edit(seg, func(b []byte) []byte { return b[:len(b)-1] })
		}, ErrCorrupt, false},
		{"not a segment", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { return append([]byte("hello, world"), b...) })
		}, ErrCorrupt, false},
		{"segment of a newer format", false, func(t *testing.T, dir string) error {
			return edit(lastSeg(t, dir), func(b []byte) []byte { b[8] = 2; return b })
		}, ErrNewerFormat, false},
		{"newer format", false, func(t *testing.T, dir string) error {
			return os.WriteFile(filepath.Join(dir, formatFile), []byte("kloop-store format 2\n"), 0o600)
		}, ErrNewerFormat, false},
		{"unknown FORMAT", false, func(t *testing.T, dir string) error {
			return os.WriteFile(filepath.Join(dir, formatFile), []byte("etcd\n"), 0o600)
		}, ErrCorrupt, false},
		{"FORMAT missing", false, func(t *testing.T, dir string) error {
			return os.Remove(filepath.Join(dir, formatFile))
		}, ErrCorrupt, false},
		{"truncated snapshot", true, func(t *testing.T, dir string) error {
			_, snaps := files(t, dir)
			return edit(snaps[len(snaps)-1], func(b []byte) []byte { return b[:len(b)*2/3] })
		}, ErrCorrupt, false},
		{"damaged snapshot", true, func(t *testing.T, dir string) error {
			_, snaps := files(t, dir)
			return edit(snaps[len(snaps)-1], func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b })
		}, ErrCorrupt, false},
		{"snapshot missing", true, func(t *testing.T, dir string) error {
			_, snaps := files(t, dir)
			return os.Remove(snaps[len(snaps)-1])
		}, ErrCorrupt, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{}
			if tc.snapshot {
				opts.SnapshotBytes = 2 << 10
			}
			s := openDir(t, dir, opts)
			writeSome(t, s, 100)
			s.disk.snapshots.Wait()
			if _, snaps := files(t, dir); tc.snapshot != (len(snaps) > 0) {
				t.Fatalf("snapshots %v", snaps)
			}
			before := state(s)
			if _, err := s.Create("last", "ns", "last", enc("ns", "last", "v", nil)); err != nil {
				t.Fatal(err)
			}
			after := state(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(t, dir); err != nil {
				t.Fatal(err)
			}
			s2, err := New(Options{Dir: dir, SnapshotBytes: opts.SnapshotBytes})
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("New: %v, want %v", err, tc.want)
				}
				t.Logf("New: %v", err)
				if _, err := New(Options{Dir: dir}); !errors.Is(err, tc.want) {
					t.Fatalf("New again: %v, want %v (the lock released)", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := after
			if tc.lost {
				want = before
			}
			if got := state(s2); got != want {
				t.Fatalf("state after the repair:\n%s\nwant:\n%s", got, want)
			}
			// The repaired log takes writes, and keeps them.
			if _, err := s2.Create("last", "ns", "next", enc("ns", "next", "v", nil)); err != nil {
				t.Fatal(err)
			}
			want = state(s2)
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			if got := state(openDir(t, dir, Options{})); got != want {
				t.Fatalf("state after the write that followed the repair:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestPersistCrashDuringSnapshot opens the states a crash during a
// snapshot or a segment's creation leaves: each opens to the same state,
// and what the crash left behind is removed.
func TestPersistCrashDuringSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, dir string, snap, seg uint64)
		gone  []string // files the open removes (names, with %d for snap and seg)
	}{
		{"a snapshot cut short", func(t *testing.T, dir string, snap, seg uint64) {
			write(t, filepath.Join(dir, snapshotName(seg+1)+".tmp"), []byte("KLOOPSNP"))
		}, []string{"snap-%016[2]d.snap.tmp"}},
		{"the replaced files still there", func(t *testing.T, dir string, snap, seg uint64) {
			// An older snapshot and a segment before the newest
			// snapshot, as a crash before the removal leaves them.
			write(t, filepath.Join(dir, snapshotName(snap-1)), []byte("not even read"))
			write(t, filepath.Join(dir, segmentName(snap-1)), []byte("not even read"))
		}, []string{"snap-%016[3]d.snap", "wal-%016[3]d.log"}},
		{"a new segment, empty", func(t *testing.T, dir string, snap, seg uint64) {
			write(t, filepath.Join(dir, segmentName(seg+1)), header(walMagic))
		}, nil},
		{"a new segment, its header cut short", func(t *testing.T, dir string, snap, seg uint64) {
			write(t, filepath.Join(dir, segmentName(seg+1)), []byte("KLO"))
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openDir(t, dir, Options{SnapshotBytes: 2 << 10})
			writeSome(t, s, 200)
			s.disk.snapshots.Wait()
			want := state(s)
			s.disk.mu.Lock()
			snap, seg := s.disk.snap, s.disk.seg
			s.disk.mu.Unlock()
			if snap < 2 {
				t.Fatalf("snapshot %d, want at least the second", snap)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tc.crash(t, dir, snap, seg)
			s = openDir(t, dir, Options{SnapshotBytes: 2 << 10})
			if got := state(s); got != want {
				t.Fatalf("state:\n%s\nwant:\n%s", got, want)
			}
			for _, f := range tc.gone {
				name := fmt.Sprintf(f, 0, seg+1, snap-1)
				if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left behind (%v)", name, err)
				}
			}
			// The store goes on writing, and keeps it.
			if _, err := s.Create("after", "ns", "x", enc("ns", "x", "v", nil)); err != nil {
				t.Fatal(err)
			}
			want = state(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := state(openDir(t, dir, Options{})); got != want {
				t.Fatalf("state after a write:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPersistWriteFailure makes the log's file fail under the store (as a
// full disk or an I/O error would): the write fails, every later one too,
// reads go on, and the directory reopens to the state before the failure.
func TestPersistWriteFailure(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir, Options{})
	writeSome(t, s, 50)
	want := state(s)
	s.disk.mu.Lock()
	_ = s.disk.f.Close() // every write(2) and fdatasync of it now fails
	s.disk.mu.Unlock()
	_, err := s.Create("cm", "ns", "lost", enc("ns", "lost", "v", nil))
	if err == nil || !strings.Contains(err.Error(), "the store takes no more writes") {
		t.Fatalf("a write on a failed log: %v", err)
	}
	if _, err := s.Update("cm", "0", "o0", set("0", "o0", "again")); err == nil {
		t.Fatal("a later write succeeded")
	}
	if _, err := s.Get("cm", "ns", "lost"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed write is visible: %v", err)
	}
	if got := state(s); got != want {
		t.Fatalf("state after the failed writes:\n%s\nwant:\n%s", got, want)
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close of a failed store: no error")
	}
	if got := state(openDir(t, dir, Options{})); got != want {
		t.Fatalf("state after reopening:\n%s\nwant:\n%s", got, want)
	}
}
