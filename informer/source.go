package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// SourceOptions configures a Source. The zero value works.
type SourceOptions struct {
	// Name identifies the source in logs and errors. Default: the Go type
	// T.
	Name string
	// Kind names the kind of the source's objects in the trigger records
	// of the requests it adds (trigger.Cause.Source, read by
	// reconcile.TriggersFrom): "ConfigMap", "Widget.example.com". Default:
	// Name. The builder sets it.
	Kind string
	// Predicates filter the events: an event reaches the handler only if
	// every predicate passes it. Default: none.
	Predicates []predicate.Predicate
	// ResyncPeriod is the resync period of the source's informer handler
	// (see HandlerOptions). Default 0: the informer's (10 h unless the
	// factory says otherwise); NoResync turns resyncs off.
	ResyncPeriod time.Duration
	// Inline delivers the informer's notifications to the predicates and
	// the handler on the informer's own goroutine, right after the cache
	// update of each run of events (HandlerOptions.Inline): one
	// hand-off less per event.
	// Only for handlers and predicates that return at once and never block
	// (the built-in enqueuers and predicates); a slow one would stall the
	// informer's cache and every other handler of the kind. The controller's
	// Enqueuers never block. Default false: a buffer and a goroutine of the
	// source's own. The builder sets it where it knows the handler and
	// predicates are built-in.
	Inline bool
}

// Source is the controller.Source of one shared informer: it adds a handler
// to the informer when the controller starts it, turns each notification
// into a handler event, filters it with the predicates and dispatches it to
// the EventHandler — the objects of the initial list and resyncs at low
// priority — and removes its handler when its context is cancelled.
// HasSynced is its informer registration's: true once the handler has
// returned from every notification of the initial list.
//
// Many Sources, of one or many controllers, share one informer: one watch
// and one cache per kind, a handler each. The builder makes one per For,
// Owns and Watches; a raw controller makes its own:
//
//	src, err := informer.NewSource(pods, handler.EnqueueRequestForObject{}, informer.SourceOptions{})
//	err = c.Watch(src)
//
// The informer package does not import the controller: Source implements
// controller.Source by its method set (Start and HasSynced), and takes the
// controller's queue as handler.Enqueuers.
type Source[T Object] struct {
	inf   *Informer[T]
	h     handler.EventHandler
	opts  SourceOptions
	reg   atomic.Pointer[Registration] // set by Start
	start atomic.Bool                  // Start was called
}

// NewSource returns a source of the events of inf, mapped by h.
func NewSource[T Object](inf *Informer[T], h handler.EventHandler, opts SourceOptions) (*Source[T], error) {
	if inf == nil {
		return nil, errors.New("informer: NewSource needs an informer")
	}
	if h == nil {
		return nil, errors.New("informer: NewSource needs an EventHandler")
	}
	return &Source[T]{inf: inf, h: h, opts: opts}, nil
}

// Start registers the source's handler on the informer, delivers events to
// q (live changes) and low (initial list, resyncs) until ctx is cancelled,
// then removes the handler and returns nil.
func (s *Source[T]) Start(ctx context.Context, q, low handler.Enqueuer) error {
	if q == nil {
		return errors.New("informer: Source.Start needs an Enqueuer")
	}
	if !s.start.CompareAndSwap(false, true) {
		return errors.New("informer: Source started twice")
	}
	if low == nil {
		low = q
	}
	kind := s.opts.Kind
	if kind == "" {
		kind = s.opts.Name
	}
	if kind == "" {
		kind = reflect.TypeFor[T]().String()
	}
	h := &sourceHandler[T]{ctx: ctx, h: s.h, preds: s.opts.Predicates, q: batchOver(q), low: batchOver(low), identity: identityOf[T](),
		kind: kind, handler: HandlerName(s.h)}
	reg, err := s.inf.AddHandler(h, HandlerOptions{ResyncPeriod: s.opts.ResyncPeriod, Inline: s.opts.Inline})
	if err != nil {
		return fmt.Errorf("informer: adding the source's informer handler: %w", err)
	}
	s.reg.Store(reg)
	<-ctx.Done()
	if err := s.inf.RemoveHandler(reg); err != nil && !errors.Is(err, ErrStopped) {
		return fmt.Errorf("informer: removing the source's informer handler: %w", err)
	}
	return nil
}

// HasSynced reports whether the source's handler has returned from every
// notification of the informer's initial list (false before Start).
func (s *Source[T]) HasSynced() bool {
	reg := s.reg.Load()
	return reg != nil && reg.HasSynced()
}

// Started reports whether the source has been started.
func (s *Source[T]) Started() bool { return s.start.Load() }

// Pending returns the number of notifications queued for the source's
// handler and not yet delivered (0 before Start).
func (s *Source[T]) Pending() int {
	if reg := s.reg.Load(); reg != nil {
		return reg.Pending()
	}
	return 0
}

// String names the source in logs and errors.
func (s *Source[T]) String() string {
	if s.opts.Name != "" {
		return "kind source " + s.opts.Name
	}
	return "kind source " + reflect.TypeFor[T]().String()
}

// sourceHandler is a Source's informer handler: it turns each notification
// into a handler event, filters it with the predicates and dispatches it to
// the EventHandler, whose requests it collects per run of notifications and
// hands to the controller's queue at the informer's Flush.
type sourceHandler[T Object] struct {
	ctx    context.Context
	h      handler.EventHandler
	preds  []predicate.Predicate
	q, low handler.Enqueuer // *batcher when the controller's enqueuer batches
	// identity is how T's resyncs are known (identityOf): by the very same
	// object as old and new, or by resourceVersion.
	identity identity
	// kind and handler name the source's kind and h in trigger records.
	kind, handler string
}

// HandlerName names an event handler in trigger records and logs: its
// String method's text, else its Go type.
func HandlerName(h handler.EventHandler) string {
	if s, ok := h.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", h)
}

var _ Flusher = (*sourceHandler[Object])(nil)

// The handler is called directly rather than through handler.Dispatch:
// an update whose old and new objects are the very same object is the
// informer's resync (a relist never notifies an unchanged object), so the
// priority is known without reading either object's resourceVersion — the
// old object is cold in the CPU's caches, and that read was a third of the
// handler's cost per event. The identity is compared without unsafe
// (sameObject): pointers with ==, the dynamic values of an interface T by
// their type and pointer. A T held by value, and a value in an interface T,
// has no identity to compare: its resyncs are known by resourceVersion, as
// handler.Dispatch knows them.

func (sh *sourceHandler[T]) OnAdd(obj T, initial bool) {
	e := handler.CreateEvent{Object: obj, IsInInitialList: initial}
	if !sh.allow(e) {
		return
	}
	if initial {
		sh.cause(sh.low, trigger.InitialList, obj)
		sh.h.Create(sh.ctx, e, sh.low)
	} else {
		sh.cause(sh.q, trigger.Create, obj)
		sh.h.Create(sh.ctx, e, sh.q)
	}
}

func (sh *sourceHandler[T]) OnUpdate(oldObj, newObj T) {
	e := handler.UpdateEvent{ObjectOld: oldObj, ObjectNew: newObj}
	if !sh.allow(e) {
		return
	}
	resync, known := sameObject(sh.identity, oldObj, newObj)
	if !known {
		resync = sameVersion(oldObj, newObj)
	}
	if resync {
		sh.cause(sh.low, trigger.Resync, newObj)
		sh.h.Update(sh.ctx, e, sh.low)
	} else {
		sh.cause(sh.q, trigger.Update, newObj)
		sh.h.Update(sh.ctx, e, sh.q)
	}
}

func (sh *sourceHandler[T]) OnDelete(d Deleted[T]) {
	e := handler.DeleteEvent{Object: d.Object, FinalStateUnknown: d.FinalStateUnknown}
	if sh.allow(e) {
		var obj trigger.Object
		if !isNil(d.Object) {
			obj = d.Object
		}
		sh.cause(sh.q, trigger.Delete, obj)
		sh.h.Delete(sh.ctx, e, sh.q)
	}
}

// cause records on q, if it is a batcher that records triggers, the cause
// of the adds of the event about to be dispatched to it.
func (sh *sourceHandler[T]) cause(q handler.Enqueuer, typ trigger.Type, obj trigger.Object) {
	if b, ok := q.(*batcher); ok && b.tq != nil {
		b.mu.Lock()
		b.cur = trigger.Cause{Type: typ, Source: sh.kind, Handler: sh.handler, Object: obj}
		b.mu.Unlock()
	}
}

// allow applies the predicates to e and, if it passes, opens a run on the
// batchers: the handler's adds wait for the run's Flush.
func (sh *sourceHandler[T]) allow(e handler.Event) bool {
	if len(sh.preds) > 0 && !predicate.Allow(e, sh.preds...) {
		return false
	}
	sh.open(sh.q)
	sh.open(sh.low)
	return true
}

// open starts a run on q if it is a batcher.
func (sh *sourceHandler[T]) open(q handler.Enqueuer) {
	if b, ok := q.(*batcher); ok && !b.open.Load() {
		b.open.Store(true)
	}
}

// identity is how a Source's handler tells the informer's resync — an
// update whose old and new objects are the very same object — from a
// change, for a T: decided once per T (identityOf), at Start.
type identity uint8

const (
	// noIdentity: a T held by value (a struct, a string…), whose every
	// conversion to an interface is a copy of its own, or a func, which
	// reflect identifies by its code only. A resync is an update with the
	// same resourceVersion (sameVersion).
	noIdentity identity = iota
	// byEquality: pointers, channels and unsafe pointers, which are their
	// own identity: == compares them, and never panics.
	byEquality
	// byDynamicType: interfaces, and maps (not comparable with ==): by the
	// dynamic type and value of each pair (sameDynamic).
	byDynamicType
)

// identityOf returns how a T's identity is compared.
func identityOf[T any]() identity {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Pointer, reflect.Chan, reflect.UnsafePointer:
		return byEquality
	case reflect.Interface, reflect.Map:
		return byDynamicType
	}
	return noIdentity
}

// sameObject reports whether a and b are the very same object (same), when
// their identity can tell (known); it reads neither object. With known
// false, a and b have no identity to compare: the caller falls back to the
// resourceVersion rule.
func sameObject[T any](id identity, a, b T) (same, known bool) {
	switch id {
	case byEquality:
		// The interfaces hold the pointers themselves: == compares them.
		return any(a) == any(b), true
	case byDynamicType:
		return sameDynamic(any(a), any(b))
	}
	return false, false
}

// sameDynamic is sameObject for dynamic values: values of different
// dynamic types (or one nil) are not the same; of one pointer, channel or
// unsafe-pointer type, == compares them; of one map type, the maps'
// pointers. Any other dynamic type — a struct, a slice, a func held in an
// interface — has no identity to read (its box is not visible without
// unsafe): known is false.
func sameDynamic(x, y any) (same, known bool) {
	if x == nil {
		return y == nil, true
	}
	switch reflect.TypeOf(x).Kind() {
	case reflect.Pointer, reflect.Chan, reflect.UnsafePointer:
		// Comparable types: == compares the dynamic types, then the
		// pointers, and never panics (nor for a y of another type).
		return x == y, true
	case reflect.Map:
		return reflect.TypeOf(y) == reflect.TypeOf(x) &&
			reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer(), true
	}
	// Values of different types are different objects.
	return false, reflect.TypeOf(y) != reflect.TypeOf(x)
}

// sameVersion reports whether an update changes nothing by resourceVersion
// (handler.Dispatch's rule): the resync test for a T without identity.
func sameVersion[T Object](oldObj, newObj T) bool {
	rv := newObj.GetResourceVersion()
	return rv != "" && rv == oldObj.GetResourceVersion()
}

// Flush ends the run: it hands the requests collected since the last Flush
// to the queue.
func (sh *sourceHandler[T]) Flush() {
	if b, ok := sh.q.(*batcher); ok {
		b.flush(true)
	}
	if b, ok := sh.low.(*batcher); ok && sh.low != sh.q {
		b.flush(true)
	}
}

// batchOver returns a batcher over q if q takes batches, else q.
func batchOver(q handler.Enqueuer) handler.Enqueuer {
	if bq, ok := q.(handler.BatchEnqueuer); ok {
		b := &batcher{q: bq}
		b.tq, _ = q.(handler.TriggerEnqueuer)
		return b
	}
	return q
}

// maxBatch is the most requests a batcher holds: past it, Add hands them
// over at once (the synthetic adds of a late handler, a resync of a large
// cache: one Flush after many notifications).
const maxBatch = 256

// batcher collects the requests that a handler adds during a run of
// notifications and hands them to the controller's queue with one AddAll:
// the informer contends with the workers for the queue's lock once per run
// of events, not once per event. A request waits at most for the rest of
// its run (the informer's Flush). Outside a run — a handler that kept its
// Enqueuer and adds from another goroutine later — Add goes straight to the
// queue.
type batcher struct {
	q handler.BatchEnqueuer
	// tq is q when it records triggers: the run's requests are then handed
	// over with their causes.
	tq handler.TriggerEnqueuer
	// open: a run is being delivered. Set by the delivering goroutine before
	// each dispatch, cleared under mu by the run's flush, so that an Add that
	// saw it set under mu is in reqs before that flush takes them.
	open atomic.Bool
	// mu guards reqs: a handler may add from another goroutine too.
	// Uncontended in the usual case (only the delivering goroutine adds).
	mu   sync.Mutex
	reqs []reconcile.Request // added during the run, in order
	// cur is the cause of the event being dispatched (set by
	// sourceHandler.cause); trigs holds the cause of each of reqs (with tq
	// only). The triggers hold the events' objects until the flush.
	cur   trigger.Cause
	trigs []trigger.Cause
}

func (b *batcher) Add(req reconcile.Request) {
	if b.open.Load() {
		b.mu.Lock()
		if b.open.Load() {
			b.reqs = append(b.reqs, req)
			if b.tq != nil {
				b.trigs = append(b.trigs, b.cur)
			}
			full := len(b.reqs) >= maxBatch
			b.mu.Unlock()
			if full {
				b.flush(false)
			}
			return
		}
		b.mu.Unlock()
	}
	b.q.Add(req)
}

// AddAfter adds at once: a delayed request gains nothing from waiting for
// the run's end.
func (b *batcher) AddAfter(req reconcile.Request, d time.Duration) { b.q.AddAfter(req, d) }

// flush hands the collected requests over; end ends the run. The queue is
// called under b.mu, so that requests reach it in the order they were
// added; the queue never calls back into a handler.
func (b *batcher) flush(end bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if end {
		b.open.Store(false)
	}
	if end {
		b.cur = trigger.Cause{} // let go of the event's object
	}
	if len(b.reqs) == 0 {
		return
	}
	if b.tq != nil {
		b.tq.AddAllTriggered(b.reqs, b.trigs)
		clear(b.trigs)
		b.trigs = b.trigs[:0]
	} else {
		b.q.AddAll(b.reqs)
	}
	clear(b.reqs)
	b.reqs = b.reqs[:0]
}
