package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/fifo"
	"kloop.dev/kloop/reflector"
)

// Object is what an informer caches: a Kubernetes object with metadata, in
// practice a pointer such as *corev1.Pod, *unstructured.Unstructured,
// *metav1.PartialObjectMetadata or a pointer to a user's CRD struct.
type Object = cache.Object

// Errors returned (wrapped) by informers. Test them with errors.Is.
var (
	// ErrStopped: the informer's Run has returned; it cannot be restarted.
	ErrStopped = errors.New("informer: stopped")
	// ErrAlreadyRunning: Run was called twice.
	ErrAlreadyRunning = errors.New("informer: Run called more than once")
	// ErrNotRegistered: RemoveHandler with a Registration of another
	// informer, or one already removed.
	ErrNotRegistered = errors.New("informer: handler not registered")
)

// Options configures an [Informer]. The zero value works.
type Options[T Object] struct {
	// Name identifies the informer in logs. Default: the Go type of T.
	Name string
	// Logger receives diagnostics. Default: slog.Default() (Go's convention; set slog.New(slog.DiscardHandler) to silence it).
	Logger *slog.Logger

	// KeepManagedFields keeps metadata.managedFields in cached objects.
	// Default false: they are dropped before caching (they are about half
	// of a typical object and controllers do not read them).
	KeepManagedFields bool
	// DisableInterning keeps every decoded string, map and slice as is.
	// Default false: strings that repeat across objects — in metadata the
	// namespace, label keys and values, annotation keys (and values up to 64
	// bytes), finalizers, owner references' apiVersion, kind, name and uid; every
	// other string up to 64 bytes; every map key of an unstructured object
	// — are replaced by one canonical copy held by the informer; equal
	// labels, annotations, other map[string]string (a CR's parameters, a
	// node selector, a ConfigMap's data) and resource lists of typed
	// objects become one shared map; and slices lose the spare capacity
	// the decoder left.
	// Strings and maps no object brings any more are released by the
	// informer's tables within two generations (see the package doc).
	DisableInterning bool
	// InternUpdates interns an updated object whole, as an added one.
	// Default false: an object whose previous version is cached has only
	// its metadata interned (namespace, labels and annotations shared with
	// the cached version or other objects when equal, finalizers, owner
	// references); the rest keeps its decoded strings. Walking a whole Pod
	// against its cached version costs more than the rest of an event's
	// path from the watch to a handler; objects updated often then hold
	// their own copies of spec and status strings.
	InternUpdates bool
	// Transform is applied to every object received from the server, after
	// the managedFields strip, before it is queued (on the watch's
	// goroutine); what it returns is interned as it is cached.
	// It may modify obj in place and return it (nobody else holds it yet),
	// but must not make it share memory with anything else (another
	// object, a map or slice of its own kept for every object): the
	// informer interns what it returns in place, writing the first map of
	// each content it sees.
	// It must not fail on a valid object: an error (or a nil result) is
	// logged and the object is cached as it was before Transform, because
	// refusing one object would refuse the whole relist it came in.
	// Default: none.
	Transform func(obj T) (T, error)

	// Indexers are extra cache indexes, next to the namespace index.
	// Default: none; more can be added with AddIndexers.
	Indexers map[string]cache.IndexFunc[T]

	// ResyncPeriod is the resync period of handlers whose HandlerOptions
	// leave it 0. Default 0: DefaultResyncPeriod (10 h); NoResync (any
	// negative value) turns resyncs off; under MinResyncPeriod (1 s) is an
	// error.
	ResyncPeriod time.Duration

	// DetectMutations makes the cache report objects mutated after they
	// were cached (see cache.Options.DetectMutations); OnMutation receives
	// each report. For tests. Default: off.
	DetectMutations bool
	OnMutation      func(err error)

	// Reflector configures the list and watch. Default: the zero
	// reflector.Options (its Name and Logger default to this informer's).
	Reflector reflector.Options
}

func (o *Options[T]) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = reflect.TypeFor[T]().String()
	}
	if o.ResyncPeriod == 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	if o.Reflector.Name == "" {
		o.Reflector.Name = o.Name
	}
	if o.Reflector.Logger == nil {
		o.Reflector.Logger = o.Logger
	}
}

func (o *Options[T]) validate() error {
	if o.OnMutation != nil && !o.DetectMutations {
		return errors.New("informer: Options.OnMutation is set but DetectMutations is false")
	}
	return checkResync("Options.ResyncPeriod", o.ResyncPeriod)
}

// Informer keeps a cache of the objects of one kind and scope in step with
// the API server and notifies handlers of every change, after the cache has
// it. See the package documentation.
//
// An Informer[T] is a typed view of a shared, type-erased informer: the
// Factory hands out views of one informer to every caller that asks for the
// same kind and scope.
//
// A Factory's informer of several namespaces (FactoryOptions.DefaultNamespaces,
// ObjectOptions.Namespaces) is a view of one shared informer per namespace:
// one list and watch each, read and handled as one (see multi).
type Informer[T Object] struct {
	// s is the shared informer; nil when multi is set.
	s *shared
	// multi, when not nil, holds the per-namespace informers of a view of
	// several namespaces.
	multi *multi
}

// New returns an informer fed by lw. Nothing runs until Run.
func New[T Object](lw reflector.ListerWatcher[T], opts Options[T]) (*Informer[T], error) {
	if lw == nil || isNil(lw) {
		return nil, errors.New("informer: nil ListerWatcher")
	}
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	var elw reflector.ListerWatcher[Object]
	if same, ok := any(lw).(reflector.ListerWatcher[Object]); ok {
		elw = same
	} else {
		elw = erasedLW[T]{lw}
	}
	sopts := sharedOptions{
		name:            opts.Name,
		logger:          opts.Logger,
		lean:            newLean(opts.KeepManagedFields, opts.DisableInterning, opts.InternUpdates, eraseTransform(opts.Transform), opts.Logger),
		resync:          opts.ResyncPeriod,
		detectMutations: opts.DetectMutations,
		onMutation:      opts.OnMutation,
		reflector:       opts.Reflector,
	}
	if len(opts.Indexers) > 0 {
		sopts.indexers = make(map[string]cache.IndexFunc[Object], len(opts.Indexers))
		for name, fn := range opts.Indexers {
			if fn == nil {
				return nil, fmt.Errorf("informer: %w: index %q has a nil IndexFunc", cache.ErrIndexConflict, name)
			}
			sopts.indexers[name] = eraseIndexFunc(fn)
		}
	}
	s, err := newShared(elw, sopts)
	if err != nil {
		return nil, err
	}
	return &Informer[T]{s: s}, nil
}

// Run lists and watches, updates the cache and notifies the handlers until
// ctx is cancelled; then it stops every goroutine it started and returns
// nil. Calling it twice is an error (ErrAlreadyRunning).
func (i *Informer[T]) Run(ctx context.Context) error {
	if i.multi != nil {
		return errors.New("informer: an informer of several namespaces runs with its Factory's Start")
	}
	return i.s.run(ctx)
}

// AddHandler registers h. A handler added after Run started first receives
// an OnAdd (initialList true) for every cached object, then every later
// change. It is an error (ErrStopped) to add a handler after Run returned.
func (i *Informer[T]) AddHandler(h Handler[T], opts HandlerOptions) (*Registration, error) {
	if h == nil || isNil(h) {
		return nil, errors.New("informer: nil Handler")
	}
	var flush func()
	if f, ok := h.(Flusher); ok {
		flush = f.Flush
	}
	if i.multi != nil {
		return i.multi.addHandler(adaptHandler(h), flush, opts)
	}
	return i.s.addHandler(adaptHandler(h), flush, opts)
}

// RemoveHandler unregisters a handler: it receives no notification after
// RemoveHandler returns, except one already being delivered (and, for a
// Flusher, the Flush of that notification's run).
func (i *Informer[T]) RemoveHandler(r *Registration) error {
	if i.multi != nil {
		return i.multi.removeHandler(r)
	}
	return i.s.removeHandler(r)
}

// HasSynced reports whether the cache holds the initial list (handlers may
// not have been notified yet: see Registration.HasSynced).
func (i *Informer[T]) HasSynced() bool {
	if i.multi != nil {
		return i.multi.hasSynced()
	}
	return i.s.fifo.HasSynced()
}

// WaitForCacheSync blocks until HasSynced, or until ctx is done (then it
// returns ctx's error, wrapped) or the informer stopped without syncing
// (ErrStopped, wrapped).
func (i *Informer[T]) WaitForCacheSync(ctx context.Context) error {
	if i.multi != nil {
		return i.multi.waitForSync(ctx)
	}
	return i.s.waitForSync(ctx)
}

// LastSyncResourceVersion returns the resourceVersion the reflector has
// reached ("" before the first list). An informer of several namespaces
// has no one resourceVersion: "" (ask Factory for the informer of one
// namespace).
func (i *Informer[T]) LastSyncResourceVersion() string {
	if i.multi != nil {
		return ""
	}
	return i.s.refl.LastSyncResourceVersion()
}

// Get returns the cached object namespace/name (namespace "" for a
// cluster-scoped object). It is shared: do not mutate it.
func (i *Informer[T]) Get(namespace, name string) (T, bool) {
	s := i.s
	if i.multi != nil {
		if s = i.multi.byNS[namespace]; s == nil {
			var zero T
			return zero, false
		}
	}
	o, ok := s.indexer.Get(namespace, name)
	return as[T](o), ok
}

// GetByKey returns the cached object under key ("namespace/name" or
// "name"). It is shared: do not mutate it.
func (i *Informer[T]) GetByKey(key string) (T, bool) {
	s := i.s
	if i.multi != nil {
		ns, _, _ := strings.Cut(key, "/")
		if s = i.multi.byNS[ns]; s == nil {
			var zero T
			return zero, false
		}
	}
	o, ok := s.indexer.GetByKey(key)
	return as[T](o), ok
}

// List returns every cached object in a new slice, in no particular order.
// The objects are shared: do not mutate them.
func (i *Informer[T]) List() []T {
	if i.multi != nil {
		return convert[T](i.multi.list())
	}
	return convert[T](i.s.indexer.List())
}

// ListNamespace returns the cached objects of one namespace ("" for the
// cluster-scoped ones). The objects are shared: do not mutate them.
func (i *Informer[T]) ListNamespace(namespace string) []T {
	s := i.s
	if i.multi != nil {
		if s = i.multi.byNS[namespace]; s == nil {
			return nil
		}
	}
	objs, _ := s.indexer.ByIndex(cache.NamespaceIndex, namespace)
	return convert[T](objs)
}

// ByIndex returns the cached objects whose index indexName has value.
// The objects are shared: do not mutate them.
func (i *Informer[T]) ByIndex(indexName, value string) ([]T, error) {
	if i.multi != nil {
		objs, err := i.multi.byIndex(indexName, value)
		if err != nil {
			return nil, err
		}
		return convert[T](objs), nil
	}
	objs, err := i.s.indexer.ByIndex(indexName, value)
	if err != nil {
		return nil, err
	}
	return convert[T](objs), nil
}

// AddIndexers adds cache indexes, built at once from the cached objects.
func (i *Informer[T]) AddIndexers(indexers map[string]cache.IndexFunc[T]) error {
	erased := make(map[string]cache.IndexFunc[Object], len(indexers))
	for name, fn := range indexers {
		if fn == nil {
			return fmt.Errorf("informer: %w: index %q has a nil IndexFunc", cache.ErrIndexConflict, name)
		}
		erased[name] = eraseIndexFunc(fn)
	}
	if i.multi != nil {
		return i.multi.addIndexers(erased)
	}
	return i.s.indexer.AddIndexers(erased)
}

// HasIndex reports whether the cache has an index named indexName.
func (i *Informer[T]) HasIndex(indexName string) bool {
	s := i.s
	if i.multi != nil {
		s = i.multi.order[0] // AddIndexers adds to all of them
	}
	for _, n := range s.indexer.IndexNames() {
		if n == indexName {
			return true
		}
	}
	return false
}

// Len returns the number of cached objects.
func (i *Informer[T]) Len() int {
	if i.multi != nil {
		n := 0
		for _, s := range i.multi.order {
			n += s.indexer.Len()
		}
		return n
	}
	return i.s.indexer.Len()
}

// Check reports the cached objects mutated after they were cached; only
// with Options.DetectMutations (see cache.Indexer.Check).
func (i *Informer[T]) Check() error {
	if i.multi != nil {
		var errs []error
		for _, s := range i.multi.order {
			errs = append(errs, s.indexer.Check())
		}
		return errors.Join(errs...)
	}
	return i.s.indexer.Check()
}

// Queued returns the number of deltas received from the server that wait
// to be applied to the cache, not counting the run being applied (at most
// 64): export it as a gauge.
func (i *Informer[T]) Queued() int {
	if i.multi != nil {
		n := 0
		for _, s := range i.multi.order {
			n += s.fifo.Len()
		}
		return n
	}
	return i.s.fifo.Len()
}

// sharedOptions is Options with T erased.
type sharedOptions struct {
	name            string
	logger          *slog.Logger
	lean            *lean // nil: nothing to strip, transform or intern
	indexers        map[string]cache.IndexFunc[Object]
	resync          time.Duration
	detectMutations bool
	onMutation      func(error)
	reflector       reflector.Options
}

// shared is the informer proper, on type-erased objects.
type shared struct {
	name    string
	logger  *slog.Logger
	resync  time.Duration // default resync period of handlers (≤ 0: off)
	indexer *cache.Indexer[Object]
	fifo    *fifo.FIFO[Object]
	refl    *reflector.Reflector[Object]
	// lean interns each object before it is cached (nil: nothing to do);
	// called by the pop loop only.
	lean *lean
	// labels and fields are the selectors the informer lists and watches
	// with (nil: none; set by the factory).
	labels labels.Selector
	fields fields.Selector

	// mu guards listeners, state and runCtx, and serializes "apply a unit of
	// deltas to the cache and queue its notifications" with handler
	// registration and resyncs, so that every handler sees each change
	// exactly once and in the cache's order.
	mu        sync.Mutex
	listeners []*listener
	state     runState
	runCtx    context.Context
	// synced: the initial list is in the cache and its notifications are
	// queued; listeners added from then on know their sync point at once.
	synced bool

	// fresh tells readers how far the cache has caught up (see
	// freshness.go). Its own lock: inline handlers run under mu, and may
	// read.
	fresh freshness

	// done is closed when run has stopped (state stopped).
	done chan struct{}
	// dropped is closed by the factory when it drops the informer, its
	// kind no longer served (Informer.Dropped); nil outside a factory.
	dropped chan struct{}

	// events counts the deltas applied to the cache (InformerStats).
	events atomic.Uint64

	// notes is the pop loop's reused buffer of notifications.
	notes []notification
	// wg counts the goroutines started by run.
	wg sync.WaitGroup
}

type runState uint8

const (
	notStarted runState = iota
	running
	stopped
)

func newShared(lw reflector.ListerWatcher[Object], o sharedOptions) (*shared, error) {
	ix, err := cache.New(cache.Options[Object]{
		Indexers:        o.indexers,
		DetectMutations: o.detectMutations,
		OnMutation:      o.onMutation,
		Logger:          o.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	q, err := fifo.New(fifo.Options[Object]{KnownObjects: ix, Transform: o.lean.fifoTransform(), MaxRun: maxRun, Logger: o.logger})
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	r, err := reflector.New[Object](lw, q, o.reflector)
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	return &shared{name: o.name, logger: o.logger.With("informer", o.name), resync: o.resync, indexer: ix, fifo: q, refl: r, lean: o.lean, done: make(chan struct{})}, nil
}

func (s *shared) run(ctx context.Context) error {
	s.mu.Lock()
	if s.state != notStarted {
		s.mu.Unlock()
		return ErrAlreadyRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.state = running
	s.runCtx = ctx
	for _, l := range s.listeners {
		s.startLocked(l)
	}
	s.mu.Unlock()

	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		if err := s.refl.Run(ctx); err != nil {
			s.logger.Error("informer: reflector", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
		case <-s.fifo.Synced():
			s.markSynced()
		}
	}()
	go func() {
		defer s.wg.Done()
		for {
			err := s.fifo.Pop(ctx, s.process)
			if ctx.Err() != nil || errors.Is(err, fifo.ErrClosed) {
				return
			}
			if err != nil {
				s.logger.Error("informer: processing deltas", "err", err)
			}
		}
	}()
	<-ctx.Done()
	s.mu.Lock()
	s.state = stopped
	close(s.done)
	s.mu.Unlock()
	s.fresh.stop()
	s.fifo.Close()
	s.wg.Wait()
	return nil
}

// startLocked starts l's goroutine; s.mu is held and s.state is running.
func (s *shared) startLocked(l *listener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.removed {
		return
	}
	l.started = true
	s.wg.Add(1)
	ctx := s.runCtx
	go func() {
		defer s.wg.Done()
		l.run(ctx)
	}()
}

// markSynced records, for every listener, where its initial list ends.
func (s *shared) markSynced() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced = true
	for _, l := range s.listeners {
		l.mu.Lock()
		at := l.enq
		l.mu.Unlock()
		l.markSyncAt(at)
	}
}

func (s *shared) waitForSync(ctx context.Context) error {
	select {
	case <-s.fifo.Synced():
		return nil
	case <-s.done:
		select {
		case <-s.fifo.Synced():
			return nil
		default:
		}
		return fmt.Errorf("informer %s: waiting for cache sync: %w", s.name, ErrStopped)
	case <-ctx.Done():
		return fmt.Errorf("informer %s: waiting for cache sync: %w", s.name, ctx.Err())
	}
}

func (s *shared) addHandler(deliver func(notification), flush func(), o HandlerOptions) (*Registration, error) {
	if err := checkResync("HandlerOptions.ResyncPeriod", o.ResyncPeriod); err != nil {
		return nil, err
	}
	period := o.ResyncPeriod
	if period == 0 {
		period = s.resync
	}
	l := newListener(s, deliver, flush, period, o.Inline)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stopped {
		return nil, ErrStopped
	}
	// Synthetic adds for what is cached: the cache only changes under s.mu,
	// so the handler gets each object exactly once, then every later change.
	objs := s.indexer.List()
	if len(objs) > 0 {
		notes := make([]notification, len(objs))
		for i, obj := range objs {
			notes[i] = notification{typ: noteAdd, initial: true, obj: obj}
		}
		l.notify(notes)
	}
	if s.synced {
		l.markSyncAt(uint64(len(objs)))
	}
	s.listeners = append(s.listeners, l)
	if s.state == running {
		s.startLocked(l)
	}
	return &Registration{l: l}, nil
}

func (s *shared) removeHandler(r *Registration) error {
	if r == nil {
		return ErrNotRegistered
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.listeners {
		if l == r.l {
			s.listeners = append(s.listeners[:i], s.listeners[i+1:]...)
			l.remove()
			return nil
		}
	}
	return ErrNotRegistered
}

// resyncListener queues OnUpdate(obj, obj) for every cached object to l
// only. Under s.mu the cache and the notifications queued so far agree, so
// the resync never rolls a handler back to an older state.
func (s *shared) resyncListener(l *listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs := s.indexer.List()
	if len(objs) == 0 {
		return
	}
	notes := make([]notification, len(objs))
	for i, obj := range objs {
		notes[i] = notification{typ: noteUpdate, old: obj, obj: obj}
	}
	l.notify(notes)
}

// maxRun is the most watch events one FIFO Pop hands to process: a burst
// costs one wake-up of the pop loop, one FIFO lock and one round of
// notifications per run instead of per event, and delays the handlers of a
// run's first event by the cache updates of at most the rest of the run
// (well under a millisecond).
const maxRun = 64

// process applies one unit of deltas to the cache — a relist batch
// atomically, or a run of watch deltas one after the other — then queues the
// notifications to every handler, in the order of the cache's changes. It is
// the FIFO's process func.
func (s *shared) process(batch []fifo.Delta[Object]) error {
	s.events.Add(uint64(len(batch)))
	initial := !s.fifo.HasSynced()
	s.mu.Lock()
	defer s.mu.Unlock()
	notes := s.notes[:0]
	if len(batch) > 0 && (batch[0].Type == fifo.Replaced || batch[0].FinalStateUnknown) {
		notes = s.applyReplace(batch, initial, notes)
	} else {
		for i := range batch {
			notes = s.apply(&batch[i], initial, false, notes)
		}
	}
	if len(batch) > 0 {
		s.fresh.advance(&batch[len(batch)-1])
	}
	for _, l := range s.listeners {
		l.notify(notes)
	}
	clear(notes)
	if cap(notes) > 1024 {
		notes = nil
	}
	s.notes = notes[:0]
	return nil
}

// apply applies one delta to the cache and appends its notification.
// interned: d.Object was interned already (see applyReplace).
func (s *shared) apply(d *fifo.Delta[Object], initial, interned bool, notes []notification) []notification {
	switch d.Type {
	case fifo.Added, fifo.Updated, fifo.Replaced, fifo.Sync:
		if s.lean.interns() && !interned {
			// The pop loop is the cache's only writer: what Get returns
			// is what Swap replaces.
			prev, _ := s.indexer.GetByKey(d.Key)
			s.lean.intern(d.Object, prev, d.Type == fifo.Updated)
		}
		old, replaced, err := s.indexer.Swap(d.Object)
		if err != nil {
			s.logger.Error("informer: caching object", "key", d.Key, "err", err)
			return notes
		}
		if replaced {
			if d.Type == fifo.Replaced && unchanged(old, d.Object) {
				return notes
			}
			return append(notes, notification{typ: noteUpdate, old: old, obj: d.Object})
		}
		return append(notes, notification{typ: noteAdd, initial: initial, obj: d.Object})
	case fifo.Deleted:
		old, deleted, err := s.indexer.LoadAndDelete(d.Key)
		if err != nil {
			s.logger.Error("informer: deleting object", "key", d.Key, "err", err)
			return notes
		}
		obj := d.Object
		if obj == nil || isNil(obj) {
			obj = nil
			if deleted {
				obj = old
			}
		}
		if !deleted && !d.FinalStateUnknown {
			// A deletion of an object never cached (for example one the
			// transform dropped): nobody was told it existed.
			return notes
		}
		return append(notes, notification{typ: noteDelete, unknown: d.FinalStateUnknown, key: d.Key, obj: obj})
	}
	return notes // Bookmark: the reflector tracks its position.
}

// applyReplace applies a relist batch — Replaced for every listed object,
// Deleted (FinalStateUnknown) for every cached object missing — with one
// atomic cache Replace, so that no reader sees a half-replaced cache.
func (s *shared) applyReplace(batch []fifo.Delta[Object], initial bool, notes []notification) []notification {
	objs := make([]Object, 0, len(batch))
	rv := ""
	for i := range batch {
		d := &batch[i]
		rv = d.ResourceVersion
		if d.Type == fifo.Replaced {
			objs = append(objs, d.Object)
		}
	}
	start := len(notes)
	// A large list: the cache builds its new content (cache.ReplaceFrom)
	// on another goroutine while this one interns the objects, handing
	// them over a batch at a time, so that the two overlap instead of
	// following each other.
	var batches chan []Object
	var built chan error
	if len(objs) >= pipelinedReplace {
		batches = make(chan []Object, 4)
		built = make(chan error, 1)
		go func() { built <- s.indexer.ReplaceFrom(len(objs), batches, rv) }()
	}
	sent, listed := 0, 0 // objects handed to the cache; Replaced deltas done
	for i := range batch {
		d := &batch[i]
		switch {
		case d.Type == fifo.Replaced:
			old, ok := s.indexer.GetByKey(d.Key)
			s.lean.intern(d.Object, old, false) // before the Replace publishes it
			if listed++; batches != nil && listed-sent == replaceBatch {
				batches <- objs[sent:listed] // interned: the cache may read it
				sent = listed
			}
			if ok {
				if !unchanged(old, d.Object) {
					notes = append(notes, notification{typ: noteUpdate, old: old, obj: d.Object})
				}
			} else {
				notes = append(notes, notification{typ: noteAdd, initial: initial, obj: d.Object})
			}
		case d.Type == fifo.Deleted:
			obj := d.Object
			if obj != nil && isNil(obj) {
				obj = nil
			}
			if obj == nil {
				if old, ok := s.indexer.GetByKey(d.Key); ok {
					obj = old
				}
			}
			notes = append(notes, notification{typ: noteDelete, unknown: d.FinalStateUnknown, key: d.Key, obj: obj})
		}
	}
	var err error
	if batches != nil {
		batches <- objs[sent:]
		close(batches)
		err = <-built
	} else {
		err = s.indexer.Replace(objs, rv)
	}
	if err != nil {
		// An object the cache refuses (an index func failed): apply the
		// batch delta by delta so that the others still get in. The
		// objects are interned already, and must not be interned again:
		// a map they took from the interner's tables may have left them
		// since (a large list inserts generations of maps), and interning
		// it again would write into it as a new canonical map while the
		// cached objects sharing it are read
		// (TestReplaceFallbackWritesNoCachedMap).
		s.logger.Error("informer: replacing cache content; applying one by one", "err", err)
		notes = notes[:start]
		for i := range batch {
			notes = s.apply(&batch[i], initial, true, notes)
		}
	}
	return notes
}

// Relists of at least pipelinedReplace objects are cached by a pipeline
// (see applyReplace) in batches of replaceBatch objects.
const (
	pipelinedReplace = 1024
	replaceBatch     = 256
)

// unchanged reports whether obj, relisted, is the state old already
// cached: the same (non-empty) resourceVersion. client-go treats such a
// Replaced delta as a resync, delivered only to handlers due for one; here
// resyncs are each handler's own, so it is no notification at all.
func unchanged(old, obj Object) bool {
	rv := obj.GetResourceVersion()
	return rv != "" && old != nil && old.GetResourceVersion() == rv
}

// isNil reports whether v is nil or a typed nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
