package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
)

// Enqueuer is all a handler sees of the controller's work queue.
type Enqueuer interface {
	// Add queues req now. Adding a request that is already queued does
	// nothing; adding one that is being reconciled reconciles it again
	// afterwards.
	Add(req reconcile.Request)
	// AddAfter queues req once d has elapsed.
	AddAfter(req reconcile.Request, d time.Duration)
}

// BatchEnqueuer is an Enqueuer that also takes many requests at once, under
// one take of its lock (the controller's enqueuers are). An event source
// that collects the requests of a run of events hands them over with AddAll,
// so that it contends with the workers once per run instead of once per
// event.
type BatchEnqueuer interface {
	Enqueuer
	// AddAll adds each request of reqs as Add does; reqs is not kept.
	AddAll(reqs []reconcile.Request)
}

// TriggerEnqueuer is a BatchEnqueuer that also records why each request is
// added — the event, its object, the handler — as a trigger.Cause: the
// controller's enqueuers are (see reconcile.TriggersFrom). An event source
// that knows the event an EventHandler is mapping hands the requests over
// with their triggers; the triggers hold the event's object, not copies of
// its fields, so recording them allocates nothing.
type TriggerEnqueuer interface {
	BatchEnqueuer
	// AddTriggered adds req as Add does, caused by t.
	AddTriggered(req reconcile.Request, t trigger.Cause)
	// AddAllTriggered adds each request of reqs as Add does, caused by
	// the trigger of the same index of ts; neither slice is kept.
	AddAllTriggered(reqs []reconcile.Request, ts []trigger.Cause)
}

// EventHandler maps events to requests and adds them to q. A handler must
// not block: it runs on the event source's delivery goroutine.
type EventHandler interface {
	Create(ctx context.Context, e CreateEvent, q Enqueuer)
	Update(ctx context.Context, e UpdateEvent, q Enqueuer)
	Delete(ctx context.Context, e DeleteEvent, q Enqueuer)
	Generic(ctx context.Context, e GenericEvent, q Enqueuer)
}

// Funcs is an EventHandler made of functions; a nil function does nothing.
type Funcs struct {
	CreateFunc  func(context.Context, CreateEvent, Enqueuer)
	UpdateFunc  func(context.Context, UpdateEvent, Enqueuer)
	DeleteFunc  func(context.Context, DeleteEvent, Enqueuer)
	GenericFunc func(context.Context, GenericEvent, Enqueuer)
}

// Create calls CreateFunc if set.
func (f Funcs) Create(ctx context.Context, e CreateEvent, q Enqueuer) {
	if f.CreateFunc != nil {
		f.CreateFunc(ctx, e, q)
	}
}

// Update calls UpdateFunc if set.
func (f Funcs) Update(ctx context.Context, e UpdateEvent, q Enqueuer) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(ctx, e, q)
	}
}

// Delete calls DeleteFunc if set.
func (f Funcs) Delete(ctx context.Context, e DeleteEvent, q Enqueuer) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(ctx, e, q)
	}
}

// Generic calls GenericFunc if set.
func (f Funcs) Generic(ctx context.Context, e GenericEvent, q Enqueuer) {
	if f.GenericFunc != nil {
		f.GenericFunc(ctx, e, q)
	}
}

// Dispatch calls the method of h that matches e. Events of the initial list
// and updates without a change (both objects with the same, non-empty
// resourceVersion: a resync) go to low, all others to q. A nil h, a nil low
// (then q is used) or a nil event are fine.
func Dispatch(ctx context.Context, h EventHandler, e Event, q, low Enqueuer) {
	if h == nil {
		return
	}
	if low == nil {
		low = q
	}
	switch e := e.(type) {
	case CreateEvent:
		if e.IsInInitialList {
			h.Create(ctx, e, low)
		} else {
			h.Create(ctx, e, q)
		}
	case UpdateEvent:
		if isResync(e) {
			h.Update(ctx, e, low)
		} else {
			h.Update(ctx, e, q)
		}
	case DeleteEvent:
		h.Delete(ctx, e, q)
	case GenericEvent:
		h.Generic(ctx, e, q)
	}
}

func isResync(e UpdateEvent) bool {
	if IsNil(e.ObjectOld) || IsNil(e.ObjectNew) {
		return false
	}
	rv := e.ObjectNew.GetResourceVersion()
	return rv != "" && rv == e.ObjectOld.GetResourceVersion()
}

// requestFor is the request naming o itself.
func requestFor(o Object) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
}

// EnqueueRequestForObject enqueues the namespace/name of the object in the
// event: the handler of a controller's own kind (For in the builder). An
// update enqueues the new object, or the old one if the new one is nil.
// Events with no object are ignored.
type EnqueueRequestForObject struct{}

// String names the handler in trigger records and logs.
func (EnqueueRequestForObject) String() string { return "EnqueueRequestForObject" }

// Create implements EventHandler.
func (EnqueueRequestForObject) Create(_ context.Context, e CreateEvent, q Enqueuer) {
	if !IsNil(e.Object) {
		q.Add(requestFor(e.Object))
	}
}

// Update implements EventHandler.
func (EnqueueRequestForObject) Update(_ context.Context, e UpdateEvent, q Enqueuer) {
	switch {
	case !IsNil(e.ObjectNew):
		q.Add(requestFor(e.ObjectNew))
	case !IsNil(e.ObjectOld):
		q.Add(requestFor(e.ObjectOld))
	}
}

// Delete implements EventHandler.
func (EnqueueRequestForObject) Delete(_ context.Context, e DeleteEvent, q Enqueuer) {
	if !IsNil(e.Object) {
		q.Add(requestFor(e.Object))
	}
}

// Generic implements EventHandler.
func (EnqueueRequestForObject) Generic(_ context.Context, e GenericEvent, q Enqueuer) {
	if !IsNil(e.Object) {
		q.Add(requestFor(e.Object))
	}
}

// OwnerOptions qualifies EnqueueRequestForOwner. The zero value enqueues the
// controller owner of a namespaced owner kind.
type OwnerOptions struct {
	// AnyOwner enqueues every owner of the kind in the object's
	// ownerReferences. Default false: only the controller owner (the
	// reference with controller: true), as controller-runtime's
	// OnlyControllerOwner, which is what Owns uses.
	AnyOwner bool
	// ClusterScoped says that the owner kind is cluster-scoped: requests get
	// an empty namespace. Default false: the owner is namespaced and lives in
	// the object's namespace (owner references do not cross namespaces).
	ClusterScoped bool
	// Logger reports owner references whose apiVersion does not parse.
	// Default: slog.Default().
	Logger *slog.Logger
}

// EnqueueRequestForOwner returns a handler that enqueues the owners of kind
// owner found in the object's ownerReferences. An owner reference matches
// when its kind equals owner.Kind and the group of its apiVersion equals
// owner.Group, whatever the version, as in controller-runtime. Updates
// enqueue the owners of both the old and the new object (an object that
// changed owner wakes both), each once.
func EnqueueRequestForOwner(owner schema.GroupKind, opts OwnerOptions) (EventHandler, error) {
	if owner.Kind == "" {
		return nil, errors.New("handler: EnqueueRequestForOwner needs the owner's kind")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &enqueueForOwner{owner: owner, opts: opts}, nil
}

type enqueueForOwner struct {
	owner schema.GroupKind
	opts  OwnerOptions
}

func (h *enqueueForOwner) Create(_ context.Context, e CreateEvent, q Enqueuer) {
	h.enqueue(q, e.Object, nil)
}

func (h *enqueueForOwner) Update(_ context.Context, e UpdateEvent, q Enqueuer) {
	h.enqueue(q, e.ObjectNew, e.ObjectOld)
}

func (h *enqueueForOwner) Delete(_ context.Context, e DeleteEvent, q Enqueuer) {
	h.enqueue(q, e.Object, nil)
}

func (h *enqueueForOwner) Generic(_ context.Context, e GenericEvent, q Enqueuer) {
	h.enqueue(q, e.Object, nil)
}

// enqueue adds the owners of a, then those of b that a did not have, each
// once.
func (h *enqueueForOwner) enqueue(q Enqueuer, a, b Object) {
	var buf [4]reconcile.Request // owners: almost always one; no allocation up to four
	reqs := h.owners(a, buf[:0])
	reqs = h.owners(b, reqs)
	for _, r := range reqs {
		q.Add(r)
	}
}

// owners appends to dst the request of each matching owner of o that dst
// does not hold yet.
func (h *enqueueForOwner) owners(o Object, dst []reconcile.Request) []reconcile.Request {
	if IsNil(o) {
		return dst
	}
	refs := o.GetOwnerReferences() // unstructured objects build them on each call
	for i := range refs {
		ref := &refs[i]
		isController := ref.Controller != nil && *ref.Controller
		if !h.opts.AnyOwner && !isController {
			continue
		}
		if r, ok := h.match(o, ref); ok && !slices.Contains(dst, r) {
			dst = append(dst, r)
		}
		if isController && !h.opts.AnyOwner {
			break // only the first controller reference counts, as metav1.GetControllerOf
		}
	}
	return dst
}

func (h *enqueueForOwner) match(o Object, ref *metav1.OwnerReference) (reconcile.Request, bool) {
	if ref.Kind != h.owner.Kind || ref.Name == "" {
		return reconcile.Request{}, false
	}
	group, ok := groupOf(ref.APIVersion)
	if !ok {
		h.opts.Logger.Error("skipping owner reference with an invalid apiVersion",
			"namespace", o.GetNamespace(), "name", o.GetName(), "apiVersion", ref.APIVersion)
		return reconcile.Request{}, false
	}
	if group != h.owner.Group {
		return reconcile.Request{}, false
	}
	r := reconcile.Request{NamespacedName: types.NamespacedName{Name: ref.Name}}
	if !h.opts.ClusterScoped {
		r.Namespace = o.GetNamespace()
	}
	return r, true
}

// groupOf returns the group of an apiVersion exactly as
// schema.ParseGroupVersion would ("v1" is the core group ""), without
// allocating; ok is false where ParseGroupVersion fails (more than one "/").
func groupOf(apiVersion string) (group string, ok bool) {
	i := strings.IndexByte(apiVersion, '/')
	if i < 0 {
		return "", true
	}
	if strings.IndexByte(apiVersion[i+1:], '/') >= 0 {
		return "", false
	}
	return apiVersion[:i], true
}

func (h *enqueueForOwner) String() string {
	if h.opts.AnyOwner {
		return fmt.Sprintf("EnqueueRequestForOwner(%s, any owner)", h.owner)
	}
	return fmt.Sprintf("EnqueueRequestForOwner(%s, controller owner)", h.owner)
}

// MapFunc maps an object to the requests to reconcile; it must not block. It
// is never called with a nil object.
type MapFunc func(ctx context.Context, o Object) []reconcile.Request

// EnqueueRequestsFromMapFunc returns a handler that enqueues every request
// fn returns for the object in the event, each once: the way a change of one
// object (a ConfigMap) wakes the objects that depend on it. Updates map both
// the old and the new object, so that objects that stopped depending on it
// are woken too. A nil fn maps every object to nothing.
func EnqueueRequestsFromMapFunc(fn MapFunc) EventHandler {
	return &enqueueFromMap{fn: fn}
}

type enqueueFromMap struct{ fn MapFunc }

func (h *enqueueFromMap) String() string { return "EnqueueRequestsFromMapFunc" }

func (h *enqueueFromMap) Create(ctx context.Context, e CreateEvent, q Enqueuer) {
	h.enqueue(ctx, q, e.Object, nil)
}

func (h *enqueueFromMap) Update(ctx context.Context, e UpdateEvent, q Enqueuer) {
	h.enqueue(ctx, q, e.ObjectNew, e.ObjectOld)
}

func (h *enqueueFromMap) Delete(ctx context.Context, e DeleteEvent, q Enqueuer) {
	h.enqueue(ctx, q, e.Object, nil)
}

func (h *enqueueFromMap) Generic(ctx context.Context, e GenericEvent, q Enqueuer) {
	h.enqueue(ctx, q, e.Object, nil)
}

// smallSet is the size below which duplicates are found by scanning rather
// than with a map.
const smallSet = 16

func (h *enqueueFromMap) enqueue(ctx context.Context, q Enqueuer, a, b Object) {
	if h.fn == nil {
		return
	}
	var ra, rb []reconcile.Request
	if !IsNil(a) {
		ra = h.fn(ctx, a)
	}
	if !IsNil(b) {
		rb = h.fn(ctx, b)
	}
	if len(ra)+len(rb) > smallSet {
		seen := make(map[reconcile.Request]struct{}, len(ra)+len(rb))
		for _, reqs := range [2][]reconcile.Request{ra, rb} {
			for _, r := range reqs {
				if _, dup := seen[r]; !dup {
					seen[r] = struct{}{}
					q.Add(r)
				}
			}
		}
		return
	}
	for i, r := range ra {
		if !slices.Contains(ra[:i], r) {
			q.Add(r)
		}
	}
	for i, r := range rb {
		if !slices.Contains(ra, r) && !slices.Contains(rb[:i], r) {
			q.Add(r)
		}
	}
}
