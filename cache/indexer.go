package cache

import (
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is what an [Indexer] stores: any Kubernetes object with object
// metadata, in practice a pointer such as *corev1.Pod,
// *unstructured.Unstructured, *metav1.PartialObjectMetadata or a pointer to a
// user's CRD struct.
type Object interface {
	metav1.Object
	runtime.Object
}

// IndexFunc computes the values under which an object is indexed. It may
// return no value (the object is then in no bucket of that index) or several;
// duplicates are ignored. It must be deterministic, must not modify obj, and
// must not call the Indexer (it may run under the Indexer's lock).
type IndexFunc[T Object] func(obj T) ([]string, error)

// NamespaceIndex is the name of the index by namespace that every [Indexer]
// has unless [Options.DisableNamespaceIndex] is set. Cluster-scoped objects
// are in its bucket "".
const NamespaceIndex = "namespace"

// Errors returned (wrapped) by the Indexer. Test them with errors.Is.
var (
	// ErrInvalidObject: a nil object or one with an empty name.
	ErrInvalidObject = errors.New("invalid object")
	// ErrUnknownIndex: an index name that was never registered.
	ErrUnknownIndex = errors.New("unknown index")
	// ErrIndexConflict: an index name that is empty, already registered, or
	// has a nil IndexFunc.
	ErrIndexConflict = errors.New("index conflict")
	// ErrMutationDetectionOff: Check was called on an Indexer created without
	// Options.DetectMutations.
	ErrMutationDetectionOff = errors.New("mutation detection is off (set Options.DetectMutations)")
)

// Options configures an [Indexer]. The zero value is valid.
type Options[T Object] struct {
	// Indexers are extra indexes by name, next to the namespace index.
	// Default: none. More can be added later with [Indexer.AddIndexers].
	// The name NamespaceIndex is taken unless DisableNamespaceIndex is set.
	Indexers map[string]IndexFunc[T]

	// DisableNamespaceIndex drops the default index by namespace.
	// Default: false (the index "namespace" exists).
	DisableNamespaceIndex bool

	// DetectMutations makes the Indexer keep a deep copy of every stored
	// object and report any object that was modified after it was stored —
	// the bug of mutating an object read from the cache. It costs one
	// DeepCopy per write and doubles memory: use it in tests. Mutations are
	// found when a mutated object is replaced or deleted, and by [Indexer.Check].
	// Default: false.
	DetectMutations bool

	// OnMutation is called once for every mutation found (the error is a
	// *MutationError), outside the Indexer's lock; a test typically passes a
	// func that calls t.Error. Only used with DetectMutations. Default: nil
	// (mutations are only reported by Check).
	OnMutation func(err error)

	// Logger receives diagnostics. Default: slog.Default() (Go's convention; set slog.New(slog.DiscardHandler) to silence it).
	Logger *slog.Logger
}

func (o *Options[T]) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

func (o *Options[T]) validate() error {
	for name, fn := range o.Indexers {
		if err := checkIndex(name, fn, o.DisableNamespaceIndex); err != nil {
			return err
		}
	}
	if o.OnMutation != nil && !o.DetectMutations {
		return fmt.Errorf("cache: Options.OnMutation is set but DetectMutations is false")
	}
	return nil
}

func checkIndex[T Object](name string, fn IndexFunc[T], noNamespace bool) error {
	switch {
	case name == "":
		return fmt.Errorf("cache: %w: empty index name", ErrIndexConflict)
	case fn == nil:
		return fmt.Errorf("cache: %w: index %q has a nil IndexFunc", ErrIndexConflict, name)
	case name == NamespaceIndex && !noNamespace:
		return fmt.Errorf("cache: %w: index %q is built in (set DisableNamespaceIndex to replace it)", ErrIndexConflict, name)
	}
	return nil
}

// Indexer is a thread-safe store of objects keyed "namespace/name" with
// secondary indexes: the cache stage of the pipeline (see the package doc).
//
// Objects are shared, never copied. Every object passed to Add, Update or
// Replace becomes owned by the Indexer, and every object a read returns (Get,
// GetByKey, List, ByIndex) is the very object that every other reader sees.
// YOU MUST NOT MUTATE THEM: call DeepCopy first and change the copy. A
// mutated cached object corrupts every controller in the process and the
// indexes (an index is not recomputed when its inputs change under it). Run
// tests with Options.DetectMutations to catch the bug.
//
// Add and Update are both "insert or replace". Reads never block each other,
// and Get and GetByKey never wait for a writer either (they take no lock).
type Indexer[T Object] struct {
	logger *slog.Logger
	// nsIndex tells whether the namespace index exists; fixed at New.
	nsIndex bool

	// spec is the current set of custom indexes. It is replaced (never
	// modified) under mu by AddIndexers, and loaded without mu by writers so
	// that they run index funcs before taking the lock.
	spec atomic.Pointer[indexSpec[T]]

	// items is st.items, published for Get and GetByKey, which read it
	// without mu: it changes only with st, under mu.
	items atomic.Pointer[table[T]]

	// mu guards st, lastSyncRV and det's maps.
	mu         sync.RWMutex
	st         state[T]
	lastSyncRV string
	det        *detector[T] // nil unless Options.DetectMutations
}

// New returns an empty Indexer.
func New[T Object](opts Options[T]) (*Indexer[T], error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	spec := &indexSpec[T]{}
	names := make([]string, 0, len(opts.Indexers))
	for name := range opts.Indexers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		spec.names = append(spec.names, name)
		spec.funcs = append(spec.funcs, opts.Indexers[name])
	}
	ix := &Indexer[T]{logger: opts.Logger, nsIndex: !opts.DisableNamespaceIndex}
	ix.spec.Store(spec)
	ix.st = newState[T](spec, !opts.DisableNamespaceIndex, 0, maphash.MakeSeed())
	ix.items.Store(ix.st.items)
	if opts.DetectMutations {
		ix.det = &detector[T]{snaps: map[*entry[T]]snapshot[T]{}, onMutation: opts.OnMutation}
	}
	return ix, nil
}

// Add inserts obj, or replaces the object stored under its key.
func (ix *Indexer[T]) Add(obj T) error {
	_, _, err := ix.upsert("add", obj)
	return err
}

// Update replaces the object stored under obj's key, or inserts obj.
func (ix *Indexer[T]) Update(obj T) error {
	_, _, err := ix.upsert("update", obj)
	return err
}

// Swap stores obj like Update and returns the object it replaced, if any, in
// the same critical section: what an informer needs to notify "added" or
// "updated from old" with one lookup.
func (ix *Indexer[T]) Swap(obj T) (old T, replaced bool, err error) {
	return ix.upsert("swap", obj)
}

func (ix *Indexer[T]) upsert(op string, obj T) (old T, replaced bool, err error) {
	if err := validObject(obj); err != nil {
		return old, false, fmt.Errorf("cache: %s: %w", op, err)
	}
	spec := ix.spec.Load()
	var vb [valsBuf][]string // index values without a heap allocation
	vals, err := spec.values(obj, vb[:0])
	if err != nil {
		return old, false, fmt.Errorf("cache: %s %s: %w", op, Key(obj), err)
	}
	var reports []error
	ix.mu.Lock()
	if cur := ix.spec.Load(); cur != spec { // AddIndexers ran meanwhile
		if vals, err = cur.values(obj, vb[:0]); err != nil {
			ix.mu.Unlock()
			return old, false, fmt.Errorf("cache: %s %s: %w", op, Key(obj), err)
		}
	}
	var buf [keyBufSize]byte
	k := appendKey(buf[:0], obj.GetNamespace(), obj.GetName())
	h := ix.st.items.hash(k)
	var e *entry[T]
	if it := ix.st.items.lookupBytes(h, k); it != nil {
		e = it.e
		old, replaced = e.obj, true
		if ix.det != nil {
			reports = ix.det.retire(e, reports)
		}
		ix.st.replace(h, e, obj, vals)
	} else {
		e = ix.st.insert(h, string(k), obj, vals)
	}
	if ix.det != nil {
		ix.det.snapshot(e)
	}
	ix.mu.Unlock()
	ix.det.report(reports)
	return old, replaced, nil
}

// Delete removes the object stored under obj's key. Deleting an absent key
// is not an error.
func (ix *Indexer[T]) Delete(obj T) error {
	if err := validObject(obj); err != nil {
		return fmt.Errorf("cache: delete: %w", err)
	}
	var buf [keyBufSize]byte
	var reports []error
	ix.mu.Lock()
	k := appendKey(buf[:0], obj.GetNamespace(), obj.GetName())
	h := ix.st.items.hash(k)
	if it := ix.st.items.lookupBytes(h, k); it != nil {
		if ix.det != nil {
			reports = ix.det.retire(it.e, reports)
		}
		ix.st.remove(h, it.e)
	}
	ix.mu.Unlock()
	ix.det.report(reports)
	return nil
}

// DeleteByKey removes the object stored under key, for a deletion whose final
// object is unknown. Deleting an absent key is not an error; a malformed key
// is (it wraps ErrInvalidKey).
func (ix *Indexer[T]) DeleteByKey(key string) error {
	_, _, err := ix.LoadAndDelete(key)
	return err
}

// LoadAndDelete removes the object stored under key and returns it, if there
// was one, in the same critical section. A malformed key is an error
// wrapping ErrInvalidKey.
func (ix *Indexer[T]) LoadAndDelete(key string) (old T, deleted bool, err error) {
	if _, _, err := SplitKey(key); err != nil {
		return old, false, fmt.Errorf("cache: delete: %w", err)
	}
	var reports []error
	ix.mu.Lock()
	h := ix.st.items.hashString(key)
	if it := ix.st.items.lookup(h, key); it != nil {
		e := it.e
		old, deleted = e.obj, true
		if ix.det != nil {
			reports = ix.det.retire(e, reports)
		}
		ix.st.remove(h, e)
	}
	ix.mu.Unlock()
	ix.det.report(reports)
	return old, deleted, nil
}

// Replace atomically swaps the whole content for objs (the result of a
// relist) and records resourceVersion as LastSyncResourceVersion. When two
// objects share a key the later one wins. The new content and its indexes
// are built without any lock (reusing the key strings of objects already
// stored), so readers are blocked only for the swap. If an object is invalid
// or an index func fails, nothing changes.
func (ix *Indexer[T]) Replace(objs []T, resourceVersion string) error {
	spec := ix.spec.Load()
	prev := ix.items.Load()
	b := newBuilder(spec, ix.nsIndex, len(objs), prev.seed)
	if err := b.add(objs, prev); err != nil {
		return err
	}
	return ix.publish(spec, b.st, resourceVersion)
}

// ReplaceFrom is Replace for a list whose objects arrive in order, in
// batches sent on batches until it is closed: the new content is built as
// they arrive (on the caller's goroutine), so that the producer of the
// batches — the informer, interning the objects of a relist — works in
// parallel with the building instead of before it. Nothing changes before
// batches is closed; then the content is swapped as by Replace. If an
// object is invalid or an index func fails, the rest of the batches are
// received and dropped, nothing changes, and the error is returned. size
// is the number of objects expected (a capacity hint: a negative one is 0,
// and room for at most 1<<20 objects is made ahead). A batch belongs to
// the Indexer once sent.
func (ix *Indexer[T]) ReplaceFrom(size int, batches <-chan []T, resourceVersion string) error {
	// Only a hint: a negative one would panic in make, a huge one would
	// allocate for objects that never come (the content grows as needed).
	size = min(max(size, 0), maxSizeHint)
	spec := ix.spec.Load()
	prev := ix.items.Load()
	b := newBuilder(spec, ix.nsIndex, size, prev.seed)
	var err error
	for objs := range batches {
		if err != nil {
			continue // drained, so that the sender never blocks
		}
		err = b.add(objs, prev)
	}
	if err != nil {
		return err
	}
	return ix.publish(spec, b.st, resourceVersion)
}

// maxSizeHint caps the size hint of ReplaceFrom: the most objects whose
// room is allocated before they arrive.
const maxSizeHint = 1 << 20

// publish swaps in st, built with spec (rebuilt from its objects if the
// indexes changed meanwhile), as the content at resourceVersion.
func (ix *Indexer[T]) publish(spec *indexSpec[T], st state[T], resourceVersion string) error {
	var reports []error
	ix.mu.Lock()
	if cur := ix.spec.Load(); cur != spec {
		var err error
		if st, err = ix.build(cur, st.objs, ix.st.items); err != nil {
			ix.mu.Unlock()
			return err
		}
	}
	old := ix.st
	ix.st = st
	ix.items.Store(st.items)
	ix.lastSyncRV = resourceVersion
	ix.logger.Debug("cache: replaced", "objects", len(st.all), "previous", len(old.all), "resourceVersion", resourceVersion)
	if ix.det != nil {
		for _, e := range old.all {
			reports = ix.det.retire(e, reports)
		}
		for _, e := range st.all {
			ix.det.snapshot(e)
		}
	}
	ix.mu.Unlock()
	ix.det.report(reports)
	return nil
}

// build makes the state for objs. Keys of objects already in prev (the
// current items) are reused instead of allocated again.
func (ix *Indexer[T]) build(spec *indexSpec[T], objs []T, prev *table[T]) (state[T], error) {
	b := newBuilder(spec, ix.nsIndex, len(objs), prev.seed)
	if err := b.add(objs, prev); err != nil {
		return state[T]{}, err
	}
	return b.st, nil
}

// builder builds the state of a Replace, a batch of objects at a time.
type builder[T Object] struct {
	spec *indexSpec[T]
	st   state[T]
}

// newBuilder returns a builder of a state for size objects that hashes
// keys with seed: the seed of the table its keys are borrowed from (see
// add), so that each key is hashed once.
func newBuilder[T Object](spec *indexSpec[T], nsIndex bool, size int, seed maphash.Seed) *builder[T] {
	return &builder[T]{spec: spec, st: newState[T](spec, nsIndex, size, seed)}
}

// add adds objs, a later object winning over an earlier one with its key.
// Keys of objects already in prev (the current items, read without a lock:
// keys never change) are reused instead of allocated again.
func (b *builder[T]) add(objs []T, prev *table[T]) error {
	st := &b.st
	var buf [keyBufSize]byte
	for _, obj := range objs {
		if err := validObject(obj); err != nil {
			return fmt.Errorf("cache: replace: %w", err)
		}
		var vb [valsBuf][]string
		vals, err := b.spec.values(obj, vb[:0])
		if err != nil {
			return fmt.Errorf("cache: replace %s: %w", Key(obj), err)
		}
		k := appendKey(buf[:0], obj.GetNamespace(), obj.GetName())
		h := st.items.hash(k)
		if it := st.items.lookupBytes(h, k); it != nil {
			st.replace(h, it.e, obj, vals)
			continue
		}
		if it := prev.lookupBytes(h, k); it != nil {
			st.insert(h, it.key, obj, vals)
			continue
		}
		st.insert(h, string(k), obj, vals)
	}
	return nil
}

// AddIndexers registers more indexes. It may be called while the Indexer
// holds objects: the new indexes are built from them before AddIndexers
// returns. If a name is taken or an index func fails on a stored object, no
// index is added.
func (ix *Indexer[T]) AddIndexers(indexers map[string]IndexFunc[T]) error {
	names := make([]string, 0, len(indexers))
	for name, fn := range indexers {
		if err := checkIndex(name, fn, !ix.nsIndex); err != nil {
			return err
		}
		names = append(names, name)
	}
	slices.Sort(names)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.spec.Load()
	for _, name := range names {
		if slices.Contains(old.names, name) {
			return fmt.Errorf("cache: %w: index %q already exists", ErrIndexConflict, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	spec := &indexSpec[T]{
		names: slices.Concat(old.names, names),
		funcs: slices.Clone(old.funcs),
	}
	for _, name := range names {
		spec.funcs = append(spec.funcs, indexers[name])
	}
	// Compute every new value first so that a failure changes nothing.
	n := len(old.names)
	vals := make([][][]string, len(ix.st.all))
	for i, e := range ix.st.all {
		v := make([][]string, len(spec.names))
		copy(v, e.vals)
		for j := n; j < len(spec.names); j++ {
			vs, err := spec.funcs[j](e.obj)
			if err != nil {
				return fmt.Errorf("cache: add index %q on %s: %w", spec.names[j], e.key, err)
			}
			v[j] = dedup(vs)
		}
		vals[i] = v
	}
	for j := n; j < len(spec.names); j++ {
		ix.st.custom = append(ix.st.custom, customIndex[T]{buckets: map[string]*bucket[T]{}})
	}
	for i, e := range ix.st.all {
		e.vals = vals[i]
		for j := n; j < len(spec.names); j++ {
			ix.st.custom[j].add(e, e.vals[j])
		}
	}
	ix.spec.Store(spec)
	ix.logger.Debug("cache: indexes added", "indexes", names, "objects", len(ix.st.all))
	return nil
}

// Get returns the object stored under namespace and name (namespace "" for
// a cluster-scoped object). The object is shared: do not mutate it.
func (ix *Indexer[T]) Get(namespace, name string) (T, bool) {
	var buf [keyBufSize]byte
	if it := ix.items.Load().getBytes(appendKey(buf[:0], namespace, name)); it != nil {
		return it.obj(), true
	}
	var zero T
	return zero, false
}

// GetByKey returns the object stored under key ("namespace/name" or
// "name"). The object is shared: do not mutate it.
func (ix *Indexer[T]) GetByKey(key string) (T, bool) {
	if it := ix.items.Load().get(key); it != nil {
		return it.obj(), true
	}
	var zero T
	return zero, false
}

// List returns every stored object, in no particular order, in a new slice
// that the caller owns. The objects are shared: do not mutate them.
func (ix *Indexer[T]) List() []T {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return slices.Clone(ix.st.objs)
}

// ListKeys returns every stored key, in no particular order.
func (ix *Indexer[T]) ListKeys() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]string, len(ix.st.all))
	for i, e := range ix.st.all {
		out[i] = e.key
	}
	return out
}

// Len returns the number of stored objects.
func (ix *Indexer[T]) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.st.all)
}

// ByIndex returns the objects whose index indexName has the value value, in
// no particular order, in a new slice. The objects are shared: do not mutate
// them. An unknown index is an error wrapping ErrUnknownIndex.
func (ix *Indexer[T]) ByIndex(indexName, value string) ([]T, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if indexName == NamespaceIndex && ix.nsIndex {
		if b := ix.st.ns[value]; b != nil {
			return slices.Clone(b.objs), nil
		}
		return []T{}, nil
	}
	entries, err := ix.bucketLocked(indexName, value)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(entries))
	for i, e := range entries {
		out[i] = e.obj
	}
	return out, nil
}

// IndexKeys is ByIndex returning keys instead of objects.
func (ix *Indexer[T]) IndexKeys(indexName, value string) ([]string, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	entries, err := ix.bucketLocked(indexName, value)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.key
	}
	return out, nil
}

// ListIndexFuncValues returns the values of index indexName that at least one
// stored object has, in no particular order; nil for an unknown index.
func (ix *Indexer[T]) ListIndexFuncValues(indexName string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if indexName == NamespaceIndex && ix.nsIndex {
		out := make([]string, 0, len(ix.st.ns))
		for v := range ix.st.ns {
			out = append(out, v)
		}
		return out
	}
	i := slices.Index(ix.spec.Load().names, indexName)
	if i < 0 {
		return nil
	}
	out := make([]string, 0, len(ix.st.custom[i].buckets))
	for v := range ix.st.custom[i].buckets {
		out = append(out, v)
	}
	return out
}

// IndexNames returns the names of the indexes, NamespaceIndex first when it
// exists, then the others sorted by registration batch and name.
func (ix *Indexer[T]) IndexNames() []string {
	var out []string
	if ix.nsIndex {
		out = append(out, NamespaceIndex)
	}
	return append(out, ix.spec.Load().names...)
}

// LastSyncResourceVersion returns the resourceVersion given to the last
// Replace, "" before the first.
func (ix *Indexer[T]) LastSyncResourceVersion() string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.lastSyncRV
}

// bucketLocked returns the entries of one index bucket; the slice is the
// Indexer's own, to be read under mu only.
func (ix *Indexer[T]) bucketLocked(indexName, value string) ([]*entry[T], error) {
	if indexName == NamespaceIndex && ix.nsIndex {
		if b := ix.st.ns[value]; b != nil {
			return b.entries, nil
		}
		return nil, nil
	}
	i := slices.Index(ix.spec.Load().names, indexName)
	if i < 0 {
		return nil, fmt.Errorf("cache: %w %q", ErrUnknownIndex, indexName)
	}
	if b := ix.st.custom[i].buckets[value]; b != nil {
		return b.entries, nil
	}
	return nil, nil
}

func validObject[T Object](obj T) error {
	if isNil(obj) {
		return fmt.Errorf("%w: nil", ErrInvalidObject)
	}
	if obj.GetName() == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidObject)
	}
	return nil
}

// isNil reports whether v is nil or a typed nil pointer (or map, slice…).
func isNil[T any](v T) bool {
	rv := reflect.ValueOf(any(v))
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
