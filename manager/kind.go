package manager

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
)

// KindOptions configures a Kind source. The zero value works.
type KindOptions struct {
	// Name identifies the source in logs and errors. Default: the Go type
	// T.
	Name string
	// Predicates filter the events: an event reaches the handler only if
	// every predicate passes it. Default: none.
	Predicates []predicate.Predicate
	// ResyncPeriod is the resync period of the source's informer handler
	// (see informer.HandlerOptions). Default 0: the informer's (10 h unless
	// the factory says otherwise); informer.NoResync turns resyncs off.
	ResyncPeriod time.Duration
	// Inline delivers the informer's notifications to the predicates and
	// the handler on the informer's own goroutine, right after the cache
	// update of each run of events (informer.HandlerOptions.Inline): one
	// hand-off less per event.
	// Only for handlers and predicates that return at once and never block
	// (the built-in enqueuers and predicates); a slow one would stall the
	// informer's cache and every other handler of the kind. The controller's
	// Enqueuers never block. Default false: a buffer and a goroutine of the
	// source's own. The builder sets it where it knows the handler and
	// predicates are built-in.
	Inline bool
}

// Kind is the controller.Source of one shared informer: it adds a handler
// to the informer when the controller starts it, turns each notification
// into a handler event, filters it with the predicates and dispatches it to
// the EventHandler — the objects of the initial list and resyncs at low
// priority — and removes its handler when its context is cancelled.
// HasSynced is its informer registration's: true once the handler has
// returned from every notification of the initial list.
//
// Many Kinds, of one or many controllers, share one informer: one watch and
// one cache per kind, a handler each. The builder makes one per For, Owns and
// Watches.
type Kind[T informer.Object] struct {
	inf   *informer.Informer[T]
	h     handler.EventHandler
	opts  KindOptions
	reg   atomic.Pointer[informer.Registration] // set by Start
	start atomic.Bool                           // Start was called
}

var _ controller.Source = (*Kind[informer.Object])(nil)

// NewKind returns a source of the events of inf, mapped by h.
func NewKind[T informer.Object](inf *informer.Informer[T], h handler.EventHandler, opts KindOptions) (*Kind[T], error) {
	if inf == nil {
		return nil, errors.New("manager: NewKind needs an informer")
	}
	if h == nil {
		return nil, errors.New("manager: NewKind needs an EventHandler")
	}
	return &Kind[T]{inf: inf, h: h, opts: opts}, nil
}

// Start registers the source's handler on the informer, delivers events to
// q (live changes) and low (initial list, resyncs) until ctx is cancelled,
// then removes the handler and returns nil.
func (k *Kind[T]) Start(ctx context.Context, q, low handler.Enqueuer) error {
	if q == nil {
		return errors.New("manager: Kind.Start needs an Enqueuer")
	}
	if !k.start.CompareAndSwap(false, true) {
		return errors.New("manager: Kind source started twice")
	}
	if low == nil {
		low = q
	}
	dispatch := func(e handler.Event) {
		if predicate.Allow(e, k.opts.Predicates...) {
			handler.Dispatch(ctx, k.h, e, q, low)
		}
	}
	reg, err := k.inf.AddHandler(informer.HandlerFuncs[T]{
		AddFunc: func(obj T, initial bool) {
			dispatch(handler.CreateEvent{Object: obj, IsInInitialList: initial})
		},
		UpdateFunc: func(oldObj, newObj T) {
			dispatch(handler.UpdateEvent{ObjectOld: oldObj, ObjectNew: newObj})
		},
		DeleteFunc: func(d informer.Deleted[T]) {
			dispatch(handler.DeleteEvent{Object: d.Object, FinalStateUnknown: d.FinalStateUnknown})
		},
	}, informer.HandlerOptions{ResyncPeriod: k.opts.ResyncPeriod, Inline: k.opts.Inline})
	if err != nil {
		return fmt.Errorf("manager: adding the source's informer handler: %w", err)
	}
	k.reg.Store(reg)
	<-ctx.Done()
	if err := k.inf.RemoveHandler(reg); err != nil && !errors.Is(err, informer.ErrStopped) {
		return fmt.Errorf("manager: removing the source's informer handler: %w", err)
	}
	return nil
}

// HasSynced reports whether the source's handler has returned from every
// notification of the informer's initial list (false before Start).
func (k *Kind[T]) HasSynced() bool {
	reg := k.reg.Load()
	return reg != nil && reg.HasSynced()
}

// Started reports whether the source has been started.
func (k *Kind[T]) Started() bool { return k.start.Load() }

// Pending returns the number of notifications queued for the source's
// handler and not yet delivered (0 before Start).
func (k *Kind[T]) Pending() int {
	if reg := k.reg.Load(); reg != nil {
		return reg.Pending()
	}
	return 0
}

// String names the source in logs and errors.
func (k *Kind[T]) String() string {
	if k.opts.Name != "" {
		return "kind source " + k.opts.Name
	}
	return "kind source " + reflect.TypeFor[T]().String()
}
