package apiservertest

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"kloop.dev/kloop/apiserver"
)

// streamRecorder is a watch's client end: the frames flushed to it.
type streamRecorder struct {
	header http.Header

	mu      sync.Mutex // guards the fields below
	written []string   // frames written, not yet flushed
	flushed []string
}

func (s *streamRecorder) Header() http.Header { return s.header }
func (s *streamRecorder) WriteHeader(int)     {}
func (s *streamRecorder) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = append(s.written, string(b))
	return len(b), nil
}
func (s *streamRecorder) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushed = append(s.flushed, s.written...)
	s.written = nil
}

// got returns what the client has received, one frame a word.
func (s *streamRecorder) got() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.flushed, " ")
}

// watchHarness drives one watchWriter as the server's watch loop does.
type watchHarness struct {
	t      *testing.T
	f      *Faults
	c      *ClientFaults
	client *streamRecorder
	w      *watchWriter
	ended  bool // the watch was ended (cancel)
}

func newWatchHarness(t *testing.T, reorder, duplicate bool) *watchHarness {
	f := &Faults{watches: map[*watchWriter]struct{}{}}
	h := &watchHarness{t: t, f: f, c: f.For(AnyClient), client: &streamRecorder{header: http.Header{}}}
	var ro, dup *Fault
	if reorder {
		ro = h.c.ReorderInitialEvents(1)
	}
	if duplicate {
		dup = h.c.DuplicateEvents(1)
	}
	h.w = newWatchWriter(f, h.client, &apiserver.Request{}, func() { h.ended = true }, ro, dup)
	f.watches[h.w] = struct{}{}
	return h
}

// send writes one event as the server does: WatchEvent, Write, and a
// flush when it has nothing more (flush).
func (h *watchHarness) send(typ string, rev int64, initial, flush bool, name string) {
	h.t.Helper()
	h.w.WatchEvent(apiserver.WatchEvent{Type: typ, Revision: rev, Initial: initial, InitialEventsEnd: typ == "BOOKMARK" && name == "end"})
	if _, err := h.w.Write([]byte(name)); err != nil {
		h.t.Fatalf("write %s: %v", name, err)
	}
	if flush {
		if err := h.w.FlushError(); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *watchHarness) want(want string) {
	h.t.Helper()
	synctest.Wait()
	if got := h.client.got(); got != want {
		h.t.Errorf("the client has %q, want %q", got, want)
	}
}

// Delays, holds, stale views and their releases, to the tick of a fake
// clock.
func TestWatchWriterTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newWatchHarness(t, false, false)
		h.send("ADDED", 1, false, true, "a1")
		h.want("a1")

		delay := h.c.DelayWatches(time.Second)
		h.send("MODIFIED", 2, false, true, "a2")
		time.Sleep(500 * time.Millisecond)
		h.send("MODIFIED", 3, false, true, "a3")
		time.Sleep(499 * time.Millisecond)
		h.want("a1")
		time.Sleep(time.Millisecond)
		h.want("a1 a2")
		time.Sleep(500 * time.Millisecond)
		h.want("a1 a2 a3")
		if delay.Hits() != 2 {
			t.Errorf("delayed %d events", delay.Hits())
		}
		delay.Release()

		hold := h.c.HoldWatches().ReleaseAfter(time.Hour)
		h.send("MODIFIED", 4, false, true, "a4")
		h.send("BOOKMARK", 4, false, true, "b4")
		time.Sleep(59 * time.Minute)
		h.want("a1 a2 a3")
		time.Sleep(time.Minute)
		h.want("a1 a2 a3 a4 b4")
		if hold.Hits() != 2 {
			t.Errorf("held %d events", hold.Hits())
		}
		select {
		case <-hold.Done():
		default:
			t.Error("the hold did not end after its time")
		}

		// A stale view at 5: events up to 5 pass, later ones wait for
		// the release; ERROR events pass.
		stale := h.f.add(&Fault{kind: kindStale, client: AnyClient, rev: 5, left: -1, desc: "StaleReads(5)"})
		h.send("MODIFIED", 5, false, true, "a5")
		h.want("a1 a2 a3 a4 b4 a5")
		h.send("MODIFIED", 6, false, true, "a6")
		h.send("ERROR", 0, false, true, "e")
		time.Sleep(time.Hour)
		h.want("a1 a2 a3 a4 b4 a5")
		stale.Release()
		h.want("a1 a2 a3 a4 b4 a5 a6 e")

		// Periodic bookmarks dropped, not the initial-events-end one.
		drop := h.c.DropBookmarks()
		h.send("BOOKMARK", 7, false, true, "b7")
		h.send("BOOKMARK", 7, false, true, "end")
		h.want("a1 a2 a3 a4 b4 a5 a6 e end")
		if drop.Hits() != 1 {
			t.Errorf("dropped %d bookmarks", drop.Hits())
		}
		h.w.finish()
		if h.ended {
			t.Error("the watch was ended")
		}
	})
}

// The initial events of a watch come reversed, ended by the first other
// frame or by the server's flush; duplicated events come twice.
func TestWatchWriterReorderDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newWatchHarness(t, true, false)
		h.send("ADDED", 3, true, false, "a")
		h.send("ADDED", 1, true, false, "b")
		h.send("ADDED", 2, true, false, "c")
		h.send("BOOKMARK", 3, false, true, "end")
		h.send("MODIFIED", 4, false, true, "a4")
		h.want("c b a end a4")
		h.w.finish()

		// A watch without bookmarks: the flush after the initial events
		// ends them.
		h = newWatchHarness(t, true, true)
		h.send("ADDED", 1, true, false, "a")
		h.send("ADDED", 2, true, true, "b")
		h.want("b b a a")
		h.send("DELETED", 3, false, false, "d")
		h.send("BOOKMARK", 3, false, true, "bm")
		h.want("b b a a d d bm")
		h.w.finish()
	})
}

// A watch that holds back too much is ended, as a slow watcher; a dropped
// one writes nothing more.
func TestWatchWriterBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newWatchHarness(t, false, false)
		hold := h.c.HoldWatches()
		big := strings.Repeat("x", 1<<20)
		var err error
		for i := 0; i < 70 && err == nil; i++ {
			h.w.WatchEvent(apiserver.WatchEvent{Type: "MODIFIED", Revision: int64(i)})
			_, err = h.w.Write([]byte(big))
		}
		if err != errTooMuchHeld || !h.ended {
			t.Errorf("after 70 MiB held: %v, ended %v", err, h.ended)
		}
		hold.Release()
		h.w.finish()

		h = newWatchHarness(t, false, false)
		hold = h.c.HoldWatches()
		h.send("ADDED", 1, false, true, "a")
		h.w.drop()
		hold.Release()
		h.want("")
		if _, err := h.w.Write([]byte("late")); err != errDropped || !h.ended {
			t.Errorf("a write after the drop: %v", err)
		}
		h.w.finish()
	})
}
