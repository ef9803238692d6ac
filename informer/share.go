package informer

import (
	"hash/maphash"
	"unsafe"
)

// mapTable holds canonical copies of maps by content, so that cached
// objects with equal maps (the labels, annotations and resource lists of
// the Pods of one ReplicaSet) share one. A shared map is only ever read:
// cached objects are read-only, and DeepCopy gives callers maps of their
// own. Its generations work as the string table's (interner.cur/prev): a
// map no object brought during a whole generation is released by the
// table. Guarded by interner.mu.
type mapTable[K comparable, V comparable] struct {
	cur, prev map[uint64][]map[K]V
	inserts   int
	lastSize  int
}

// entry is one key and value, hashed together.
type entry[K comparable, V comparable] struct {
	k K
	v V
}

// canonical returns the canonical map equal to m (m itself when it is the
// first of its content, after prepare(m) if prepare is not nil). old is the
// map at the same place in the cached version of the object, or nil: when
// equal, it is the answer. m is only written by prepare, and only when it
// is not shared already.
func (t *mapTable[K, V]) canonical(seed maphash.Seed, m, old map[K]V, prepare func(map[K]V)) map[K]V {
	if len(m) == 0 {
		return m
	}
	if old != nil && (samePtr(m, old) || equalMaps(m, old)) {
		return old
	}
	var h uint64
	for k, v := range m {
		// A sum: the same whatever the iteration order.
		h += maphash.Comparable(seed, entry[K, V]{k, v})
	}
	h ^= uint64(len(m))
	for _, c := range t.cur[h] {
		if equalMaps(m, c) {
			return c
		}
	}
	for _, c := range t.prev[h] {
		if equalMaps(m, c) {
			t.cur[h] = append(t.cur[h], c)
			return c
		}
	}
	if prepare != nil {
		prepare(m)
	}
	if t.cur == nil {
		t.cur = make(map[uint64][]map[K]V)
	}
	t.cur[h] = append(t.cur[h], m)
	t.inserts++
	if t.inserts >= max(minGeneration, t.lastSize) {
		t.prev, t.cur = t.cur, make(map[uint64][]map[K]V, len(t.cur))
		t.lastSize, t.inserts = len(t.prev), 0
	}
	return m
}

// equalMaps reports whether a and b hold the same keys and values (==:
// for the values of API maps, strings and resource.Quantity, equal as
// reflect.DeepEqual sees them).
func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// samePtr reports whether a and b are the same map.
func samePtr[K comparable, V any](a, b map[K]V) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}
