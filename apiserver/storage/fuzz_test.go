package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzHistory applies a random sequence of writes and checks the store's
// invariants: the events replayed from revision 0 rebuild the current state,
// every exact list inside the history equals the replay up to its revision,
// and revisions strictly increase.
func FuzzHistory(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(4))
	f.Add([]byte{0, 0, 16, 32, 1, 17, 33, 49}, uint8(2))
	f.Fuzz(func(t *testing.T, ops []byte, history uint8) {
		s := newStore(t, Options{HistoryEvents: int(history)%16 + 1})
		for i, op := range ops {
			name := strconv.Itoa(int(op % 8))
			ns := strconv.Itoa(int(op/8) % 2)
			var err error
			switch (op / 16) % 3 {
			case 0:
				_, err = s.Create("r", ns, name, enc(ns, name, strconv.Itoa(i), nil))
			case 1:
				_, err = s.Update("r", ns, name, set(ns, name, strconv.Itoa(i)))
			case 2:
				_, err = s.Delete("r", ns, name, set(ns, name, strconv.Itoa(i)))
			}
			if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyExists) {
				t.Fatal(err)
			}
		}
		// Replay the retained history on top of the state at the oldest retained revision.
		r := s.resource("r")
		oldest := r.history.compacted
		state := map[string]string{}
		if oldest != 0 { // the state at revision 0 is empty
			base, err := s.List("r", ListOptions{Revision: oldest, Exact: true})
			if err != nil {
				t.Fatalf("list at oldest %d: %v", oldest, err)
			}
			for _, o := range base.Objects {
				state[o.Key()] = value(o)
			}
		}
		w, err := s.Watch("r", WatchOptions{Revision: oldest})
		if err != nil {
			t.Fatal(err)
		}
		last := oldest
		for last < s.Revision() {
			ev, err := w.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ev.Revision <= last {
				t.Fatalf("revision %d after %d", ev.Revision, last)
			}
			last = ev.Revision
			if ev.Type == Deleted {
				delete(state, ev.Object.Key())
			} else {
				state[ev.Object.Key()] = value(ev.Object)
			}
			exact, err := s.List("r", ListOptions{Revision: last, Exact: true})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, o := range exact.Objects {
				got[o.Key()] = value(o)
			}
			if !maps.Equal(got, state) {
				t.Fatalf("at %d: list %v, replay %v", last, got, state)
			}
		}
		cur, _ := s.List("r", ListOptions{})
		keys := make([]string, 0, len(cur.Objects))
		for _, o := range cur.Objects {
			keys = append(keys, o.Key())
		}
		if !slices.IsSorted(keys) || len(keys) != len(state) {
			t.Fatalf("current keys %v, replay %v", keys, fmt.Sprint(state))
		}
	})
}

// FuzzDataDir opens a data directory holding a fuzzed log segment and,
// optionally, a fuzzed snapshot before it: New must either fail with an
// error or open a store that takes writes and reopens to the same state.
// The seeds are the files of a real store.
func FuzzDataDir(f *testing.F) {
	seed := f.TempDir()
	s, err := New(Options{Dir: seed, SnapshotBytes: 1 << 10})
	if err != nil {
		f.Fatal(err)
	}
	writeSome(f, s, 30)
	s.disk.snapshots.Wait()
	writeSome(f, s, 5)
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	entries, err := os.ReadDir(seed)
	if err != nil {
		f.Fatal(err)
	}
	var segment, snapshot []byte
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(seed, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		if strings.HasPrefix(e.Name(), "wal-") {
			segment = b[fileHeader:]
		} else if strings.HasPrefix(e.Name(), "snap-") {
			snapshot = b[fileHeader:]
		}
	}
	f.Add(segment, snapshot, true)
	f.Add(segment, []byte(nil), false)
	f.Add(segment[:len(segment)/2], snapshot, true)
	f.Fuzz(func(t *testing.T, segment, snapshot []byte, withSnapshot bool) {
		dir := t.TempDir()
		write := func(name string, b []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write(formatFile, []byte("kloop-store format 1\n"))
		seg := uint64(1)
		if withSnapshot {
			seg = 7
			write(snapshotName(seg), append(header(snapMagic), snapshot...))
		}
		write(segmentName(seg), append(header(walMagic), segment...))
		s, err := New(Options{Dir: dir, HistoryEvents: 8, noSync: true})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("New: %v, want an error wrapping ErrCorrupt", err)
			}
			return
		}
		if _, err := s.Create("fuzz", "ns", "new", enc("ns", "new", "v", nil)); err != nil {
			t.Fatal(err)
		}
		want := state(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = New(Options{Dir: dir, HistoryEvents: 8, noSync: true})
		if err != nil {
			t.Fatalf("reopening: %v", err)
		}
		defer s.Close()
		if got := state(s); got != want {
			t.Fatalf("state after reopening:\n%s\nwant:\n%s", got, want)
		}
	})
}
