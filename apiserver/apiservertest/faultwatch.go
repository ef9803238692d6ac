package apiservertest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"kloop.dev/kloop/apiserver"
)

// maxHeldBytes bounds the bytes of the events one watch holds back
// (delayed, held, or waiting for the initial events to end); past it the
// watch ends, as kube-apiserver ends a watcher that does not keep up.
const maxHeldBytes = 64 << 20

// writeTimeout bounds a write to a watch's client, as the server's own
// (slowClientTimeout).
const writeTimeout = 30 * time.Second

// watchWriter is the ResponseWriter of a watch while faults may apply to
// it. The server writes each event's frame with one Write, after telling
// its type and revision (apiserver.WatchEventWriter). Frames that no fault
// holds back are written at once by the server's goroutine; once one is
// held back, a forwarder goroutine of the watch writes them all, in order,
// as the faults let it.
type watchWriter struct {
	f      *Faults
	req    *apiserver.Request
	inner  http.ResponseWriter
	rc     *http.ResponseController
	cancel context.CancelFunc // ends the server's watch
	// duplicate is the DuplicateEvents fault the watch took, if any.
	duplicate *Fault

	wake    chan struct{} // 1-buffered: the faults changed
	stop    chan struct{} // closed by finish
	stopped chan struct{} // closed when the forwarder returns

	mu sync.Mutex // guards the fields below
	// next is what the next Write carries (WatchEvent), when hasNext.
	next    apiserver.WatchEvent
	hasNext bool
	// collecting: the watch took a ReorderInitialEvents fault and its
	// initial events, in initial, are not all there yet.
	collecting bool
	reorder    *Fault
	initial    []frame
	// queue holds the frames held back, oldest first; queued their bytes.
	queue  []frame
	queued int
	// forwarding: the forwarder runs, and alone writes to inner.
	forwarding bool
	// dropped: DropWatches ended the watch; nothing more is written.
	dropped bool
}

// frame is one event's bytes as the server wrote them.
type frame struct {
	b     []byte
	ev    apiserver.WatchEvent
	known bool // ev was told
	at    time.Time
}

func newWatchWriter(f *Faults, w http.ResponseWriter, req *apiserver.Request, cancel context.CancelFunc, reorder, duplicate *Fault) *watchWriter {
	return &watchWriter{
		f: f, req: req, inner: w, rc: http.NewResponseController(w), cancel: cancel,
		duplicate: duplicate, reorder: reorder, collecting: reorder != nil,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
}

// wantsInitialEvents reports whether a watch's query asks for the initial
// state: sendInitialEvents=true, or resourceVersion "" or "0" without
// sendInitialEvents=false.
func wantsInitialEvents(q url.Values) bool {
	if q.Has("sendInitialEvents") {
		v := q.Get("sendInitialEvents")
		return v != "0" && !strings.EqualFold(v, "false")
	}
	rv := q.Get("resourceVersion")
	return rv == "" || rv == "0"
}

func (w *watchWriter) Header() http.Header { return w.inner.Header() }

// Unwrap lets the server find the writers under this one (the encoding a
// request negotiated); flushes and deadlines are this writer's own.
func (w *watchWriter) Unwrap() http.ResponseWriter { return w.inner }

func (w *watchWriter) WriteHeader(code int) { w.inner.WriteHeader(code) }

// WatchEvent is told what the next Write carries.
func (w *watchWriter) WatchEvent(ev apiserver.WatchEvent) {
	w.mu.Lock()
	w.next, w.hasNext = ev, true
	w.mu.Unlock()
}

func isObjectEvent(typ string) bool { return typ == "ADDED" || typ == "MODIFIED" || typ == "DELETED" }

// Write takes one frame from the server.
func (w *watchWriter) Write(p []byte) (int, error) {
	g := w.f.watchGate(w.req)
	w.mu.Lock()
	fr := frame{b: p, ev: w.next, known: w.hasNext, at: time.Now()}
	w.hasNext = false
	if w.dropped {
		w.mu.Unlock()
		return 0, errDropped
	}
	if fr.known && fr.ev.Type == "BOOKMARK" && !fr.ev.InitialEventsEnd && g.dropBookmarks != nil {
		g.dropBookmarks.hits.Add(1)
		w.mu.Unlock()
		return len(p), nil
	}
	var out []frame
	if w.collecting {
		if fr.known && fr.ev.Initial {
			fr.b = bytes.Clone(p)
			w.initial = append(w.initial, fr)
			w.queued += len(p)
			err := w.checkSizeLocked()
			w.mu.Unlock()
			return len(p), err
		}
		out = w.endCollectingLocked()
	}
	out = w.duplicated(append(out, fr))
	if err := w.emitLocked(out, g); err != nil { // unlocks
		return 0, err
	}
	return len(p), nil
}

// duplicated returns frames with every object event twice, when the watch
// took a DuplicateEvents fault.
func (w *watchWriter) duplicated(frames []frame) []frame {
	if w.duplicate == nil {
		return frames
	}
	out := make([]frame, 0, 2*len(frames))
	for _, fr := range frames {
		out = append(out, fr)
		if fr.known && isObjectEvent(fr.ev.Type) {
			w.duplicate.hits.Add(1)
			out = append(out, fr)
		}
	}
	return out
}

// endCollectingLocked ends the collection of the initial events and
// returns them reversed. w.mu is held.
func (w *watchWriter) endCollectingLocked() []frame {
	w.collecting = false
	out := w.initial
	w.initial = nil
	for _, fr := range out {
		w.queued -= len(fr.b)
	}
	slices.Reverse(out)
	return out
}

// checkSizeLocked ends the watch when it holds back too much. w.mu is held.
func (w *watchWriter) checkSizeLocked() error {
	if w.queued <= maxHeldBytes {
		return nil
	}
	w.queue, w.initial, w.queued = nil, nil, 0
	w.cancel()
	return errTooMuchHeld
}

var (
	errTooMuchHeld = errors.New("apiservertest: a watch held back more than 64 MiB of events; ended")
	errDropped     = errors.New("apiservertest: the watch was dropped")
)

// held reports whether the gate holds fr back until it changes.
func (g *gate) held(fr *frame) bool {
	return g.hold != nil || g.stale != nil && fr.known && fr.ev.Type != "ERROR" && fr.ev.Revision > g.stale.rev
}

// emitLocked writes frames at once, when nothing holds them back and the
// forwarder does not run, or queues them for the forwarder. w.mu is held;
// emitLocked unlocks it.
func (w *watchWriter) emitLocked(out []frame, g gate) error {
	direct := !w.forwarding && len(w.queue) == 0 && g.delay <= 0
	for i := range out {
		if g.held(&out[i]) {
			direct = false
		}
	}
	if direct {
		w.mu.Unlock()
		for _, fr := range out {
			if _, err := w.inner.Write(fr.b); err != nil {
				return err
			}
		}
		return nil
	}
	defer w.mu.Unlock()
	for _, fr := range out {
		switch {
		case g.hold != nil:
			g.hold.hits.Add(1)
		case g.delay > 0:
			g.delayF.hits.Add(1)
		}
		fr.b = bytes.Clone(fr.b)
		w.queue = append(w.queue, fr)
		w.queued += len(fr.b)
	}
	if err := w.checkSizeLocked(); err != nil {
		return err
	}
	if !w.forwarding {
		w.forwarding = true
		go w.forward()
	}
	w.poke()
	return nil
}

// FlushError flushes the frames written at once; the forwarder flushes its
// own. A flush after initial events being collected ends them: the server
// flushes only when it has nothing more to write.
func (w *watchWriter) FlushError() error {
	g := w.f.watchGate(w.req)
	w.mu.Lock()
	if w.collecting && len(w.initial) > 0 {
		out := w.duplicated(w.endCollectingLocked())
		if err := w.emitLocked(out, g); err != nil { // unlocks
			return err
		}
		w.mu.Lock()
	}
	forwarding := w.forwarding
	w.mu.Unlock()
	if forwarding {
		return nil
	}
	return w.rc.Flush()
}

// SetWriteDeadline is the server's deadline for its own writes; the
// forwarder sets its own.
func (w *watchWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	forwarding := w.forwarding
	w.mu.Unlock()
	if forwarding {
		return nil
	}
	return w.rc.SetWriteDeadline(t)
}

// poke makes the forwarder look at its queue again.
func (w *watchWriter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// drop ends the watch (DropWatches): what it held back is dropped, and
// nothing more is written.
func (w *watchWriter) drop() {
	w.mu.Lock()
	w.dropped = true
	w.queue, w.initial, w.queued = nil, nil, 0
	w.mu.Unlock()
	w.cancel()
}

// finish stops the forwarder once the server's watch has returned; what it
// still held back is dropped (the client watches again from the last
// resourceVersion it got).
func (w *watchWriter) finish() {
	close(w.stop)
	w.mu.Lock()
	forwarding := w.forwarding
	w.mu.Unlock()
	if forwarding {
		<-w.stopped
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
}

// forward writes the queued frames as the faults let it, until finish.
func (w *watchWriter) forward() {
	defer close(w.stopped)
	// What the server wrote at once before is still buffered: the
	// server's flushes are the forwarder's from now on.
	if err := w.rc.Flush(); err != nil {
		w.cancel()
		return
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		g := w.f.watchGate(w.req)
		now := time.Now()
		wait := time.Duration(-1)
		var batch []frame
		w.mu.Lock()
		if w.dropped {
			w.mu.Unlock()
			return
		}
		for len(w.queue) > 0 {
			fr := &w.queue[0]
			if g.held(fr) {
				break
			}
			if d := fr.at.Add(g.delay).Sub(now); d > 0 {
				wait = d
				break
			}
			batch = append(batch, *fr)
			w.queued -= len(fr.b)
			w.queue[0] = frame{}
			w.queue = w.queue[1:]
		}
		w.mu.Unlock()
		if len(batch) > 0 {
			_ = w.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			for _, fr := range batch {
				if _, err := w.inner.Write(fr.b); err != nil {
					w.cancel()
					return
				}
			}
			if err := w.rc.Flush(); err != nil {
				w.cancel()
				return
			}
			continue
		}
		var tick <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tick = timer.C
		}
		select {
		case <-w.wake:
		case <-tick:
		case <-w.stop:
			return
		}
		timer.Stop()
	}
}
