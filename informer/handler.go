package informer

import (
	"fmt"
	"time"
)

// Handler receives an informer's notifications. Each registered Handler has
// its own ordered buffer and its own goroutine: its methods are called one
// at a time, in the order of the changes, and never concurrently with each
// other. A slow Handler delays only itself.
//
// The objects are the cached ones, shared with every other reader: do not
// mutate them (DeepCopy first). The usual Handler only computes keys and
// adds them to a work queue.
type Handler[T Object] interface {
	// OnAdd is called for an object new to the cache. initialList is true
	// for the objects of the informer's initial list, and for the synthetic
	// adds a Handler registered after the start receives for what was
	// already cached.
	OnAdd(obj T, initialList bool)
	// OnUpdate is called when a cached object changed, and on a resync with
	// oldObj == newObj. After a relist, every listed object that was
	// already cached with another resourceVersion is an update; one listed
	// unchanged (same resourceVersion) is no notification, as in client-go.
	OnUpdate(oldObj, newObj T)
	// OnDelete is called when an object left the cache.
	OnDelete(d Deleted[T])
}

// Flusher is an optional interface of a Handler that holds on to what its
// notifications produce, to hand it on in one go: a [Source] collects a
// run's requests and adds them to the work queue under one take of its
// lock. Flush is called after each run of notifications, on the
// goroutine that delivered them and before HasSynced counts them: for an
// Inline handler after the notifications of each cache update (at most 64
// watch events), the synthetic adds of its registration and each resync;
// for a buffered one whenever its buffer runs empty, at least every 64
// notifications, and when the informer stops in the middle of a run. A
// handler must not keep anything past Flush that it would lose if no
// further notification came.
type Flusher interface {
	Flush()
}

// Deleted is the typed tombstone passed to OnDelete.
type Deleted[T Object] struct {
	// Object is the last state of the object: the one in the DELETED watch
	// event, or, when FinalStateUnknown, the last state the cache held. It
	// is the zero value only if that state is unknown too.
	Object T
	// FinalStateUnknown is true when the deletion was inferred from a
	// relist: the object was deleted while the watch was down and its final
	// state was never seen.
	FinalStateUnknown bool
	// Key is the object's cache key, "namespace/name" or "name"; always set.
	Key string
}

// HandlerFuncs adapts functions to a [Handler]. A nil field ignores that
// notification.
type HandlerFuncs[T Object] struct {
	AddFunc    func(obj T, initialList bool)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(d Deleted[T])
}

// OnAdd calls AddFunc if it is set.
func (f HandlerFuncs[T]) OnAdd(obj T, initialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, initialList)
	}
}

// OnUpdate calls UpdateFunc if it is set.
func (f HandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if it is set.
func (f HandlerFuncs[T]) OnDelete(d Deleted[T]) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(d)
	}
}

// NoResync as a resync period turns periodic resyncs off.
const NoResync time.Duration = -1

// MinResyncPeriod is the shortest resync period accepted (client-go's
// minimum): a shorter positive one is an error, not a resync loop.
const MinResyncPeriod = time.Second

// checkResync returns an error for a positive resync period under
// MinResyncPeriod.
func checkResync(what string, d time.Duration) error {
	if d > 0 && d < MinResyncPeriod {
		return fmt.Errorf("informer: %s %v is below the minimum %v (NoResync turns resyncs off)", what, d, MinResyncPeriod)
	}
	return nil
}

// DefaultResyncPeriod is the resync period of a handler unless its
// HandlerOptions or the informer's Options say otherwise: controller-runtime's
// ten hours. Each wait is drawn in ±10 % of the period.
const DefaultResyncPeriod = 10 * time.Hour

// HandlerOptions configures one handler registration. The zero value works.
type HandlerOptions struct {
	// ResyncPeriod is how often the handler receives OnUpdate(obj, obj) for
	// every cached object, so that a level-triggered controller corrects
	// drift. Each wait is drawn uniformly in [0.9, 1.1]×ResyncPeriod so that
	// handlers and processes do not resync together. Resyncs go to this
	// handler only and are ordered with its other notifications.
	// Default 0: the informer's Options.ResyncPeriod (10 h unless set);
	// NoResync (any negative value) turns resyncs off for this handler.
	// A positive period under MinResyncPeriod (1 s) is an error.
	ResyncPeriod time.Duration
	// Inline delivers this handler's notifications on the informer's own
	// goroutine, right after the cache update of each run of events (at
	// most 64, see the package documentation), instead of through a
	// buffer and a goroutine of its own: one hand-off less per event, for
	// handlers that only compute keys and add them to a work queue (the
	// controller's own enqueuers do). The handler must return at once: it
	// must not block, wait for anything, or add or remove handlers of this
	// informer (a deadlock), since every handler and the cache wait for it.
	// Order, HasSynced, resyncs and the synthetic adds of a late handler
	// (delivered before AddHandler returns) are as for other handlers.
	// Default false: the handler's own buffer, so a slow handler never
	// stalls the informer.
	Inline bool
}

// Registration is one handler added to an informer, returned by AddHandler.
type Registration struct {
	l *listener
	// parts, for an informer of several namespaces, are the registrations
	// on each namespace's informer (l is nil then).
	parts []*Registration
}

// HasSynced reports whether this handler has been delivered — and has
// returned from — every notification of the informer's initial list (for a
// handler added after the start: every synthetic add of what was cached,
// and the initial list if it was not complete yet). Once true it stays true.
// A controller waits for it before starting its workers.
func (r *Registration) HasSynced() bool {
	if r == nil {
		return false
	}
	if r.parts != nil {
		for _, p := range r.parts {
			if !p.HasSynced() {
				return false
			}
		}
		return true
	}
	return r.l.synced.Load()
}

// Pending returns the number of notifications queued for this handler and
// not yet delivered: it grows when the handler is slower than the watch.
func (r *Registration) Pending() int {
	if r == nil {
		return 0
	}
	if r.parts != nil {
		n := 0
		for _, p := range r.parts {
			n += p.Pending()
		}
		return n
	}
	return r.l.pending()
}
