package cache

import (
	"hash/maphash"
	"reflect"
	"sync/atomic"
)

// table maps each key to the item of the object stored under it. Readers
// (Get, GetByKey) look keys up without any lock, so that a worker reading
// the cache never waits for the informer writing it, nor the informer for
// the workers: with a lock, the two fell into step on every other event,
// each parking until the other left (see bench/README.md, "Eighth session").
// Writers hold Indexer.mu.
//
// A published item changes only its object (atomically, see item): a
// delete publishes a tombstone in its slot, and a table that fills up is
// copied into a new array, published whole. Open addressing with linear
// probing; an item keeps its slot until the next copy, so a reader probing
// the slots of one array finds every key that was in it when it began,
// unless it is deleted meanwhile (then it finds the key's item or the
// tombstone, both correct answers for a read concurrent with a delete).
type table[T Object] struct {
	seed maphash.Seed // fixed at newTable; hashes every key
	arr  atomic.Pointer[slots[T]]

	// Writer only (Indexer.mu, or the builder that owns an unpublished
	// state). Invariant: live ≤ used < len(arr.s) — at least one slot is
	// nil, so every probe ends.
	used int // slots holding an item or a tombstone
	live int // slots holding an item
}

// slots is one array of a table; its length is a power of two.
type slots[T Object] struct {
	mask uint64
	tomb *item[T] // the tombstone: key "" (no stored key is empty)
	s    []atomic.Pointer[item[T]]
}

// item is one stored key as readers see it. hash, key and e are immutable
// once published; the object is in v, which an update of the key replaces
// atomically in place — no allocation per update — as long as the new
// object has the same dynamic type as the old (atomic.Value's rule; an
// informer's objects always do), else the update publishes a new item.
type item[T Object] struct {
	hash uint64
	key  string
	e    *entry[T] // the writers' entry (index positions)
	v    atomic.Value
}

// newItem returns an item holding obj.
func newItem[T Object](h uint64, key string, e *entry[T], obj T) *item[T] {
	it := &item[T]{hash: h, key: key, e: e}
	it.v.Store(obj)
	return it
}

// obj returns the item's object.
func (it *item[T]) obj() T {
	o, _ := it.v.Load().(T)
	return o
}

// minTable is the smallest array of a table.
const minTable = 8

// newTable returns an empty table sized for n items, whose keys hash
// with seed (a table built from another shares its seed, so that a key is
// hashed once for both).
func newTable[T Object](n int, seed maphash.Seed) *table[T] {
	t := &table[T]{seed: seed}
	t.arr.Store(newSlots[T](n))
	return t
}

// newSlots returns an empty array for n items: at most half full.
func newSlots[T Object](n int) *slots[T] {
	size := minTable
	for size < 2*n+2 {
		size *= 2
	}
	return &slots[T]{mask: uint64(size - 1), tomb: &item[T]{}, s: make([]atomic.Pointer[item[T]], size)}
}

// hash returns the hash of key; hashString of a key in a string.
func (t *table[T]) hash(key []byte) uint64       { return maphash.Bytes(t.seed, key) }
func (t *table[T]) hashString(key string) uint64 { return maphash.String(t.seed, key) }

// get returns the item stored under key, nil if none. Safe without any
// lock.
func (t *table[T]) get(key string) *item[T] {
	return t.lookup(t.hashString(key), key)
}

// getBytes is get for a key in a byte slice (no string allocated).
func (t *table[T]) getBytes(key []byte) *item[T] {
	return t.lookupBytes(t.hash(key), key)
}

// lookup is get for a key whose hash is h.
func (t *table[T]) lookup(h uint64, key string) *item[T] { return probe(t, h, key) }

// lookupBytes is getBytes for a key whose hash is h.
func (t *table[T]) lookupBytes(h uint64, key []byte) *item[T] { return probe(t, h, key) }

// probe returns the item stored under key, whose hash is h, nil if none;
// for a key in a string or a byte slice (compared without a copy).
func probe[T Object, K string | []byte](t *table[T], h uint64, key K) *item[T] {
	if len(key) == 0 {
		return nil // the tombstone's key: no object has it
	}
	a := t.arr.Load()
	for i := h & a.mask; ; i = (i + 1) & a.mask {
		it := a.s[i].Load()
		if it == nil {
			return nil
		}
		if it.hash == h && it.key == string(key) {
			return it
		}
	}
}

// put stores obj (entry e) under e.key, whose hash is h, replacing the
// item of that key if there is one. Writers only.
func (t *table[T]) put(h uint64, e *entry[T], obj T) {
	a := t.arr.Load()
	free := -1 // the first tombstone on the probe path
	for i := h & a.mask; ; i = (i + 1) & a.mask {
		it := a.s[i].Load()
		switch {
		case it == nil:
			if free < 0 {
				if t.used+1 >= len(a.s)*3/4 {
					// Copy into a larger (or tombstone-free) array first.
					t.grow(t.live + 1)
					t.put(h, e, obj)
					return
				}
				t.used++
				free = int(i)
			}
			t.live++
			a.s[free].Store(newItem(h, e.key, e, obj))
			return
		case it == a.tomb:
			if free < 0 {
				free = int(i)
			}
		case it.hash == h && it.key == e.key:
			if it.e == e && reflect.TypeOf(it.v.Load()) == reflect.TypeOf(any(obj)) {
				it.v.Store(obj) // in place
				return
			}
			a.s[i].Store(newItem(h, e.key, e, obj))
			return
		}
	}
}

// del removes the item stored under key, whose hash is h, if any. Writers
// only.
func (t *table[T]) del(h uint64, key string) {
	a := t.arr.Load()
	for i := h & a.mask; ; i = (i + 1) & a.mask {
		it := a.s[i].Load()
		if it == nil {
			return
		}
		if it.hash == h && it.key == key {
			a.s[i].Store(a.tomb)
			t.live--
			if len(a.s) > minTable && t.live < len(a.s)/8 {
				t.grow(t.live) // most of the array is empty: a smaller one
			}
			return
		}
	}
}

// grow publishes a copy of the table's items in an array sized for n
// items, without tombstones. Readers still probing the old array find
// what it held; it is never written again.
func (t *table[T]) grow(n int) {
	old := t.arr.Load()
	a := newSlots[T](n)
	for i := range old.s {
		it := old.s[i].Load()
		if it == nil || it == old.tomb {
			continue
		}
		j := it.hash & a.mask
		for a.s[j].Load() != nil {
			j = (j + 1) & a.mask
		}
		a.s[j].Store(it)
	}
	t.used = t.live
	t.arr.Store(a)
}
