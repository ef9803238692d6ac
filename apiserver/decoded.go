package apiserver

import (
	"hash/maphash"
	"sync/atomic"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// decodedCache keeps the decoded form (decodeMap's) of recently written
// objects, so that the next update of an object compares with its current
// state without decoding it again. It is bounded: one entry per slot, a
// slot chosen by the object's key; a newer write or another key in the
// same slot replaces an entry. Entries are read-only: their maps are shared
// by every writer that finds them. The slots are allocated by the first
// put (a server that is only read keeps none). The zero value is not
// usable: see newDecodedCache. It is safe for concurrent use.
type decodedCache struct {
	seed  maphash.Seed
	slots atomic.Pointer[[decodedCacheSlots]atomic.Pointer[decodedEntry]] // nil until the first put
}

// decodedEntry is the decoded form of one stored object.
type decodedEntry struct {
	o *storage.Object
	m map[string]any
}

// decodedCacheSlots bounds the entries of a decodedCache (a power of two).
const decodedCacheSlots = 4096

func newDecodedCache() *decodedCache {
	return &decodedCache{seed: maphash.MakeSeed()}
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
	c.slot(slots, o).Store(&decodedEntry{o: o, m: m})
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
		slot.CompareAndSwap(e, nil)
	}
}
