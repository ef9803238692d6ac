package reflector

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultWatchSilenceMargin is the default of Options.WatchSilenceMargin
// (capped at Options.MinWatchTimeout).
const DefaultWatchSilenceMargin = 30 * time.Second

// ErrSilentWatch is wrapped by the error the reflector reports (to
// Metrics.ObserveWatch or Metrics.ObserveList, and in its logs) when it
// stopped a watch that had sent nothing — no event, no bookmark — for
// longer than the timeoutSeconds it asked for plus
// Options.WatchSilenceMargin: the connection is hung (a stalled proxy, a
// dead peer) or the server does not honour timeoutSeconds.
var ErrSilentWatch = errors.New("reflector: watch silent past its timeoutSeconds and the silence margin")

// watchdogTicks is how many times per silence limit a watchdog looks at
// its watch: a silent watch is given up at most limit/watchdogTicks after
// it has been silent for limit.
const watchdogTicks = 16

// watchdog cancels the context of one watch once the reflector has been
// waiting on it — opening it or in Next — for limit without anything
// arriving. Time the reflector spends elsewhere (in the store) does not
// count: only the stream's own silence does.
//
// The reflector's Run goroutine calls waiting and busy around every call
// that waits on the stream (two atomic stores, no clock reading: the
// watch's hot path); the watchdog's goroutine looks at that state every
// tick and gives the watch up when it has seen the same wait for limit.
// The watch is waited on from the start (it is being opened). A nil
// *watchdog (the check is off) does nothing.
type watchdog struct {
	clock  Clock
	limit  time.Duration
	tick   time.Duration      // ⌈limit/watchdogTicks⌉
	base   time.Time          // when the watch began to be opened
	cancel context.CancelFunc // cancels the watch's context

	// state is 2n+1 while the reflector is in its n-th wait on the stream
	// (n from 0: opening it), 2n while it handles what that wait brought.
	// Written by the Run goroutine only, read by the watchdog's.
	state atomic.Uint64
	// n counts the waits; the Run goroutine's.
	n uint64
	// fired: the watchdog cancelled the watch. Set before the cancel, so
	// that whoever sees the watch end by its context can tell why.
	fired atomic.Bool

	done   chan struct{} // closed by stop: the watch is over
	exited chan struct{} // closed when the goroutine has returned
}

// startWatchdog starts the watchdog of a watch, which cancel cancels,
// that the reflector is about to open.
func startWatchdog(clock Clock, limit time.Duration, cancel context.CancelFunc) *watchdog {
	d := &watchdog{clock: clock, limit: limit, tick: (limit + watchdogTicks - 1) / watchdogTicks,
		base: clock.Now(), cancel: cancel, done: make(chan struct{}), exited: make(chan struct{})}
	d.state.Store(1)
	go d.run()
	return d
}

func (d *watchdog) run() {
	defer close(d.exited)
	// The wait last seen and since when (at the latest) it has lasted:
	// the tick that first saw it, or base for the first wait.
	last, since := uint64(1), d.base
	for {
		select {
		case <-d.done:
			return
		case <-d.clock.After(d.tick):
		}
		now := d.clock.Now()
		s := d.state.Load()
		if s != last || s&1 == 0 {
			// Something arrived, or the reflector is busy with it.
			last, since = s, now
			continue
		}
		if now.Sub(since) >= d.limit {
			d.fired.Store(true)
			d.cancel()
			return
		}
	}
}

// waiting records that the reflector starts waiting on the stream again.
func (d *watchdog) waiting() {
	if d == nil {
		return
	}
	d.n++
	d.state.Store(2*d.n + 1)
}

// busy records that the stream answered (or failed): the reflector no
// longer waits on it.
func (d *watchdog) busy() {
	if d == nil {
		return
	}
	d.state.Store(2 * d.n)
}

// silent reports whether the watchdog stopped the watch.
func (d *watchdog) silent() bool { return d != nil && d.fired.Load() }

// stop ends the watchdog and waits for its goroutine. It may be called
// more than once.
func (d *watchdog) stop() {
	if d == nil {
		return
	}
	select {
	case <-d.done:
	default:
		close(d.done)
	}
	<-d.exited
}

// liveWatch is a watch the reflector opened: the Watch, the context it
// runs under, and its watchdog.
type liveWatch[T Object] struct {
	w       Watch[T]
	cancel  context.CancelFunc // cancels the watch's own context
	dog     *watchdog          // nil: no silence check
	timeout int64              // the timeoutSeconds asked for
	limit   time.Duration      // the silence allowed: timeout + margin
}

// openWatch opens a watch with opts (TimeoutSeconds set) under a context of
// its own, which the watch's watchdog cancels if the stream stays silent
// past the timeout and Options.WatchSilenceMargin — opening included: a
// server that does not answer a watch by then is hung too. On error the
// returned liveWatch is stopped and tells (silent) whether the watchdog
// ended the attempt.
func (r *Reflector[T]) openWatch(ctx context.Context, opts metav1.ListOptions) (*liveWatch[T], error) {
	wctx, cancel := context.WithCancel(ctx)
	lw := &liveWatch[T]{cancel: cancel, timeout: *opts.TimeoutSeconds}
	if m := r.opts.WatchSilenceMargin; m >= 0 {
		lw.limit = time.Duration(lw.timeout)*time.Second + m
		lw.dog = startWatchdog(r.opts.Clock, lw.limit, cancel)
	}
	// The watchdog starts waiting: the watch is being opened.
	w, err := r.lw.Watch(wctx, opts)
	lw.dog.busy()
	if err == nil && w == nil {
		err = errNilWatch
	}
	if err != nil {
		lw.stop()
		return lw, err
	}
	lw.w = w
	return lw, nil
}

// next reads the next event, under the watchdog.
func (l *liveWatch[T]) next() (Event[T], error) {
	l.dog.waiting()
	ev, err := l.w.Next()
	l.dog.busy()
	return ev, err
}

// silent reports whether the watchdog stopped the watch.
func (l *liveWatch[T]) silent() bool { return l.dog.silent() }

// stop stops the watchdog, then the watch, and releases its context. It
// may be called more than once.
func (l *liveWatch[T]) stop() {
	l.dog.stop()
	if l.w != nil {
		l.w.Stop()
	}
	l.cancel()
}
