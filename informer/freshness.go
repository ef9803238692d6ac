package informer

import (
	"sync"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"kloop.dev/kloop/fifo"
)

// StoreResourceVersion returns the resourceVersion the cache has caught up
// with: that of the last relist, watch event or bookmark it applied ("" before
// the first list, and after an initial list that was empty, until the
// first event or bookmark). Every change to the informer's objects up to it is in
// the cache, also for objects that did not change — a bookmark moves it
// without any — so a write whose answer carried resourceVersion rv is
// visible in the cache once StoreResourceVersion() ≥ rv, compared with
// k8s.io/apimachinery/pkg/util/resourceversion (Kubernetes resourceVersions
// are ordered integers since 1.35; one that is not tells nothing). It never
// goes backwards and lags the reflector's LastSyncResourceVersion by the
// events queued between them. An informer of several namespaces has none
// (""): read the informer of each namespace.
func (i *Informer[T]) StoreResourceVersion() string {
	if i.multi != nil {
		return ""
	}
	f := &i.s.fresh
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// Changed returns a channel that is closed once the cache next applies a
// change (a run of watch events, a relist, a bookmark) or the informer
// stops: a reader waiting for the cache to catch up with something checks
// again then. An informer of several namespaces returns nil (read the
// informer of each namespace).
func (i *Informer[T]) Changed() <-chan struct{} {
	if i.multi != nil {
		return nil
	}
	f := &i.s.fresh
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return closedChan
	}
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// freshness is how far an informer's cache has caught up.
type freshness struct {
	mu sync.Mutex // guards every field; never held while calling out
	// applied is the resourceVersion the cache has caught up with (see
	// StoreResourceVersion).
	applied string
	// changed, when not nil, is closed at the next change of the cache (or
	// at the stop) and then set to nil.
	changed chan struct{}
	stopped bool
}

// advance moves applied to the resourceVersion of d, the last delta of a
// unit just applied to the cache, unless it is older, and wakes the
// readers waiting for a change.
func (f *freshness) advance(d *fifo.Delta[Object]) {
	rv := d.ResourceVersion // a relist's or a bookmark's
	if rv == "" {
		switch d.Type {
		case fifo.Added, fifo.Updated, fifo.Deleted:
			if d.Object != nil {
				rv = d.Object.GetResourceVersion()
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if rv != "" && rv != f.applied {
		// An unparsable resourceVersion replaces the last one: readers
		// comparing with it can tell nothing, and do not wait.
		if c, err := resourceversion.CompareResourceVersion(rv, f.applied); err != nil || c > 0 {
			f.applied = rv
		}
	}
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// stop wakes the readers for good: the cache changes no more.
func (f *freshness) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// Selectors returns the label and field selectors the informer lists and
// watches with — its Scope's and its kind's FactoryOptions.ByObject's —,
// nil for none: an object they exclude never reaches the cache.
func (i *Informer[T]) Selectors() (labels.Selector, fields.Selector) {
	s := i.s
	if i.multi != nil {
		s = i.multi.order[0] // every namespace's informer has the same
	}
	return s.labels, s.fields
}
