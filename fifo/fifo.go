package fifo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/internal/chunkq"
)

// Object is what the FIFO carries: any Kubernetes object with object
// metadata, in practice a pointer such as *corev1.Pod,
// *unstructured.Unstructured, *metav1.PartialObjectMetadata or a pointer to a
// user's CRD struct.
type Object interface {
	metav1.Object
	runtime.Object
}

// KnownObjects is what the FIFO needs from the consumer's store (the cache
// Indexer implements it): the objects the consumer already has, so that
// Replace can emit deletions for keys missing from a relist and Resync can
// emit Sync deltas.
type KnownObjects[T Object] interface {
	ListKeys() []string
	GetByKey(key string) (T, bool)
}

// KeyFunc returns the key of an object.
type KeyFunc[T Object] func(obj T) (string, error)

// DeltaType says what happened to an object.
type DeltaType uint8

const (
	// Added: a watch ADDED event.
	Added DeltaType = iota + 1
	// Updated: a watch MODIFIED event.
	Updated
	// Deleted: a watch DELETED event, or (with FinalStateUnknown) an object
	// missing from a relist.
	Deleted
	// Replaced: an object of a relist (Replace).
	Replaced
	// Sync: a periodic resync of an object the consumer already has.
	Sync
	// Bookmark: a watch BOOKMARK; only ResourceVersion is set.
	Bookmark
)

func (t DeltaType) String() string {
	switch t {
	case Added:
		return "Added"
	case Updated:
		return "Updated"
	case Deleted:
		return "Deleted"
	case Replaced:
		return "Replaced"
	case Sync:
		return "Sync"
	case Bookmark:
		return "Bookmark"
	}
	return fmt.Sprintf("DeltaType(%d)", uint8(t))
}

// Delta is one change, delivered by Pop exactly as it was queued.
type Delta[T Object] struct {
	Type DeltaType
	// Object is the object (after Options.Transform). It is the zero value
	// for a Bookmark, and for a FinalStateUnknown deletion whose last state
	// could not be found.
	Object T
	// Key is the object's key ("" for a Bookmark).
	Key string
	// ResourceVersion is the resourceVersion of a Bookmark, and the list
	// resourceVersion on every delta of a Replace batch; "" otherwise (the
	// object's own resourceVersion is in its metadata).
	ResourceVersion string
	// FinalStateUnknown is set on the deletions that Replace infers for keys
	// missing from the list: the object was deleted at some point while the
	// watch was down; Object is the last state the consumer knew.
	FinalStateUnknown bool
}

// Errors returned (wrapped) by the FIFO. Test them with errors.Is.
var (
	// ErrClosed: the FIFO was closed.
	ErrClosed = errors.New("fifo: closed")
	// ErrInvalidObject: a nil object, or one whose key cannot be computed.
	ErrInvalidObject = errors.New("invalid object")
)

// Options configures a FIFO. The zero value is valid.
type Options[T Object] struct {
	// KnownObjects is the consumer's store, normally the cache Indexer that
	// the popped deltas are applied to. Replace uses it to emit deletions for
	// keys missing from a relist and Resync to emit Sync deltas.
	// Default: nil — Replace then finds deletions only among the deltas still
	// queued, and Resync does nothing.
	KnownObjects KnownObjects[T]

	// KeyFunc computes keys. Default: "namespace/name", or "name" for
	// cluster-scoped objects (the rule of cache.Key), with an error for an
	// empty name.
	KeyFunc KeyFunc[T]

	// Transform, if set, is applied once to every object pushed by Add,
	// Update, Delete and Replace, before it is queued (for example to drop
	// managedFields before caching). It is never applied to objects taken from
	// KnownObjects. It may return obj itself changed in place: the object was
	// just decoded and nobody else holds it. Default: nil (objects are queued
	// as given).
	Transform func(obj T) (T, error)

	// MaxRun is the most single deltas (watch events, bookmarks, the Syncs
	// of a resync) that one Pop hands to process: when the head of the
	// queue is a single delta, Pop takes it and the single deltas queued
	// right behind it, in order, up to MaxRun, so that a burst of events
	// costs the consumer one wake-up and one lock instead of one each. A
	// Replace batch is always handed alone (see Pop). Default 1: one delta
	// per Pop. A negative value is an error.
	MaxRun int

	// Logger receives diagnostics. Default: slog.Default() (Go's convention; set slog.New(slog.DiscardHandler) to silence it).
	Logger *slog.Logger
}

func (o *Options[T]) defaults() {
	if o.KeyFunc == nil {
		o.KeyFunc = defaultKey[T]
	}
	if o.MaxRun == 0 {
		o.MaxRun = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

func (o *Options[T]) validate() error {
	if o.KnownObjects != nil && isNil(o.KnownObjects) {
		return errors.New("fifo: Options.KnownObjects is a typed nil")
	}
	if o.MaxRun < 0 {
		return fmt.Errorf("fifo: Options.MaxRun %d is negative", o.MaxRun)
	}
	return nil
}

func defaultKey[T Object](obj T) (string, error) {
	name := obj.GetName()
	if name == "" {
		return "", errors.New("empty name")
	}
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + name, nil
	}
	return name, nil
}

// slot is one queued delta. n is the length of the unit that starts at this
// slot: 1 for a single delta, the batch length on the first delta of an
// atomic Replace batch, and 0 on the batch's other deltas. replace is set on
// every delta of a Replace batch (even one of length 1), which never joins a
// run.
type slot[T Object] struct {
	d       Delta[T]
	n       int32
	replace bool
}

const (
	// maxKeptBatch is the largest batch buffer kept for reuse after a Pop;
	// a bigger one (a relist) is dropped so that memory goes back after it.
	maxKeptBatch = 1024
)

// FIFO is the in-order queue between the reflector and the informer. See the
// package documentation for its semantics.
type FIFO[T Object] struct {
	known     KnownObjects[T]
	keyFunc   KeyFunc[T]
	transform func(T) (T, error)
	maxRun    int // ≥ 1
	logger    *slog.Logger

	wake     chan struct{} // cap 1: a unit was queued or a Pop finished
	done     chan struct{} // closed by Close
	syncedCh chan struct{} // closed when HasSynced becomes true

	// mu guards every field below.
	mu sync.Mutex
	// queue holds the queued deltas in order. Units (single deltas and
	// batches) are contiguous. It grows a chunk at a time and gives drained
	// chunks back, so a backlog that builds up and drains never copies
	// what it holds.
	queue chunkq.Queue[slot[T]]
	// waiting counts the Pops blocked on wake; pushes signal only then.
	waiting int
	// popping is true while a Pop is between taking a unit and the end of
	// its callback; only one Pop runs at a time, so order is kept.
	popping bool
	// inflight is the unit being processed when popping (Replace and Resync
	// treat it as still queued: it may not be in KnownObjects yet); else a
	// buffer kept for reuse, empty.
	inflight []Delta[T]
	closed   bool
	// populated is set by the first Add, Update, Delete or Replace;
	// initialPopulation counts the deltas queued at the first Replace that
	// are not yet processed (not counting a unit already in flight then);
	// synced latches populated && initialPopulation == 0.
	populated         bool
	initialPopulation int
	synced            bool
}

// New returns an empty FIFO.
func New[T Object](opts Options[T]) (*FIFO[T], error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &FIFO[T]{
		known:     opts.KnownObjects,
		keyFunc:   opts.KeyFunc,
		transform: opts.Transform,
		maxRun:    opts.MaxRun,
		logger:    opts.Logger,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		syncedCh:  make(chan struct{}),
	}, nil
}

// Add queues an Added delta.
func (f *FIFO[T]) Add(obj T) error { return f.push(Added, obj) }

// Update queues an Updated delta.
func (f *FIFO[T]) Update(obj T) error { return f.push(Updated, obj) }

// Delete queues a Deleted delta (FinalStateUnknown false).
func (f *FIFO[T]) Delete(obj T) error { return f.push(Deleted, obj) }

func (f *FIFO[T]) push(t DeltaType, obj T) error {
	obj, key, err := f.prepare(obj)
	if err != nil {
		return fmt.Errorf("fifo: %s: %w", t, err)
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return ErrClosed
	}
	f.populated = true
	f.checkSyncedLocked()
	f.appendLocked(Delta[T]{Type: t, Object: obj, Key: key})
	wake := f.waiting > 0
	f.mu.Unlock()
	if wake {
		f.signal()
	}
	return nil
}

// prepare validates and transforms obj and computes its key.
func (f *FIFO[T]) prepare(obj T) (T, string, error) {
	if isNil(obj) {
		return obj, "", fmt.Errorf("%w: nil", ErrInvalidObject)
	}
	if f.transform != nil {
		out, err := f.transform(obj)
		if err != nil {
			return obj, "", fmt.Errorf("transform %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		if isNil(out) {
			return obj, "", fmt.Errorf("%w: transform of %s/%s returned nil", ErrInvalidObject, obj.GetNamespace(), obj.GetName())
		}
		obj = out
	}
	key, err := f.keyFunc(obj)
	if err != nil {
		return obj, "", fmt.Errorf("%w: key of %s/%s: %w", ErrInvalidObject, obj.GetNamespace(), obj.GetName(), err)
	}
	return obj, key, nil
}

// Bookmark queues a Bookmark delta carrying resourceVersion. Bookmarks do
// not count as population for HasSynced.
func (f *FIFO[T]) Bookmark(resourceVersion string) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return ErrClosed
	}
	f.appendLocked(Delta[T]{Type: Bookmark, ResourceVersion: resourceVersion})
	wake := f.waiting > 0
	f.mu.Unlock()
	if wake {
		f.signal()
	}
	return nil
}

// Replace queues the result of a relist as ONE atomic batch, popped by a
// single Pop call: a Replaced delta for every object of objs, in order, then
// a Deleted delta with FinalStateUnknown for every key the consumer would
// have after the deltas already queued (KnownObjects updated by the queued
// and in-flight deltas) that objs does not contain, carrying the last state
// known for it. Every delta of the batch carries resourceVersion. Nothing is
// queued if objs is empty and no deletion is needed; nothing at all is queued
// if an object is invalid or fails Transform.
func (f *FIFO[T]) Replace(objs []T, resourceVersion string) error {
	batch := make([]Delta[T], 0, len(objs))
	for _, obj := range objs {
		obj, key, err := f.prepare(obj)
		if err != nil {
			return fmt.Errorf("fifo: replace: %w", err)
		}
		batch = append(batch, Delta[T]{Type: Replaced, Object: obj, Key: key, ResourceVersion: resourceVersion})
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	last, order := f.pendingLocked()
	var knownKeys []string
	if f.known != nil {
		knownKeys = f.known.ListKeys()
	}
	// The listed keys, for the deletions; none can be missing when nothing
	// is known or queued (the initial list), so the set is not built then.
	var listed map[string]struct{}
	if len(order) > 0 || len(knownKeys) > 0 {
		listed = make(map[string]struct{}, len(objs))
		for i := range batch {
			listed[batch[i].Key] = struct{}{}
		}
	}
	for _, key := range order {
		if _, ok := listed[key]; ok {
			continue
		}
		if d := last[key]; d.Type != Deleted {
			batch = append(batch, Delta[T]{Type: Deleted, Object: d.Object, Key: key, ResourceVersion: resourceVersion, FinalStateUnknown: true})
		}
	}
	if f.known != nil {
		for _, key := range knownKeys {
			if _, ok := listed[key]; ok {
				continue
			}
			if _, ok := last[key]; ok {
				continue // decided above from its last queued delta
			}
			obj, ok := f.known.GetByKey(key)
			if !ok {
				f.logger.Warn("fifo: key listed by KnownObjects but not found; queueing a deletion without object", "key", key)
			}
			batch = append(batch, Delta[T]{Type: Deleted, Object: obj, Key: key, ResourceVersion: resourceVersion, FinalStateUnknown: true})
		}
	}
	for i, d := range batch {
		n := int32(0)
		if i == 0 {
			n = int32(len(batch))
		}
		f.queue.Push(slot[T]{d: d, n: n, replace: true})
	}
	if !f.populated {
		f.populated = true
		f.initialPopulation = f.queue.Len()
	}
	f.checkSyncedLocked()
	f.logger.Debug("fifo: replace queued", "resourceVersion", resourceVersion, "listed", len(objs), "deltas", len(batch), "queued", f.queue.Len())
	if len(batch) > 0 {
		f.signal()
	}
	return nil
}

// Resync queues a Sync delta for every object of KnownObjects whose key has
// no delta queued or in flight (that delta will bring a newer state; a Sync
// of the older known state after it would roll the consumer back). It does
// nothing without KnownObjects.
func (f *FIFO[T]) Resync() error {
	if f.known == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	last, _ := f.pendingLocked()
	queued := false
	for _, key := range f.known.ListKeys() {
		if _, ok := last[key]; ok {
			continue
		}
		obj, ok := f.known.GetByKey(key)
		if !ok {
			continue
		}
		f.appendLocked(Delta[T]{Type: Sync, Object: obj, Key: key})
		queued = true
	}
	if queued {
		f.signal()
	}
	return nil
}

// pendingLocked returns the last delta of every key that has one in flight
// or queued, and those keys in first-seen order.
func (f *FIFO[T]) pendingLocked() (map[string]Delta[T], []string) {
	last := map[string]Delta[T]{}
	var order []string
	see := func(d Delta[T]) {
		if d.Type == Bookmark {
			return
		}
		if _, ok := last[d.Key]; !ok {
			order = append(order, d.Key)
		}
		last[d.Key] = d
	}
	if f.popping {
		for _, d := range f.inflight {
			see(d)
		}
	}
	f.queue.Each(func(s *slot[T]) bool {
		see(s.d)
		return true
	})
	return last, order
}

// Pop waits for the next unit — one whole Replace batch, or a run of single
// deltas: the one at the head of the queue and, up to Options.MaxRun (default
// 1), the single deltas queued right behind it — and calls process with it,
// outside the FIFO's lock, so producers are never blocked by a slow
// consumer. A run never holds a delta of a Replace batch, so a batch whose
// first delta is Replaced, or a Deleted with FinalStateUnknown, is a Replace
// batch (apply it atomically); any other is a run (apply its deltas in
// order). The unit is removed from the queue whether or not process fails;
// Pop returns process's error as is.
//
// batch is only valid during the call: process must neither keep nor modify
// it (the FIFO reuses the slice and reads it while process runs). process
// may push (Add, Replace, Resync…) but must not call Pop: only one Pop runs
// at a time, and concurrent calls wait their turn, so a single consumer
// goroutine is the normal use.
//
// Pop returns ctx.Err() when ctx is done, and an error wrapping ErrClosed
// once the FIFO is closed (queued deltas are then dropped).
func (f *FIFO[T]) Pop(ctx context.Context, process func(batch []Delta[T]) error) error {
	if process == nil {
		return errors.New("fifo: Pop with a nil process func")
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return ErrClosed
		}
		if !f.popping && f.queue.Len() > 0 {
			break
		}
		f.waiting++
		f.mu.Unlock()
		var err error
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-f.done:
			err = ErrClosed
		case <-f.wake:
		}
		f.mu.Lock()
		f.waiting--
		f.mu.Unlock()
		if err != nil {
			return err
		}
	}
	// f.mu is held.
	head := f.queue.Front()
	n, run := int(head.n), !head.replace
	batch := f.inflight[:0]
	if cap(batch) < n {
		batch = make([]Delta[T], 0, n) // a relist: one allocation, not a doubling per size
	}
	for range n {
		s, _ := f.queue.Pop()
		batch = append(batch, s.d)
	}
	if run {
		// A run: the single deltas right behind, up to maxRun.
		for n < f.maxRun && f.queue.Len() > 0 && !f.queue.Front().replace {
			s, _ := f.queue.Pop()
			batch = append(batch, s.d)
			n++
		}
	}
	f.inflight = batch
	f.popping = true
	// The deltas of this unit that belong to the initial population: that
	// population is a prefix of the queue, so they are the first ones, and
	// there are none when the first Replace comes after this Pop took its
	// unit (the deltas in flight then were not counted in it).
	initial := min(n, f.initialPopulation)
	f.mu.Unlock()

	defer f.donePop(initial)
	return process(batch)
}

// donePop ends a Pop (also when process panics); initial is the number of
// its deltas that the initial population counted.
func (f *FIFO[T]) donePop(initial int) {
	f.mu.Lock()
	clear(f.inflight)
	if cap(f.inflight) > maxKeptBatch {
		f.inflight = nil
	} else {
		f.inflight = f.inflight[:0]
	}
	f.popping = false
	f.initialPopulation -= initial
	f.checkSyncedLocked()
	more := f.queue.Len() > 0 && f.waiting > 0
	f.mu.Unlock()
	if more {
		f.signal() // let a waiting Pop take the next unit
	}
}

// Close stops the FIFO: waiting and later Pops return ErrClosed, pushes
// return ErrClosed, and the queued deltas are dropped. A Pop whose process
// func is running finishes normally. Close is idempotent.
func (f *FIFO[T]) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	if n := f.queue.Len(); n > 0 {
		f.logger.Debug("fifo: closed with deltas queued", "dropped", n)
	}
	f.queue.Clear()
	close(f.done)
}

// Len returns the number of queued deltas, not counting the unit a Pop is
// processing. Export it as a gauge: it grows when the consumer is slower
// than the watch.
func (f *FIFO[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue.Len()
}

// HasSynced reports whether the initial population has been processed: the
// deltas queued up to and including the first Replace batch have all been
// popped and their process func has returned; or, if Add, Update or Delete
// came before any Replace (the consumer populated the FIFO by hand), as soon
// as that first push happened. A process func that returned an error still
// counts as processed. Once true it stays true. These are client-go's
// FIFO semantics (populated, initialPopulationCount).
func (f *FIFO[T]) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced
}

// Synced returns a channel closed when HasSynced becomes true.
func (f *FIFO[T]) Synced() <-chan struct{} { return f.syncedCh }

func (f *FIFO[T]) checkSyncedLocked() {
	if !f.synced && f.populated && f.initialPopulation == 0 {
		f.synced = true
		close(f.syncedCh)
	}
}

// signal wakes one waiting Pop. Callers signal only when f.waiting > 0 (or
// may), so a busy consumer costs producers no channel operation; a token
// left behind only causes one spurious loop in the next wait.
func (f *FIFO[T]) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// appendLocked queues the single delta d at the tail.
func (f *FIFO[T]) appendLocked(d Delta[T]) {
	f.queue.Push(slot[T]{d: d, n: 1})
}

// isNil reports whether v is nil or a typed nil pointer (or map, slice…).
func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
