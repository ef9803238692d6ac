package storage

import (
	"errors"
	"strings"
	"testing"
)

// CompactResource compacts one resource's history, not the others', and
// refuses a revision beyond the current one.
func TestCompactResource(t *testing.T) {
	s := newStore(t, Options{})
	for _, res := range []string{"pods", "configmaps"} {
		for _, name := range []string{"a", "b"} {
			if _, err := s.Create(res, "", name, enc("", name, "", nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// pods at 1, 2; configmaps at 3, 4.
	if err := s.CompactResource("pods", 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		res     string
		rev     int64
		expired bool
	}{
		{"pods", 1, true},
		{"pods", 2, false},
		{"configmaps", 1, false},
		{"configmaps", 3, false},
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
	if err := s.CompactResource("pods", s.Revision()+1); !errors.Is(err, ErrTooLargeResourceVersion) {
		t.Errorf("compaction beyond the current revision: %v", err)
	}
	if got := expectedHistoryBytes(s); got != s.HistoryBytes() {
		t.Errorf("HistoryBytes %d after a compaction, want %d", s.HistoryBytes(), got)
	}
}

// A watch with initial events at an older revision starts with the state at
// that revision, then delivers every event after it.
func TestWatchInitialEventsAtRevision(t *testing.T) {
	s := newStore(t, Options{})
	mustCreate := func(name, v string) {
		t.Helper()
		if _, err := s.Create("pods", "ns", name, enc("ns", name, v, nil)); err != nil {
			t.Fatal(err)
		}
	}
	// Revisions 1 to 5: a and b created, a updated, b deleted, c created.
	mustCreate("a", "1")
	mustCreate("b", "1")
	if _, err := s.Update("pods", "ns", "a", set("ns", "a", "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete("pods", "ns", "b", set("ns", "b", "1")); err != nil {
		t.Fatal(err)
	}
	mustCreate("c", "1")
	for _, tc := range []struct {
		rev  int64
		want string
	}{
		{2, "[ADDED ns/a=1@1 ADDED ns/b=1@2 BOOKMARK@2 end=true MODIFIED ns/a=2@3 DELETED ns/b=1@4 ADDED ns/c=1@5]"},
		{3, "[ADDED ns/a=2@3 ADDED ns/b=1@2 BOOKMARK@3 end=true DELETED ns/b=1@4 ADDED ns/c=1@5]"},
		{5, "[ADDED ns/a=2@3 ADDED ns/c=1@5 BOOKMARK@5 end=true]"},
	} {
		w, err := s.Watch("pods", WatchOptions{SendInitialEvents: true, InitialEventsEnd: true, Revision: tc.rev})
		if err != nil {
			t.Fatalf("watch at %d: %v", tc.rev, err)
		}
		if got := describe(collect(t, w, strings.Count(tc.want, "@"))); got != tc.want {
			t.Errorf("watch with initial events at %d:\n got %s\nwant %s", tc.rev, got, tc.want)
		}
	}
	if _, err := s.Watch("pods", WatchOptions{SendInitialEvents: true, Revision: 6}); !errors.Is(err, ErrTooLargeResourceVersion) {
		t.Errorf("initial events at a future revision: %v", err)
	}
	s.Compact(3)
	if _, err := s.Watch("pods", WatchOptions{SendInitialEvents: true, Revision: 2}); !errors.Is(err, ErrExpired) {
		t.Errorf("initial events at a compacted revision: %v", err)
	}
}
