package informer

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"kloop.dev/kloop/internal/chunkq"
)

// noteType is the kind of a notification.
type noteType uint8

const (
	noteAdd noteType = iota + 1
	noteUpdate
	noteDelete
)

// notification is one call to make on a handler, kept by value in the
// listener's buffer.
type notification struct {
	typ noteType
	// initial: an add of the initial list (noteAdd only).
	initial bool
	// unknown: FinalStateUnknown (noteDelete only).
	unknown bool
	// key is set for deletions only.
	key string
	old Object // noteUpdate only
	obj Object // may be nil for a deletion whose last state is unknown
}

// listener is one registered handler: an unbounded ordered buffer of
// notifications drained by its own goroutine.
type listener struct {
	inf     *shared
	deliver func(n notification)
	flush   func()        // the Handler's Flusher; nil if it is none
	resync  time.Duration // ≤ 0: no resync
	logger  *slog.Logger
	// inline: notifications are delivered at once by notify, on the
	// informer's goroutine under the informer's mutex (HandlerOptions.Inline);
	// the buffer stays empty and the goroutine only runs resyncs.
	inline bool

	wake chan struct{} // cap 1: something was queued, or the listener was removed

	// mu guards buf, enq, waiting, removed and started.
	mu sync.Mutex
	// buf holds the notifications not delivered yet, in order. It grows a
	// chunk at a time and gives drained chunks back, so a burst never
	// copies what it holds and its memory goes back as it drains.
	buf chunkq.Queue[notification]
	// enq counts the notifications ever queued.
	enq uint64
	// waiting: the goroutine waits for wake; pushes signal only then, so
	// a busy handler costs the informer no channel operation.
	waiting bool
	// removed: RemoveHandler was called; the goroutine exits and nothing more
	// is queued.
	removed bool
	// started: the goroutine has been started.
	started bool

	// delivered counts the notifications whose handler call has returned;
	// written by the listener goroutine only.
	delivered atomic.Uint64
	// syncAt is the value of enq at the end of the initial list, -1 until
	// it is known. Set once.
	syncAt atomic.Int64
	// synced latches delivered >= syncAt.
	synced atomic.Bool
}

func newListener(inf *shared, deliver func(notification), flush func(), resync time.Duration, inline bool) *listener {
	l := &listener{inf: inf, deliver: deliver, flush: flush, resync: resync, logger: inf.logger, wake: make(chan struct{}, 1), inline: inline}
	l.syncAt.Store(-1)
	return l
}

// pushLocked queues notes; l.mu is held.
func (l *listener) pushLocked(notes []notification) {
	if l.removed || len(notes) == 0 {
		return
	}
	for i := range notes {
		l.buf.Push(notes[i])
	}
	l.enq += uint64(len(notes))
}

// notify hands notes to the handler: at once for an inline listener, else
// through its buffer. The informer's mutex is held, so that every handler
// sees the notifications in the order of the cache's changes.
func (l *listener) notify(notes []notification) {
	if !l.inline {
		l.push(notes)
		return
	}
	if len(notes) == 0 {
		return
	}
	l.mu.Lock()
	removed := l.removed
	if !removed {
		l.enq += uint64(len(notes))
	}
	l.mu.Unlock()
	if removed {
		return
	}
	for _, n := range notes {
		l.call(n)
	}
	l.callFlush()
	l.delivered.Add(uint64(len(notes)))
	if !l.synced.Load() {
		l.checkSynced()
	}
}

// push queues notes and wakes the goroutine if it waits.
func (l *listener) push(notes []notification) {
	l.mu.Lock()
	l.pushLocked(notes)
	wake := l.waiting && len(notes) > 0
	l.mu.Unlock()
	if wake {
		l.signal()
	}
}

func (l *listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len()
}

// markSyncAt records that the initial list ends after the at-th
// notification.
func (l *listener) markSyncAt(at uint64) {
	if !l.syncAt.CompareAndSwap(-1, int64(at)) {
		return
	}
	l.checkSynced()
}

func (l *listener) checkSynced() {
	if at := l.syncAt.Load(); at >= 0 && l.delivered.Load() >= uint64(at) {
		l.synced.Store(true)
	}
}

// remove stops the listener: pending notifications are dropped.
func (l *listener) remove() {
	l.mu.Lock()
	l.removed = true
	l.buf.Clear()
	l.mu.Unlock()
	l.signal()
}

// jitter returns a resync wait in [0.9, 1.1]×d.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

// run delivers notifications until ctx is done or the listener is removed.
func (l *listener) run(ctx context.Context) {
	var resync <-chan time.Time
	var timer *time.Timer
	if l.resync > 0 {
		timer = time.NewTimer(jitter(l.resync))
		defer timer.Stop()
		resync = timer.C
	}
	doResync := func() {
		l.inf.resyncListener(l)
		timer.Reset(jitter(l.resync))
	}
	// run counts the notifications delivered since the last flush; they
	// count as delivered (HasSynced) once flushed. Without a Flusher every
	// notification is a run of its own.
	run, most := 0, 1
	if l.flush != nil {
		most = maxRun
	}
	finish := func() {
		l.callFlush()
		l.delivered.Add(uint64(run))
		run = 0
		if !l.synced.Load() {
			l.checkSynced()
		}
	}
	// A run cut short by ctx is flushed too: the handler returned from its
	// notifications, and what they produced must not stay with it (a
	// batching handler's requests, and its run left open for good).
	defer func() {
		if run > 0 {
			finish()
		}
	}()
	for {
		l.mu.Lock()
		if run > 0 && l.buf.Len() == 0 {
			l.mu.Unlock()
			finish()
			l.mu.Lock()
		}
		for l.buf.Len() == 0 && !l.removed {
			l.waiting = true
			l.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-l.wake:
			case <-resync:
				doResync()
			}
			l.mu.Lock()
			l.waiting = false
		}
		if l.removed {
			l.mu.Unlock()
			return
		}
		n, _ := l.buf.Pop()
		l.mu.Unlock()

		l.call(n)
		if run++; run >= most {
			finish()
		}
		select {
		case <-ctx.Done():
			return
		case <-resync:
			doResync()
		default:
		}
	}
}

// callFlush runs the handler's Flush, if it has one, as call runs the
// handler.
func (l *listener) callFlush() {
	if l.flush == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			l.logger.Error("informer: handler's Flush panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	l.flush()
}

// call runs the handler; a panicking handler is logged and skipped, so that
// one bad object does not stop the handler's later notifications.
func (l *listener) call(n notification) {
	defer func() {
		if r := recover(); r != nil {
			l.logger.Error("informer: handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	l.deliver(n)
}
