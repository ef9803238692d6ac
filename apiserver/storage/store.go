package storage

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a [Store]. The zero value works.
type Options struct {
	// HistoryEvents bounds the events retained per resource for watches and
	// exact lists at an older revision. Default 10,000.
	HistoryEvents int
	// HistoryAge bounds the age of retained events. Default 5 minutes, the
	// etcd compaction interval kube-apiserver uses.
	HistoryAge time.Duration
	// HistoryBytes bounds the bytes of the history of all resources
	// together: past it the oldest events are evicted, whatever their
	// resource, as an etcd compaction would (see [Store.HistoryBytes] for
	// what an event costs). Default 128 MiB.
	HistoryBytes int64
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives debug logs. Default discards.
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.HistoryEvents == 0 {
		o.HistoryEvents = 10_000
	}
	if o.HistoryAge == 0 {
		o.HistoryAge = 5 * time.Minute
	}
	if o.HistoryBytes == 0 {
		o.HistoryBytes = DefaultHistoryBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

func (o *Options) validate() error {
	if o.HistoryEvents < 1 {
		return fmt.Errorf("storage: HistoryEvents must be positive, got %d", o.HistoryEvents)
	}
	if o.HistoryAge < 0 {
		return fmt.Errorf("storage: HistoryAge must not be negative, got %s", o.HistoryAge)
	}
	if o.HistoryBytes < 1 {
		return fmt.Errorf("storage: HistoryBytes must be positive, got %d", o.HistoryBytes)
	}
	return nil
}

// DefaultHistoryBytes is the default of Options.HistoryBytes: 128 MiB, room
// for a busy resource's full count of events (10,000 events of a 4 kB
// object, framed for watchers, are 80 MB), while a flood of large writes
// keeps only the newest ones (of 900 kB ConfigMaps, about the last 70).
const DefaultHistoryBytes = 128 << 20

// Store is the in-memory versioned store. It is safe for concurrent use.
// Resources are named by the caller (the HTTP layer uses "group/resource");
// each has its own objects, history and lock, and all share one revision.
type Store struct {
	opts Options
	// rev is the last revision handed out. It is incremented under the write
	// lock of the resource being written, so within a resource revisions are
	// in commit order.
	rev atomic.Int64

	mu sync.RWMutex // guards resources (the map, not the resources) and compacted
	// resources maps a resource name to its state; entries are never removed.
	resources map[string]*resource
	// compacted is the revision of the last Compact; resources created later
	// start their history there.
	compacted int64

	// historyBytes is what the histories of all resources cost (see
	// HistoryBytes): changed under the lock of the resource whose history
	// changes, and by Event.Frame.
	historyBytes atomic.Int64
	// trimMu is held by the one writer evicting events to bring
	// historyBytes back within Options.HistoryBytes (trim). It is taken
	// before any resource's lock, never while holding one.
	trimMu sync.Mutex
}

// New returns an empty store.
func New(opts Options) (*Store, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Store{opts: opts, resources: map[string]*resource{}}, nil
}

// Revision returns the current (last committed or handed out) revision.
func (s *Store) Revision() int64 { return s.rev.Load() }

// resource is the state of one resource.
type resource struct {
	mu sync.RWMutex // guards every field below
	// objects by key.
	objects map[string]*Object
	// keys caches the keys of objects, sorted. Writers that add or remove a
	// key reset it (holding mu); readers holding mu for reading rebuild it
	// when nil, so a create costs O(1) and lists re-sort only after creates
	// and deletes.
	keys    atomic.Pointer[[]string]
	history ring
	// oldest is the revision of the oldest event of history, 0 when it is
	// empty; written under mu, read without it by trim.
	oldest atomic.Int64
	// notify, when not nil, is closed (and reset to nil) by the next commit;
	// waiting watchers select on it.
	notify chan struct{}
}

func (s *Store) resource(name string) *resource {
	s.mu.RLock()
	r := s.resources[name]
	s.mu.RUnlock()
	if r != nil {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r = s.resources[name]; r == nil {
		r = &resource{objects: map[string]*Object{}}
		r.history.max = s.opts.HistoryEvents
		r.history.compacted = s.compacted
		s.resources[name] = r
	}
	return r
}

// Get returns the current state of an object, or an error wrapping ErrNotFound.
func (s *Store) Get(res, namespace, name string) (*Object, error) {
	r := s.resource(res)
	r.mu.RLock()
	o := r.objects[Key(namespace, name)]
	r.mu.RUnlock()
	if o == nil {
		return nil, fmt.Errorf("%s %q: %w", res, name, ErrNotFound)
	}
	return o, nil
}

// Create stores a new object at the next revision; an existing key gives an
// error wrapping ErrAlreadyExists.
func (s *Store) Create(res, namespace, name string, encode EncodeFunc) (*Object, error) {
	o, err := s.create(res, namespace, name, encode)
	if err == nil {
		s.trim()
	}
	return o, err
}

func (s *Store) create(res, namespace, name string, encode EncodeFunc) (*Object, error) {
	r := s.resource(res)
	key := Key(namespace, name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.objects[key]; ok {
		return nil, fmt.Errorf("%s %q: %w", res, name, ErrAlreadyExists)
	}
	o, err := s.encode(encode, namespace, name)
	if err != nil {
		return nil, err
	}
	r.objects[key] = o
	r.keys.Store(nil)
	s.commit(r, &Event{Type: Added, Revision: o.ResourceVersion, Object: o})
	return o, nil
}

// Update replaces an object, GuaranteedUpdate-style: fn computes the next state
// from the current one, and if the object changed meanwhile fn runs again on
// the fresh state. Preconditions are fn's to check (see [Preconditions]).
func (s *Store) Update(res, namespace, name string, fn UpdateFunc) (*Object, error) {
	o, _, err := s.write(res, namespace, name, func(cur *Object) (EncodeFunc, bool, error) {
		e, err := fn(cur)
		return e, false, err
	})
	return o, err
}

// Delete removes an object. fn sees the current state (to check preconditions)
// and returns the encoder of the last state carried by the Deleted event (its
// revision is the deletion's). If fn returns a nil EncodeFunc nothing is
// deleted and the current object is returned.
func (s *Store) Delete(res, namespace, name string, fn UpdateFunc) (*Object, error) {
	o, _, err := s.write(res, namespace, name, func(cur *Object) (EncodeFunc, bool, error) {
		e, err := fn(cur)
		return e, true, err
	})
	return o, err
}

// WriteFunc computes the next state of an object like an [UpdateFunc], and
// says whether the object is deleted (the encoded state is then the last
// state, carried by the Deleted event).
type WriteFunc func(current *Object) (encode EncodeFunc, del bool, err error)

// Write updates or deletes an object as fn decides, GuaranteedUpdate-style
// (see [Store.Update]). It reports whether the object was deleted.
func (s *Store) Write(res, namespace, name string, fn WriteFunc) (*Object, bool, error) {
	return s.write(res, namespace, name, fn)
}

func (s *Store) write(res, namespace, name string, fn WriteFunc) (*Object, bool, error) {
	r := s.resource(res)
	key := Key(namespace, name)
	for {
		r.mu.RLock()
		cur := r.objects[key]
		r.mu.RUnlock()
		if cur == nil {
			return nil, false, fmt.Errorf("%s %q: %w", res, name, ErrNotFound)
		}
		encode, del, err := fn(cur)
		if err != nil {
			return nil, false, err
		}
		if encode == nil {
			return cur, false, nil
		}
		r.mu.Lock()
		if r.objects[key] != cur { // changed meanwhile: try again on the new state
			r.mu.Unlock()
			continue
		}
		o, err := s.encode(encode, namespace, name)
		if err != nil {
			r.mu.Unlock()
			return nil, false, err
		}
		if del {
			delete(r.objects, key)
			r.keys.Store(nil)
			s.commit(r, &Event{Type: Deleted, Revision: o.ResourceVersion, Object: o, Prev: cur})
		} else {
			r.objects[key] = o
			s.commit(r, &Event{Type: Modified, Revision: o.ResourceVersion, Object: o, Prev: cur})
		}
		r.mu.Unlock()
		s.trim()
		return o, del, nil
	}
}

// encode takes the next revision and runs the encoder; r.mu is held.
func (s *Store) encode(encode EncodeFunc, namespace, name string) (*Object, error) {
	rev := s.rev.Add(1)
	o, err := encode(rev)
	if err != nil {
		return nil, err
	}
	if o == nil || o.Namespace != namespace || o.Name != name {
		return nil, fmt.Errorf("%w: encoder returned an object for another key than %q", ErrInvalidObject, Key(namespace, name))
	}
	o.ResourceVersion = rev
	o.cost = objectCost(o)
	return o, nil
}

// Compact discards the history up to and including revision rev in every
// resource, as etcd's compaction does: a watch or list at an older revision
// then fails with ErrExpired (410 Gone). Watches already past rev go on.
func (s *Store) Compact(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = max(s.compacted, rev)
	for _, r := range s.resources {
		r.mu.Lock()
		for r.history.n > 0 && r.history.buf[r.history.start].Revision <= rev {
			r.evict(s)
		}
		r.history.compacted = max(r.history.compacted, rev)
		r.mu.Unlock()
	}
}

// CompactResource discards the history of one resource up to and
// including revision rev, as [Store.Compact] does for every resource: a
// watch or list of that resource at an older revision then fails with
// ErrExpired. The other resources keep their history. It fails when rev
// is beyond the current revision.
func (s *Store) CompactResource(res string, rev int64) error {
	if cur := s.rev.Load(); rev > cur {
		return &TooLargeError{Requested: rev, Current: cur}
	}
	r := s.resource(res)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.history.n > 0 && r.history.buf[r.history.start].Revision <= rev {
		r.evict(s)
	}
	r.history.compacted = max(r.history.compacted, rev)
	return nil
}

// commit appends ev to the history and wakes the watchers; r.mu is held.
func (s *Store) commit(r *resource, ev *Event) {
	now := s.opts.Now()
	ev.at, ev.store = now, s
	r.push(s, ev)
	r.evictOlder(s, now.Add(-s.opts.HistoryAge))
	if r.notify != nil {
		close(r.notify)
		r.notify = nil
	}
}

// ListOptions select what [Store.List] returns. The zero value lists
// everything at the current revision.
type ListOptions struct {
	// Namespace restricts the list to one namespace; empty lists all.
	Namespace string
	// Revision, when Exact, is the revision whose state is listed; it must be
	// inside the history. Otherwise it is a minimum: the current state is
	// listed if the store has reached it. Zero means the current state.
	Revision int64
	Exact    bool
	// StartAfter lists only keys after this one (for continuing a paginated list).
	StartAfter string
	// Limit bounds the number of objects returned; zero means no limit.
	Limit int
	// Predicate, when set, selects objects.
	Predicate func(*Object) bool
}

// ListResult is a page of a list.
type ListResult struct {
	Objects []*Object
	// Revision is the revision of the state listed.
	Revision int64
	// Next is the key of the last object returned when more objects follow
	// (pass it as StartAfter with Revision and Exact to continue); empty at the end.
	Next string
	// Remaining counts the matching objects after this page when Next is set.
	Remaining int64
}

// List lists objects of a resource in key order.
func (s *Store) List(res string, opts ListOptions) (ListResult, error) {
	r := s.resource(res)
	r.mu.RLock()
	defer r.mu.RUnlock()
	current := s.rev.Load()
	if opts.Revision > current {
		return ListResult{}, &TooLargeError{Requested: opts.Revision, Current: current}
	}
	keys, objects, rev := r.sortedKeys(), r.objects, current
	if opts.Exact && opts.Revision != 0 {
		var err error
		keys, objects, err = r.stateAt(opts.Revision)
		if err != nil {
			return ListResult{}, err
		}
		rev = opts.Revision
	}
	prefix := ""
	if opts.Namespace != "" {
		prefix = opts.Namespace + "/"
	}
	start := sort.SearchStrings(keys, prefix)
	if opts.StartAfter != "" && opts.StartAfter >= prefix {
		start = sort.Search(len(keys), func(i int) bool { return keys[i] > opts.StartAfter })
	}
	out := ListResult{Revision: rev}
	for i := start; i < len(keys); i++ {
		k := keys[i]
		if !strings.HasPrefix(k, prefix) {
			break
		}
		o := objects[k]
		if opts.Predicate != nil && !opts.Predicate(o) {
			continue
		}
		if opts.Limit > 0 && len(out.Objects) == opts.Limit {
			out.Next = out.Objects[len(out.Objects)-1].Key()
			for ; i < len(keys) && strings.HasPrefix(keys[i], prefix); i++ {
				if opts.Predicate == nil || opts.Predicate(objects[keys[i]]) {
					out.Remaining++
				}
			}
			break
		}
		out.Objects = append(out.Objects, o)
	}
	return out, nil
}

// stateAt rolls the current state back to revision rev using the history;
// r.mu is held (at least for reading).
func (r *resource) stateAt(rev int64) ([]string, map[string]*Object, error) {
	if rev < r.history.compacted {
		return nil, nil, &ExpiredError{Requested: rev, Oldest: r.history.compacted}
	}
	n := r.history.len()
	if n == 0 || r.history.at(n-1).Revision <= rev {
		return r.sortedKeys(), r.objects, nil // nothing happened since rev
	}
	objects := make(map[string]*Object, len(r.objects))
	for k, o := range r.objects {
		objects[k] = o
	}
	for i := n - 1; i >= 0; i-- {
		ev := r.history.at(i)
		if ev.Revision <= rev {
			break
		}
		k := ev.Object.Key()
		if ev.Prev == nil {
			delete(objects, k)
		} else {
			objects[k] = ev.Prev
		}
	}
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, objects, nil
}

// sortedKeys returns the sorted keys of the objects; r.mu is held (at least
// for reading).
func (r *resource) sortedKeys() []string {
	if k := r.keys.Load(); k != nil {
		return *k
	}
	keys := make([]string, 0, len(r.objects))
	for k := range r.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	r.keys.Store(&keys)
	return keys
}

// ring is the bounded event history of one resource; its owner's lock guards it.
type ring struct {
	max   int
	buf   []*Event // grows up to max, then wraps
	start int      // index in buf of the oldest event
	n     int      // number of events held
	// first is the sequence number of the oldest event held; sequence numbers
	// count the events ever pushed.
	first int64
	// compacted is the revision of the newest evicted event: history after it
	// is complete, so watches from a revision >= compacted are served.
	compacted int64
}

func (h *ring) len() int { return h.n }

// at returns the i-th oldest event held.
func (h *ring) at(i int) *Event { return h.buf[(h.start+i)%len(h.buf)] }

// next is the sequence number the next pushed event gets.
func (h *ring) next() int64 { return h.first + int64(h.n) }

func (h *ring) push(ev *Event) {
	if h.n == len(h.buf) { // grow (only while below max)
		size := max(2*len(h.buf), 64)
		size = min(size, h.max)
		nb := make([]*Event, size)
		for i := 0; i < h.n; i++ {
			nb[i] = h.at(i)
		}
		h.buf, h.start = nb, 0
	}
	h.buf[(h.start+h.n)%len(h.buf)] = ev
	h.n++
}

// pop removes the oldest event and returns it.
func (h *ring) pop() *Event {
	ev := h.buf[h.start]
	h.buf[h.start] = nil
	h.start = (h.start + 1) % len(h.buf)
	h.n--
	h.first++
	h.compacted = ev.Revision
	return ev
}

// push appends ev to the history (evicting the oldest event at the count
// bound) and charges what it costs; r.mu is held.
func (r *resource) push(s *Store, ev *Event) {
	cost := eventOverhead + ev.Object.cost
	if ev.Prev != nil && ev.Prev.ResourceVersion <= r.history.compacted {
		// The previous state's own event is gone: the history holds it
		// alone now (see HistoryBytes). Decided before the eviction
		// below, which sees the previous state superseded and leaves its
		// cost to this event.
		cost += ev.Prev.cost
	}
	if r.history.n == r.history.max {
		r.evict(s)
	}
	r.history.push(ev)
	s.historyBytes.Add(cost)
	if r.history.n == 1 {
		r.oldest.Store(ev.Revision)
	}
}

// evict removes the oldest event of the history and refunds what it cost;
// r.mu is held.
func (r *resource) evict(s *Store) {
	ev := r.history.pop()
	refund := eventOverhead + ev.unframe()
	if ev.Prev != nil {
		refund += ev.Prev.cost
	}
	if ev.Type == Deleted || r.objects[ev.Object.Key()] == ev.Object {
		// Not superseded: a deletion's last state is no one's previous
		// state, and the current state is the store's, not the history's.
		// A superseded state is the previous state of a later event,
		// which now holds it alone and keeps its cost.
		refund += ev.Object.cost
	}
	s.historyBytes.Add(-refund)
	if r.history.n == 0 {
		r.oldest.Store(0)
	} else {
		r.oldest.Store(r.history.buf[r.history.start].Revision)
	}
}

// evictOlder evicts events committed before the cutoff; r.mu is held.
func (r *resource) evictOlder(s *Store, cutoff time.Time) {
	for r.history.n > 0 && r.history.buf[r.history.start].at.Before(cutoff) {
		r.evict(s)
	}
}

// HistoryBytes returns what the histories of all resources cost, the
// quantity Options.HistoryBytes bounds. It approximates the memory the
// history holds beyond the current objects: every event costs a fixed
// overhead plus its object (the JSON bytes, the strings and maps the store
// filters on, the Object itself); the previous state an event carries costs
// nothing while the event that wrote it is still in the history (it is that
// event's object), and its size once that event is evicted; and an event's
// watch frame (Event.Frame, a copy of the JSON) and its other encodings
// (Event.Encoded) cost their size from the moment a watcher builds them.
func (s *Store) HistoryBytes() int64 { return s.historyBytes.Load() }

// trim evicts the oldest events of the store, whatever their resource,
// until the history's cost is within Options.HistoryBytes. Writers call it
// once their write is committed, holding no lock; Event.Frame too. One
// caller trims at a time; the others go on, the trimmer seeing their
// events.
func (s *Store) trim() {
	for s.historyBytes.Load() > s.opts.HistoryBytes {
		if !s.trimMu.TryLock() {
			return
		}
		s.trimLocked()
		s.trimMu.Unlock()
	}
}

// trimLocked is trim's work; s.trimMu is held.
func (s *Store) trimLocked() {
	for s.historyBytes.Load() > s.opts.HistoryBytes {
		r, next := s.oldestHistory()
		if r == nil {
			return // nothing left to evict
		}
		r.mu.Lock()
		for r.history.n > 0 && s.historyBytes.Load() > s.opts.HistoryBytes &&
			(next == 0 || r.history.buf[r.history.start].Revision < next) {
			r.evict(s)
		}
		r.mu.Unlock()
	}
}

// oldestHistory returns the resource whose history holds the store's
// oldest event, and the oldest revision the other resources hold (0 if
// none).
func (s *Store) oldestHistory() (*resource, int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var oldest *resource
	var first, second int64
	for _, r := range s.resources {
		rev := r.oldest.Load()
		switch {
		case rev == 0:
		case oldest == nil || rev < first:
			if oldest != nil {
				second = first
			}
			oldest, first = r, rev
		case second == 0 || rev < second:
			second = rev
		}
	}
	return oldest, second
}
