package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// WatchOptions select what a [Watcher] delivers.
type WatchOptions struct {
	// Namespace restricts the watch to one namespace; empty watches all.
	Namespace string
	// Revision: deliver every event after this revision. It must be inside
	// the history (else ErrExpired) and not beyond the current revision
	// (else ErrTooLargeResourceVersion). With SendInitialEvents, a positive
	// Revision is the revision of the initial state (zero: the current
	// one), under the same conditions.
	Revision int64
	// SendInitialEvents starts the watch with a synthetic Added event for
	// every object of the current state (or of the state at Revision), then
	// delivers the events after it.
	SendInitialEvents bool
	// InitialEventsEnd, with SendInitialEvents, emits a Bookmark with
	// InitialEventsEnd set after the initial events.
	InitialEventsEnd bool
	// Predicate, when set, selects objects. An update that makes an object
	// match is delivered as Added, one that makes it stop matching as
	// Deleted, as kube-apiserver does.
	Predicate func(*Object) bool
	// BookmarkInterval, when positive, makes Next return a Bookmark carrying
	// the watcher's progress revision after that long without an event.
	BookmarkInterval time.Duration
}

// Watcher is a cursor into a resource's history. It holds no goroutine and
// needs no stopping: drop it when done. It is not safe for concurrent use.
type Watcher struct {
	s      *Store
	r      *resource
	opts   WatchOptions
	prefix string
	// initial holds the synthetic Added objects not yet delivered.
	initial []*Object
	// initialEnd is the revision of the initial state, while its bookmark is pending.
	initialEnd int64
	// seq is the sequence number of the next history event to read.
	seq int64
	// progress is a revision such that every event of the watched resource
	// up to it has been delivered or filtered out.
	progress int64
	// batch holds events read from the history, not yet delivered.
	batch []*Event
	timer *time.Timer
}

// Watch starts a watch on a resource. The returned Watcher delivers events
// with [Watcher.Next].
func (s *Store) Watch(res string, opts WatchOptions) (*Watcher, error) {
	r := s.resource(res)
	w := &Watcher{s: s, r: r, opts: opts}
	if opts.Namespace != "" {
		w.prefix = opts.Namespace + "/"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evictOlder(s, s.opts.Now().Add(-s.opts.HistoryAge))
	current := s.rev.Load()
	w.progress = current
	w.seq = r.history.next()
	if opts.SendInitialEvents {
		keys, objects := r.sortedKeys(), r.objects
		if opts.Revision > 0 && opts.Revision < current {
			if opts.Revision < r.history.compacted {
				return nil, &ExpiredError{Requested: opts.Revision, Oldest: r.history.compacted}
			}
			keys, objects, _ = r.stateAt(opts.Revision) // inside the history: cannot fail
			current = opts.Revision
			w.seq, w.progress = r.seqAfter(current), current
		} else if opts.Revision > current {
			return nil, &TooLargeError{Requested: opts.Revision, Current: current}
		}
		for _, k := range keys[searchPrefix(keys, w.prefix):] {
			if !strings.HasPrefix(k, w.prefix) {
				break
			}
			if o := objects[k]; opts.Predicate == nil || opts.Predicate(o) {
				w.initial = append(w.initial, o)
			}
		}
		if opts.InitialEventsEnd {
			w.initialEnd = current
		}
		return w, nil
	}
	if opts.Revision > current {
		return nil, &TooLargeError{Requested: opts.Revision, Current: current}
	}
	if opts.Revision < r.history.compacted {
		return nil, &ExpiredError{Requested: opts.Revision, Oldest: r.history.compacted}
	}
	w.seq = r.seqAfter(opts.Revision)
	w.progress = opts.Revision
	return w, nil
}

// seqAfter returns the sequence number of the first retained event after
// revision rev (events are in revision order); r.mu is held.
func (r *resource) seqAfter(rev int64) int64 {
	lo, hi := 0, r.history.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.history.at(m).Revision <= rev {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return r.history.first + int64(lo)
}

// Next returns the next event, blocking until there is one, the bookmark
// interval passes, or ctx is done. It returns an error wrapping
// ErrWatcherTooSlow when the watcher fell out of the history, and ctx's error
// when ctx is done.
func (w *Watcher) Next(ctx context.Context) (*Event, error) {
	for {
		if len(w.initial) > 0 {
			o := w.initial[0]
			w.initial[0] = nil
			w.initial = w.initial[1:]
			return &Event{Type: Added, Revision: o.ResourceVersion, Object: o, Initial: true}, nil
		}
		if w.initialEnd != 0 {
			rev := w.initialEnd
			w.initialEnd = 0
			return &Event{Type: Bookmark, Revision: rev, InitialEventsEnd: true}, nil
		}
		if len(w.batch) > 0 {
			ev := w.batch[0]
			w.batch[0] = nil
			w.batch = w.batch[1:]
			return ev, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		notify, err := w.fill()
		if err != nil {
			return nil, err
		}
		if notify == nil {
			continue // got events
		}
		var tick <-chan time.Time
		if w.opts.BookmarkInterval > 0 {
			if w.timer == nil {
				w.timer = time.NewTimer(w.opts.BookmarkInterval)
			} else {
				w.timer.Reset(w.opts.BookmarkInterval)
			}
			tick = w.timer.C
		}
		select {
		case <-ctx.Done():
			w.stopTimer()
			return nil, ctx.Err()
		case <-notify:
			w.stopTimer()
		case <-tick:
			w.mu(func() {
				if w.seq == w.r.history.next() {
					w.progress = w.s.rev.Load()
				}
			})
			return &Event{Type: Bookmark, Revision: w.progress}, nil
		}
	}
}

func (w *Watcher) stopTimer() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *Watcher) mu(f func()) {
	w.r.mu.RLock()
	defer w.r.mu.RUnlock()
	f()
}

// maxBatch bounds the events copied from the history per lock acquisition.
const maxBatch = 256

// fill reads the next events from the history into w.batch. When there are
// none, it returns a channel closed by the next commit.
func (w *Watcher) fill() (<-chan struct{}, error) {
	r := w.r
	r.mu.RLock()
	if w.seq < r.history.first {
		first := r.history.first
		r.mu.RUnlock()
		w.s.opts.Logger.Debug("storage: disconnecting a watcher that fell out of the history", "lost", first-w.seq)
		return nil, fmt.Errorf("%w (needed event #%d, oldest retained #%d)", ErrWatcherTooSlow, w.seq, first)
	}
	end := r.history.next()
	if w.seq == end {
		w.progress = w.s.rev.Load()
		r.mu.RUnlock()
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.history.next() != w.seq { // a commit slipped in
			return nil, nil
		}
		if r.notify == nil {
			r.notify = make(chan struct{})
		}
		return r.notify, nil
	}
	w.batch = w.batch[:0]
	for ; w.seq < end && len(w.batch) < maxBatch; w.seq++ {
		ev := r.history.at(int(w.seq - r.history.first))
		w.progress = ev.Revision
		if ev := w.filter(ev); ev != nil {
			w.batch = append(w.batch, ev)
		}
	}
	r.mu.RUnlock()
	return nil, nil
}

// filter applies the namespace and the predicate to a history event, turning
// it into Added or Deleted when the object starts or stops matching.
func (w *Watcher) filter(ev *Event) *Event {
	if w.prefix != "" && ev.Object.Namespace != w.opts.Namespace {
		return nil
	}
	p := w.opts.Predicate
	if p == nil {
		return ev
	}
	switch ev.Type {
	case Added:
		if p(ev.Object) {
			return ev
		}
	case Deleted:
		if p(ev.Prev) {
			return ev
		}
	case Modified:
		now, before := p(ev.Object), p(ev.Prev)
		switch {
		case now && before:
			return ev
		case now:
			return &Event{Type: Added, Revision: ev.Revision, Object: ev.Object}
		case before:
			return &Event{Type: Deleted, Revision: ev.Revision, Object: ev.Object, Prev: ev.Prev, LeftSelection: true}
		}
	}
	return nil
}

func searchPrefix(keys []string, prefix string) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keys[m] < prefix {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Pending reports whether Next has an event ready to return without
// blocking, reading newly committed events from the history if needed. The
// HTTP layer flushes a response only when nothing is pending, so a busy
// watch writes many events per flush.
func (w *Watcher) Pending() bool {
	if len(w.initial) > 0 || w.initialEnd != 0 || len(w.batch) > 0 {
		return true
	}
	r := w.r
	r.mu.RLock()
	more := w.seq != r.history.next()
	r.mu.RUnlock()
	if !more {
		return false
	}
	_, err := w.fill()
	return err != nil || len(w.batch) > 0 // an error is "pending" too: Next returns it
}
