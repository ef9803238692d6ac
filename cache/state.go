package cache

import (
	"fmt"
	"hash/maphash"
	"slices"
)

// indexSpec is an immutable list of custom indexes; slot i of entry.vals and
// state.custom belongs to names[i].
type indexSpec[T Object] struct {
	names []string
	funcs []IndexFunc[T]
}

// values runs every custom index func on obj and appends the results to dst
// (pass a stack array's slice: it is only copied to the heap by insert, when
// an entry keeps it). It returns dst unchanged when there are no custom
// indexes.
func (s *indexSpec[T]) values(obj T, dst [][]string) ([][]string, error) {
	for i, fn := range s.funcs {
		v, err := fn(obj)
		if err != nil {
			return nil, fmt.Errorf("index %q: %w", s.names[i], err)
		}
		dst = append(dst, dedup(v))
	}
	return dst, nil
}

// valsBuf is the number of custom indexes whose values are computed without
// a heap allocation on Update.
const valsBuf = 4

// entry is one stored object. Index buckets point at entries, so an Update
// that keeps an object's index values changes one field and no index.
type entry[T Object] struct {
	key  string
	obj  T
	vals [][]string   // values per custom index (slot order of indexSpec)
	nsb  *nsBucket[T] // its namespace bucket; nil without namespace index
	// pos is the entry's position in state.all and state.objs, nsPos in
	// its namespace bucket; both kept exact by swap-removal.
	pos, nsPos int32
}

// state is the content of an Indexer; Replace builds a new one and swaps it.
type state[T Object] struct {
	items  *table[T]               // by key; readers use it without a lock
	all    []*entry[T]             // every entry, dense, for List without map iteration
	objs   []T                     // objs[i] == all[i].obj: List is a copy
	ns     map[string]*nsBucket[T] // namespace index; nil when disabled
	custom []customIndex[T]        // slot order of indexSpec
}

// newState returns an empty state sized for n objects, hashing keys with
// seed.
func newState[T Object](spec *indexSpec[T], nsIndex bool, n int, seed maphash.Seed) state[T] {
	st := state[T]{
		items:  newTable[T](n, seed),
		all:    make([]*entry[T], 0, n),
		objs:   make([]T, 0, n),
		custom: make([]customIndex[T], len(spec.names)),
	}
	if nsIndex {
		st.ns = map[string]*nsBucket[T]{}
	}
	for i := range st.custom {
		st.custom[i].buckets = map[string]*bucket[T]{}
	}
	return st
}

// insert adds a new entry under key, whose hash is h; it keeps a copy of
// vals (which may be on the caller's stack).
func (st *state[T]) insert(h uint64, key string, obj T, vals [][]string) *entry[T] {
	var kept [][]string
	if len(vals) > 0 {
		kept = make([][]string, len(vals))
		copy(kept, vals)
	}
	e := &entry[T]{key: key, obj: obj, vals: kept, pos: int32(len(st.all))}
	st.all = append(st.all, e)
	st.objs = append(st.objs, obj)
	st.items.put(h, e, obj)
	if st.ns != nil {
		ns := obj.GetNamespace()
		b := st.ns[ns]
		if b == nil {
			b = &nsBucket[T]{ns: ns}
			st.ns[ns] = b
		}
		e.nsb = b
		e.nsPos = int32(len(b.entries))
		b.entries = append(b.entries, e)
		b.objs = append(b.objs, obj)
	}
	for i := range st.custom {
		st.custom[i].add(e, vals[i])
	}
	return e
}

// replace stores obj in e, an entry with the same key (whose hash is h;
// so the same namespace), moving it between custom buckets only where
// values changed.
func (st *state[T]) replace(h uint64, e *entry[T], obj T, vals [][]string) {
	e.obj = obj
	st.items.put(h, e, obj)
	st.objs[e.pos] = obj
	if e.nsb != nil {
		e.nsb.objs[e.nsPos] = obj
	}
	for i := range st.custom {
		if sameSet(e.vals[i], vals[i]) {
			continue
		}
		st.custom[i].remove(e, e.vals[i])
		st.custom[i].add(e, vals[i])
		e.vals[i] = vals[i]
	}
}

// remove removes e, whose key's hash is h.
func (st *state[T]) remove(h uint64, e *entry[T]) {
	st.items.del(h, e.key)
	last := len(st.all) - 1
	moved := st.all[last]
	st.all[e.pos] = moved
	st.objs[e.pos] = moved.obj
	moved.pos = e.pos
	var zero T
	st.all[last] = nil
	st.objs[last] = zero
	st.all = st.all[:last]
	st.objs = st.objs[:last]
	if b := e.nsb; b != nil {
		last := len(b.entries) - 1
		moved := b.entries[last]
		b.entries[e.nsPos] = moved
		b.objs[e.nsPos] = moved.obj
		moved.nsPos = e.nsPos
		b.entries[last] = nil
		b.objs[last] = zero
		b.entries = b.entries[:last]
		b.objs = b.objs[:last]
		if last == 0 {
			delete(st.ns, b.ns)
		}
	}
	for i := range st.custom {
		st.custom[i].remove(e, e.vals[i])
	}
}

type nsBucket[T Object] struct {
	ns      string
	entries []*entry[T] // entry.nsPos is the position
	objs    []T         // objs[i] == entries[i].obj: ByIndex is a copy
}

type customIndex[T Object] struct {
	buckets map[string]*bucket[T] // no empty buckets
}

func (c *customIndex[T]) add(e *entry[T], vals []string) {
	for _, v := range vals {
		b := c.buckets[v]
		if b == nil {
			b = &bucket[T]{}
			c.buckets[v] = b
		}
		b.add(e)
	}
}

func (c *customIndex[T]) remove(e *entry[T], vals []string) {
	for _, v := range vals {
		if b := c.buckets[v]; b != nil && b.remove(e) {
			delete(c.buckets, v)
		}
	}
}

// bucketMapMin is the size from which a bucket keeps a position map; smaller
// buckets find an entry by a linear scan, which is faster and allocates less.
const bucketMapMin = 32

// bucket is a set of entries of a multi-valued index. An entry can be in
// many buckets of one index, so positions live in the bucket, not the entry.
type bucket[T Object] struct {
	entries []*entry[T]
	pos     map[*entry[T]]int32 // position of each entry; nil while small
}

func (b *bucket[T]) add(e *entry[T]) {
	if b.pos != nil {
		b.pos[e] = int32(len(b.entries))
	}
	b.entries = append(b.entries, e)
	if b.pos == nil && len(b.entries) > bucketMapMin {
		b.pos = make(map[*entry[T]]int32, 2*len(b.entries))
		for i, x := range b.entries {
			b.pos[x] = int32(i)
		}
	}
}

// remove takes e out of b and reports whether b is now empty.
func (b *bucket[T]) remove(e *entry[T]) (empty bool) {
	i := -1
	if b.pos != nil {
		if p, ok := b.pos[e]; ok {
			i = int(p)
			delete(b.pos, e)
		}
	} else {
		i = slices.Index(b.entries, e)
	}
	if i < 0 {
		return len(b.entries) == 0
	}
	last := len(b.entries) - 1
	if i != last {
		moved := b.entries[last]
		b.entries[i] = moved
		if b.pos != nil {
			b.pos[moved] = int32(i)
		}
	}
	b.entries[last] = nil
	b.entries = b.entries[:last]
	return last == 0
}

// sameSet reports whether two duplicate-free lists hold the same values, in
// any order (index funcs often range over maps).
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) <= 16 {
		for _, v := range a {
			if !slices.Contains(b, v) {
				return false
			}
		}
		return true
	}
	set := make(map[string]struct{}, len(a))
	for _, v := range a {
		set[v] = struct{}{}
	}
	for _, v := range b {
		if _, ok := set[v]; !ok {
			return false
		}
	}
	return true
}

// dedup returns vs without duplicates, keeping the first occurrence. It
// copies only when there is a duplicate: vs may be shared by the caller.
func dedup(vs []string) []string {
	if len(vs) < 2 {
		return vs
	}
	dup := false
	if len(vs) <= 16 {
	outer:
		for i := 1; i < len(vs); i++ {
			for j := 0; j < i; j++ {
				if vs[i] == vs[j] {
					dup = true
					break outer
				}
			}
		}
	} else {
		seen := make(map[string]struct{}, len(vs))
		for _, v := range vs {
			if _, ok := seen[v]; ok {
				dup = true
				break
			}
			seen[v] = struct{}{}
		}
	}
	if !dup {
		return vs
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
