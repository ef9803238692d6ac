package reflector

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Object is what the reflector stores: a Kubernetes object with metadata.
// Typed API structs (*corev1.Pod), *unstructured.Unstructured and
// *metav1.PartialObjectMetadata all satisfy it.
type Object interface {
	metav1.Object
	runtime.Object
}

// Store is where the reflector pushes what it learns. The FIFO of the
// informer stack implements it; any store with these five methods works.
//
// The reflector calls the store from one goroutine only, in the order the
// server produced the changes. It never mutates an object after handing it
// over. An error returned by the store is logged and does not stop the
// reflector.
//
// An object handed to Add, Update, Delete or Replace is the store's from
// then on (it may change it in place, on any goroutine): the reflector does
// not read it again unless the call returns an error.
type Store[T Object] interface {
	// Add reports an object created (watch event ADDED).
	Add(obj T) error
	// Update reports an object changed (watch event MODIFIED).
	Update(obj T) error
	// Delete reports an object deleted (watch event DELETED); obj is its
	// last state as the server sent it.
	Delete(obj T) error
	// Replace hands over a complete list: the store must end up holding
	// exactly objs (reporting every listed object as replaced and every
	// object it held that is missing from objs as deleted). The store owns
	// objs afterwards.
	Replace(objs []T, resourceVersion string) error
	// Bookmark reports that the reflector's position advanced to
	// resourceVersion without any change to objects.
	Bookmark(resourceVersion string) error
}

// ListerWatcher is the server side of the reflector: it lists one page of
// objects and opens watches. Options are the Kubernetes list options; the
// reflector sets ResourceVersion, ResourceVersionMatch, Limit, Continue,
// AllowWatchBookmarks, SendInitialEvents and TimeoutSeconds, and the
// ListerWatcher adds its own scoping (label and field selectors).
//
// Errors from the server must be (or wrap) an apierrors.APIStatus such as
// *apierrors.StatusError, so that the reflector can tell 410 Gone, 429 Too
// Many Requests (with its Retry-After in Details.RetryAfterSeconds) and 500
// apart.
type ListerWatcher[T Object] interface {
	// List returns one page of objects.
	List(ctx context.Context, opts metav1.ListOptions) (*List[T], error)
	// Watch opens a watch. The watch lives until it is stopped, the server
	// ends it, or ctx is cancelled; a Watch blocked in Next (or in opening)
	// must return promptly once ctx is cancelled. The reflector gives each
	// watch a context of its own and cancels it to give up a watch that
	// has sent nothing for opts.TimeoutSeconds plus
	// Options.WatchSilenceMargin; a server ends the watch at
	// opts.TimeoutSeconds (a fake should too, or turn the check off).
	Watch(ctx context.Context, opts metav1.ListOptions) (Watch[T], error)
}

// List is one page of a list response.
type List[T Object] struct {
	// Items are the objects of this page.
	Items []T
	// ResourceVersion is the list's resourceVersion (metadata.resourceVersion).
	ResourceVersion string
	// Continue is the token for the next page; empty on the last page.
	Continue string
}

// Watch is an open watch stream, read by pulling events one at a time.
// A Watch is used by one goroutine at a time.
type Watch[T Object] interface {
	// Next blocks until the next event. It returns io.EOF when the server
	// closed the stream normally (for example at the end of timeoutSeconds),
	// and another error when the stream broke or the Watch's context ended.
	Next() (Event[T], error)
	// Stop releases the stream. Next must not be called after Stop. Stop
	// may be called more than once.
	Stop()
}

// Event is one watch event.
type Event[T Object] struct {
	// Type is watch.Added, watch.Modified, watch.Deleted, watch.Bookmark or
	// watch.Error.
	Type watch.EventType
	// Object is the object of an Added, Modified, Deleted or Bookmark event.
	// A bookmark's object carries only metadata.resourceVersion and
	// annotations.
	Object T
	// Status is the error of an Error event.
	Status *metav1.Status
}

// Clock is the reflector's source of time. Tests inject a fake one; the
// default is the real clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Metrics receives the reflector's measurements. Implementations must be
// cheap and must not block; the default does nothing.
type Metrics interface {
	// ObserveList is called when a list finishes: a paginated list (all its
	// pages) or the initial events of a streaming list. items is the number
	// of objects handed to the store, err is nil on success.
	ObserveList(name string, d time.Duration, items int, err error)
	// ObserveWatch is called when a watch ends, with how long it lasted and
	// how many events it carried; err is nil when the server closed it
	// normally, and wraps ErrSilentWatch when the reflector gave it up as
	// silent. (ObserveList's err wraps ErrSilentWatch for a silent
	// streaming list, ErrStaleList for a list refused as older than the
	// position reached.)
	ObserveWatch(name string, d time.Duration, events int, err error)
	// ObserveResourceVersion is called when the reflector's position (its
	// last synced resourceVersion) moves.
	ObserveResourceVersion(name string, resourceVersion string)
}

type noMetrics struct{}

func (noMetrics) ObserveList(string, time.Duration, int, error)  {}
func (noMetrics) ObserveWatch(string, time.Duration, int, error) {}
func (noMetrics) ObserveResourceVersion(string, string)          {}
