package apiserver

import (
	"fmt"
	"hash/maphash"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// decodedCache keeps the decoded form (decodeMap's) of recently written
// objects, so that the next update of an object compares with its current
// state without decoding it again. It is bounded: one entry per slot, a
// slot chosen by the object's key; a newer write or another key in the
// same slot replaces an entry. Entries are read-only: their maps are shared
// by every writer that finds them, and never written. The slots are
// allocated by the first put (a server that is only read keeps none). The
// zero value is not usable: see newDecodedCache. It is safe for concurrent
// use.
//
// With onMutation set (tests: Options.decodedMutation), the cache checks
// that rule: put keeps a deep copy of each entry, and check — called after
// every write — compares each entry with its copy, as do put and forget
// when they replace or drop one. A mutated entry is reported to onMutation
// and dropped (so it is reported once, and not used again).
type decodedCache struct {
	seed  maphash.Seed
	slots atomic.Pointer[[decodedCacheSlots]atomic.Pointer[decodedEntry]] // nil until the first put
	// onMutation, when set, receives each mutation found; nil checks
	// nothing. Set by newDecodedCache, never changed.
	onMutation func(error)
}

// decodedEntry is the decoded form of one stored object.
type decodedEntry struct {
	o *storage.Object
	m map[string]any
	// copy is a deep copy of m made by put when the cache checks its rule
	// (onMutation set), nil otherwise.
	copy map[string]any
}

// decodedCacheSlots bounds the entries of a decodedCache (a power of two).
const decodedCacheSlots = 4096

// newDecodedCache returns an empty cache; onMutation, when not nil, turns
// the check of its entries on (see decodedCache).
func newDecodedCache(onMutation func(error)) *decodedCache {
	return &decodedCache{seed: maphash.MakeSeed(), onMutation: onMutation}
}

// slot returns o's slot in slots.
func (c *decodedCache) slot(slots *[decodedCacheSlots]atomic.Pointer[decodedEntry], o *storage.Object) *atomic.Pointer[decodedEntry] {
	return c.slotOf(slots, o.Namespace, o.Name)
}

// slotOf returns the slot of the object ns/name in slots.
func (c *decodedCache) slotOf(slots *[decodedCacheSlots]atomic.Pointer[decodedEntry], ns, name string) *atomic.Pointer[decodedEntry] {
	var h maphash.Hash
	h.SetSeed(c.seed)
	_, _ = h.WriteString(ns)
	_ = h.WriteByte('/')
	_, _ = h.WriteString(name)
	return &slots[h.Sum64()&(decodedCacheSlots-1)]
}

// get returns the decoded form of o if the cache has it. The map must not
// be modified.
func (c *decodedCache) get(o *storage.Object) (map[string]any, bool) {
	slots := c.slots.Load()
	if slots == nil {
		return nil, false
	}
	if e := c.slot(slots, o).Load(); e != nil && e.o == o {
		return e.m, true
	}
	return nil, false
}

// put records m as the decoded form of o, when it is exactly what
// decodeMap(o.Data) gives (see jsontree.Canonical): m is o's state as it was
// encoded, and must not be modified from now on.
func (c *decodedCache) put(o *storage.Object, m map[string]any) {
	if !jsontree.Canonical(m) {
		return
	}
	slots := c.slots.Load()
	if slots == nil {
		c.slots.CompareAndSwap(nil, new([decodedCacheSlots]atomic.Pointer[decodedEntry]))
		slots = c.slots.Load()
	}
	e := &decodedEntry{o: o, m: m}
	if c.onMutation != nil {
		e.copy = runtime.DeepCopyJSON(m)
		c.verify(c.slot(slots, o).Swap(e))
		return
	}
	c.slot(slots, o).Store(e)
}

// forget drops the entry of the object ns/name, if the cache holds one,
// so that a deleted object and its decoded form are not kept alive until
// another write reuses the slot. An entry of another resource with the same
// namespace and name may go too: that only costs a decoding.
func (c *decodedCache) forget(ns, name string) {
	slots := c.slots.Load()
	if slots == nil {
		return
	}
	slot := c.slotOf(slots, ns, name)
	if e := slot.Load(); e != nil && e.o.Namespace == ns && e.o.Name == name {
		if slot.CompareAndSwap(e, nil) && c.onMutation != nil {
			c.verify(e)
		}
	}
}

// check compares every entry with the copy put made of it, reporting and
// dropping the mutated ones, when the cache checks its rule; otherwise it
// does nothing. The write path calls it after every write.
func (c *decodedCache) check() {
	if c.onMutation != nil {
		c.checkAll()
	}
}

func (c *decodedCache) checkAll() {
	slots := c.slots.Load()
	if slots == nil {
		return
	}
	for i := range slots {
		if e := slots[i].Load(); e != nil && !jsontree.Equal(e.m, e.copy) {
			if slots[i].CompareAndSwap(e, nil) {
				c.verify(e)
			}
		}
	}
}

// verify reports e (nil: nothing) if its map is not the copy put made.
func (c *decodedCache) verify(e *decodedEntry) {
	if e == nil || jsontree.Equal(e.m, e.copy) {
		return
	}
	c.onMutation(fmt.Errorf("apiserver: the cached decoded form of %s at resourceVersion %d was modified after it was cached (first difference at %s): entries of the decoded-object cache are shared and must never be written; copy them first",
		e.o.Key(), e.o.ResourceVersion, firstDifference(e.m, e.copy, "")))
}

// firstDifference returns the path of a value that differs between two
// JSON trees (a and b differ), such as .data.k or .spec.ports[0].
func firstDifference(a, b any, path string) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok {
				return path + "." + k + " (added)"
			}
			if !jsontree.Equal(v, w) {
				return firstDifference(v, w, path+"."+k)
			}
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				return path + "." + k + " (removed)"
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		for i := range x {
			if !jsontree.Equal(x[i], y[i]) {
				return firstDifference(x[i], y[i], fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	if path == "" {
		return "the root"
	}
	return path
}
