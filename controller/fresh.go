package controller

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
)

// DefaultReadYourOwnWritesTimeout is the default of
// Options.ReadYourOwnWritesTimeout.
const DefaultReadYourOwnWritesTimeout = 3 * time.Second

// staleRequeueDelay is how long a key skipped for a stale cache waits
// before it is tried again.
const staleRequeueDelay = 10 * time.Millisecond

// staleTracker is the controller's half of read-your-own-writes, as
// KEP-5647 does it in kube-controller-manager: it remembers, per key, the
// writes of the key's last reconcile that the cache had not caught up with
// when it returned, and the next reconcile of the key waits — skipped and
// requeued — until the cache has them, at most timeout after the writes.
type staleTracker struct {
	timeout time.Duration
	log     *slog.Logger

	// n is len(pending), read without the lock: most reconciles find no
	// key pending and take no lock.
	n  atomic.Int64
	mu sync.Mutex // guards pending and sweepAt
	// pending holds the writes of the keys whose cache was behind them.
	pending map[reconcile.Request]*pendingWrites
	// sweepAt is the size of pending at which the expired entries of keys
	// that never came back are dropped.
	sweepAt int
}

// pendingWrites are the writes of one key's last reconcile that the cache
// had not caught up with.
type pendingWrites struct {
	writes   []rctx.Write
	deadline time.Time
}

func newStaleTracker(timeout time.Duration, log *slog.Logger) *staleTracker {
	return &staleTracker{timeout: timeout, log: log, pending: map[reconcile.Request]*pendingWrites{}, sweepAt: 1024}
}

// staleVerdict is what check decided.
type staleVerdict uint8

const (
	fresh  staleVerdict = iota // reconcile
	stale                      // skip and requeue
	gaveUp                     // reconcile: the cache did not catch up in time
)

// check decides whether the key may be reconciled now: yes unless its last
// reconcile's writes are not all in the cache yet and their deadline has
// not passed.
func (t *staleTracker) check(req reconcile.Request, now time.Time) staleVerdict {
	if t.n.Load() == 0 {
		return fresh
	}
	t.mu.Lock()
	p := t.pending[req]
	t.mu.Unlock()
	if p == nil {
		return fresh
	}
	// Only this key's worker reads or replaces its entry (a key is held by
	// one worker at a time): p is stable outside the lock.
	left := p.writes[:0]
	for _, w := range p.writes {
		if !w.CaughtUp() {
			left = append(left, w)
		}
	}
	clear(p.writes[len(left):])
	p.writes = left
	if len(left) > 0 && !now.After(p.deadline) {
		return stale
	}
	t.drop(req, p)
	if len(left) > 0 {
		t.log.Warn("the cache did not catch up with the writes of the key's last reconcile in time: reconciling anyway",
			"namespace", req.Namespace, "name", req.Name, "timeout", t.timeout, "writes", describeWrites(left))
		return gaveUp
	}
	return fresh
}

// drop forgets req's entry, if it is still p.
func (t *staleTracker) drop(req reconcile.Request, p *pendingWrites) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[req] == p {
		delete(t.pending, req)
		t.n.Store(int64(len(t.pending)))
	}
}

// record remembers the writes of req's reconcile that the cache has not
// caught up with yet (those of kinds it caches), replacing what it had for
// req.
func (t *staleTracker) record(req reconcile.Request, writes []rctx.Write, now time.Time) {
	var left []rctx.Write
	for _, w := range writes {
		if w.CaughtUp != nil && !w.CaughtUp() {
			w.ManagedFields = nil // not needed here
			left = append(left, w)
		}
	}
	if len(left) == 0 {
		if t.n.Load() > 0 {
			t.mu.Lock()
			delete(t.pending, req)
			t.n.Store(int64(len(t.pending)))
			t.mu.Unlock()
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[req] = &pendingWrites{writes: left, deadline: now.Add(t.timeout)}
	if len(t.pending) >= t.sweepAt {
		for k, p := range t.pending {
			if now.After(p.deadline) {
				delete(t.pending, k)
			}
		}
		t.sweepAt = max(1024, 2*len(t.pending))
	}
	t.n.Store(int64(len(t.pending)))
}

// describeWrites renders writes for a log line: "ConfigMap ns/a@42, …".
func describeWrites(ws []rctx.Write) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(w.Kind.String())
		b.WriteString(" ")
		if w.Namespace != "" {
			b.WriteString(w.Namespace)
			b.WriteString("/")
		}
		b.WriteString(w.Name)
		if w.Deleted {
			b.WriteString(" (deleted)")
		} else {
			fmt.Fprintf(&b, "@%s", w.ResourceVersion)
		}
	}
	return b.String()
}
