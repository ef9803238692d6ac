package storage

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Object is one stored object. It and everything it refers to are immutable
// once committed: never modify the Data, Labels or Fields of an Object that the
// store returned.
type Object struct {
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name of the object.
	Name string
	// UID is checked by [Preconditions].
	UID string
	// ResourceVersion is the revision of the write that produced this state.
	// The store sets it.
	ResourceVersion int64
	// Data is the JSON encoding of the object; its metadata.resourceVersion
	// equals ResourceVersion.
	Data []byte
	// APIVersion is the apiVersion Data is encoded at (objects of one
	// resource may be stored at several versions over time).
	APIVersion string
	// Labels of the object, for label selectors.
	Labels map[string]string
	// Fields holds the selectable fields (metadata.name, metadata.namespace
	// and the ones the kind supports), for field selectors.
	Fields map[string]string

	cost int64 // objectCost, set by the store when it commits the object
}

// Approximate memory costs, in bytes, beyond the bytes of the JSON and of
// the strings: of an Object with its two maps' headers, of one entry of
// those maps, and of an Event in the history (with its place in the ring).
const (
	objectOverhead   = 256
	mapEntryOverhead = 48
	eventOverhead    = 192
)

// objectCost approximates the memory an object holds.
func objectCost(o *Object) int64 {
	n := objectOverhead + len(o.Data) + len(o.Namespace) + len(o.Name) + len(o.UID) + len(o.APIVersion)
	for k, v := range o.Labels {
		n += len(k) + len(v) + mapEntryOverhead
	}
	for k, v := range o.Fields {
		n += len(k) + len(v) + mapEntryOverhead
	}
	return int64(n)
}

// Key returns the object's key inside its resource: "namespace/name".
func (o *Object) Key() string { return Key(o.Namespace, o.Name) }

// Key returns the key of an object inside its resource: "namespace/name", and
// "/name" for cluster-scoped objects. Keys sort by namespace, then name, as
// kube-apiserver's lists do.
func Key(namespace, name string) string { return namespace + "/" + name }

// EncodeFunc produces the object to store once the store knows the revision it
// commits at; it must encode that revision as metadata.resourceVersion. It runs
// under the resource's write lock: keep it to encoding.
type EncodeFunc func(rev int64) (*Object, error)

// UpdateFunc computes the next state of an object from its current state. It
// returns the encoder of the new state, or a nil EncodeFunc for "no change"
// (the store then writes nothing and returns the current object). It may run
// several times if the object changes concurrently, always with a fresh
// current state; it must not keep side effects.
type UpdateFunc func(current *Object) (EncodeFunc, error)

// Preconditions are checked against the current object by [Preconditions.Check].
// Zero fields are not checked.
type Preconditions struct {
	UID             string
	ResourceVersion int64
}

// Check returns an error wrapping [ErrConflict] if cur does not satisfy p.
func (p Preconditions) Check(cur *Object) error {
	if p.UID != "" && p.UID != cur.UID {
		return fmt.Errorf("%w: precondition failed: UID in precondition: %s, UID in object meta: %s", ErrConflict, p.UID, cur.UID)
	}
	if p.ResourceVersion != 0 && p.ResourceVersion != cur.ResourceVersion {
		return fmt.Errorf("%w: precondition failed: ResourceVersion in precondition: %d, ResourceVersion in object meta: %d", ErrConflict, p.ResourceVersion, cur.ResourceVersion)
	}
	return nil
}

// EventType is the type of a watch event; the values are the wire names.
type EventType string

// Event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
)

// Event is one change of one object, or a bookmark. Events are immutable and
// shared by all watchers.
type Event struct {
	Type EventType
	// Revision of the event: Object.ResourceVersion, or the progress revision
	// of a bookmark.
	Revision int64
	// Object is the new state; for Deleted, the last state with the revision
	// of the deletion. Nil for bookmarks.
	Object *Object
	// Prev is the state before the event; nil for Added and bookmarks.
	Prev *Object
	// InitialEventsEnd marks the bookmark that ends the initial events of a
	// watch that asked for them.
	InitialEventsEnd bool
	// LeftSelection marks the Deleted event of an update that made the
	// object stop matching a watcher's predicate (Object is the new state,
	// Prev the one that matched).
	LeftSelection bool
	// Initial marks the synthetic Added events of a watch's initial state
	// (WatchOptions.SendInitialEvents).
	Initial bool

	at    time.Time // commit time, for age-based eviction
	store *Store    // the store whose history holds the event; nil for events made for one watcher
	// state tells whether the frame's cost is charged to the store's
	// history: frameUncharged, then frameCharged (by Frame) or evicted
	// (by the eviction, after which Frame charges nothing).
	state     atomic.Int32
	frameOnce sync.Once
	frame     []byte
	// encodings are the event's other encodings (Encoded), one per key;
	// encodingCost is what those charged to the history cost. Both are
	// guarded by encodingMu.
	encodingMu   sync.Mutex
	encodings    []*encoding
	encodingCost int64
}

// Event.state's values.
const (
	frameUncharged int32 = iota
	frameCharged
	evicted
)

// frameCost is the size of e's frame.
func (e *Event) frameCost() int64 { return int64(len(e.Object.Data) + len(e.Type) + 24) }

// unframe marks e evicted from the history and returns what its frame
// and its other encodings were charged.
func (e *Event) unframe() int64 {
	var refund int64
	if e.state.Swap(evicted) == frameCharged {
		refund = e.frameCost()
	}
	return refund + e.unencode() // after the swap: nothing is charged after it
}

// Frame returns the event as one line of the Kubernetes JSON watch stream,
// {"type":"MODIFIED","object":{...}} followed by a newline. It is computed
// once per event and shared by every watcher: do not modify it. Bookmarks
// have no object and no cached frame; the HTTP layer encodes them.
//
// The frame of an event of the history counts in the history's cost from
// the moment it is built (Store.HistoryBytes), which may make this call
// evict the store's oldest events.
func (e *Event) Frame() []byte {
	charged := false
	e.frameOnce.Do(func() {
		if e.Object == nil {
			return
		}
		b := make([]byte, 0, e.frameCost())
		b = append(b, `{"type":"`...)
		b = append(b, e.Type...)
		b = append(b, `","object":`...)
		b = append(b, e.Object.Data...)
		b = append(b, "}\n"...)
		e.frame = b
		if e.store != nil && e.state.CompareAndSwap(frameUncharged, frameCharged) {
			e.store.historyBytes.Add(e.frameCost())
			charged = true
		}
	})
	if charged {
		e.store.trim()
	}
	return e.frame
}
