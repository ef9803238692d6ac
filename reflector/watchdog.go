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

// watchdog cancels the context of one watch when the reflector has been
// waiting on it — opening it or in Next — for limit without anything
// arriving. Time the reflector spends elsewhere (in the store) does not
// count: only the stream's own silence does.
//
// The reflector's Run goroutine calls waiting and busy around every call
// that waits on the stream; the watchdog's own goroutine reads them. A nil
// *watchdog (the check is off) does nothing.
type watchdog struct {
	clock  Clock
	limit  time.Duration
	base   time.Time          // origin of since
	cancel context.CancelFunc // cancels the watch's context

	// since is 1 + the time (after base, in ns) at which the reflector
	// started waiting on the stream, 0 while it is not waiting.
	since atomic.Int64
	// fired: the watchdog cancelled the watch. Set before the cancel, so
	// that whoever sees the watch end by its context can tell why.
	fired atomic.Bool

	done   chan struct{} // closed by stop: the watch is over
	exited chan struct{} // closed when the goroutine has returned
}

// startWatchdog starts the watchdog of a watch whose context cancel
// cancels.
func startWatchdog(clock Clock, limit time.Duration, cancel context.CancelFunc) *watchdog {
	d := &watchdog{clock: clock, limit: limit, base: clock.Now(), cancel: cancel,
		done: make(chan struct{}), exited: make(chan struct{})}
	go d.run()
	return d
}

func (d *watchdog) run() {
	defer close(d.exited)
	wait := d.limit
	for {
		select {
		case <-d.done:
			return
		case <-d.clock.After(wait):
		}
		s := d.since.Load()
		if s == 0 {
			// The reflector is busy with what the stream sent; the
			// silence starts again when it waits once more.
			wait = d.limit
			continue
		}
		silent := d.clock.Now().Sub(d.base) - time.Duration(s-1)
		if silent >= d.limit {
			d.fired.Store(true)
			d.cancel()
			return
		}
		wait = d.limit - silent
	}
}

// waiting records that the reflector starts waiting on the stream.
func (d *watchdog) waiting() {
	if d == nil {
		return
	}
	d.since.Store(int64(max(d.clock.Now().Sub(d.base), 0)) + 1)
}

// busy records that the stream answered (or failed): the reflector no
// longer waits on it.
func (d *watchdog) busy() {
	if d == nil {
		return
	}
	d.since.Store(0)
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
	lw.dog.waiting()
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
