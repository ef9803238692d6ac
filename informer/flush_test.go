package informer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// flusher is a recorder that is also a Flusher: notifications wait in
// pending until Flush moves them to flushed, as a batching handler's work
// waits for its hand-over.
type flusher struct {
	*recorder
	mu       sync.Mutex // guards the fields below
	pending  int        // notifications since the last Flush
	flushed  int        // notifications handed over by a Flush
	flushes  int
	maxRun   int // the largest pending seen by a Flush, watch runs only
	watching bool
	panicAt  int // Flush number that panics (0: none)
	lost     int // the pending count of the Flush that panicked
}

func newFlusher() *flusher { return &flusher{recorder: newRecorder()} }

func (f *flusher) note() {
	f.mu.Lock()
	f.pending++
	f.mu.Unlock()
}

func (f *flusher) OnAdd(p *corev1.Pod, initial bool) { f.note(); f.recorder.OnAdd(p, initial) }
func (f *flusher) OnUpdate(old, p *corev1.Pod)       { f.note(); f.recorder.OnUpdate(old, p) }
func (f *flusher) OnDelete(d Deleted[*corev1.Pod])   { f.note(); f.recorder.OnDelete(d) }

func (f *flusher) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	if f.watching {
		f.maxRun = max(f.maxRun, f.pending)
	}
	if f.flushes == f.panicAt {
		f.lost, f.pending = f.pending, 0
		panic("flush failed") // the informer logs it and goes on
	}
	f.flushed += f.pending
	f.pending = 0
}

func (f *flusher) lostCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lost
}

func (f *flusher) counts() (pending, flushed, flushes, maxRun int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pending, f.flushed, f.flushes, f.maxRun
}

// TestFlusher: a Handler that is a Flusher gets Flush after its runs of
// notifications — every notification is followed by a Flush, HasSynced
// comes only after the initial list's Flush, a watch run between two
// Flushes holds at most maxRun notifications, and a panicking Flush is
// logged and skipped.
func TestFlusher(t *testing.T) { bothDeliveries(t, testFlusher) }

func testFlusher(t *testing.T, ho HandlerOptions) {
	ctx := timeout(t)
	var initial []*corev1.Pod
	for i := range 100 {
		initial = append(initial, pod(fmt.Sprint("i", i)))
	}
	srv := newFakeServer(initial...)
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	f := newFlusher()
	f.panicAt = 2
	reg, err := inf.AddHandler(f, ho)
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	waitSynced(t, ctx, reg)
	// Synced: every initial add was delivered and flushed.
	if _, flushed, flushes, _ := f.counts(); flushed+f.lostCount() < 100 || flushes == 0 {
		t.Fatalf("synced with %d of 100 initial adds flushed (%d flushes)", flushed, flushes)
	}
	<-srv.watchOpened
	f.mu.Lock()
	f.watching = true
	f.mu.Unlock()
	const events = 3000
	for i := range events {
		srv.churn(i, 50, false)
	}
	srv.create(pod("last"))
	f.waitUntil(t, ctx, "the last event", func(ev []string) bool {
		return len(ev) > 0 && strings.HasPrefix(ev[len(ev)-1], "add last@")
	})
	// The handler is idle: whatever it was given is flushed.
	for {
		if pending, _, _, _ := f.counts(); pending == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("notifications left unflushed at idle")
		case <-time.After(time.Millisecond):
		}
	}
	_, flushed, flushes, maxRun := f.counts()
	lost := f.lostCount()
	if got := len(f.snapshot()); flushed+lost != got || flushes < 3 {
		t.Fatalf("%d notifications, %d flushed + %d lost to the panic, %d flushes", got, flushed, lost, flushes)
	}
	if maxRun > maxRun64() {
		t.Fatalf("a watch run of %d notifications between two Flushes, want at most %d", maxRun, maxRun64())
	}
}

func maxRun64() int { return maxRun }

// stopper is a flusher that stops the informer from its first
// notification.
type stopper struct {
	*flusher
	stop context.CancelFunc
}

func (s *stopper) OnAdd(p *corev1.Pod, initial bool) { s.flusher.OnAdd(p, initial); s.stop() }

// TestFlushOnStop: a run of notifications cut short by the informer's stop
// is flushed all the same — the handler returned from them, and a batching
// handler would otherwise keep their requests, and its run open, for good.
func TestFlushOnStop(t *testing.T) { bothDeliveries(t, testFlushOnStop) }

func testFlushOnStop(t *testing.T, ho HandlerOptions) {
	srv := newFakeServer(pod("a"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	ctx, cancel := context.WithCancel(timeout(t))
	defer cancel()
	s := &stopper{flusher: newFlusher(), stop: cancel}
	if _, err := inf.AddHandler(s, ho); err != nil {
		t.Fatal(err)
	}
	if err := inf.Run(ctx); err != nil { // until the handler stops it
		t.Fatal(err)
	}
	if got := len(s.snapshot()); got != 1 {
		t.Fatalf("the handler got %d notifications before the stop, want 1", got)
	}
	if pending, flushed, _, _ := s.counts(); pending != 0 || flushed != 1 {
		t.Fatalf("after the stop: %d notifications left unflushed, %d flushed", pending, flushed)
	}
}

// blocker is a flusher whose first notification waits for release.
type blocker struct {
	*flusher
	entered, release chan struct{}
	once             sync.Once
}

func (b *blocker) OnAdd(p *corev1.Pod, initial bool) {
	b.flusher.OnAdd(p, initial)
	b.once.Do(func() {
		close(b.entered)
		<-b.release
	})
}

// TestFlushOnRemove: a handler removed in the middle of a run still gets
// the run's Flush once it returns from the notification it was in: what
// it was given before RemoveHandler is handed on, not dropped.
func TestFlushOnRemove(t *testing.T) {
	ctx := timeout(t)
	srv := newFakeServer(pod("a"), pod("b"))
	inf := newPodInformer(t, srv, Options[*corev1.Pod]{})
	b := &blocker{flusher: newFlusher(), entered: make(chan struct{}), release: make(chan struct{})}
	reg, err := inf.AddHandler(b, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	select {
	case <-b.entered:
	case <-ctx.Done():
		t.Fatal("no notification")
	}
	if err := inf.RemoveHandler(reg); err != nil {
		t.Fatal(err)
	}
	close(b.release)
	for {
		if pending, flushed, _, _ := b.counts(); pending == 0 && flushed == 1 {
			break
		}
		select {
		case <-ctx.Done():
			pending, flushed, _, _ := b.counts()
			t.Fatalf("after RemoveHandler: %d notifications unflushed, %d flushed; want the one delivered flushed", pending, flushed)
		case <-time.After(time.Millisecond):
		}
	}
	if got := b.snapshot(); len(got) != 1 {
		t.Fatalf("notified after RemoveHandler: %q", got)
	}
}
