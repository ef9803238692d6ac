package trigger

import (
	"fmt"
	"iter"
	"time"
)

// Type says what kind of cause added a key.
type Type uint8

// The cause types. An informer source records Create, InitialList, Update,
// Resync and Delete; a channel source Generic; the controller itself Error,
// RequeueAfter, Stale and SlowDown.
const (
	// Unknown: an add that named no cause (a plain Add, AddAll, AddAfter…).
	Unknown Type = iota
	// Create: an object appeared (a watch ADDED event).
	Create
	// InitialList: an object of an informer's initial list or relist.
	InitialList
	// Update: an object changed.
	Update
	// Resync: an informer's periodic resync (no change).
	Resync
	// Delete: an object was deleted.
	Delete
	// Generic: an event from outside the API (a channel source).
	Generic
	// Error: the key's reconcile failed and it is retried with backoff.
	Error
	// RequeueAfter: the key's reconcile asked to be called again after a
	// delay (Result.RequeueAfter).
	RequeueAfter
	// Stale: the controller skipped the key because its cache had not
	// caught up with the key's last reconcile's own writes yet, and
	// requeued it.
	Stale
	// SlowDown: the controller delayed the key because it loops (see
	// controller.HotLoopOptions.SlowDown).
	SlowDown

	numTypes
)

var typeNames = [numTypes]string{
	"Unknown", "Create", "InitialList", "Update", "Resync", "Delete", "Generic",
	"Error", "RequeueAfter", "Stale", "SlowDown",
}

func (t Type) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("trigger.Type(%d)", uint8(t))
}

// Object is what a Cause reads of its object, when (and only when) somebody
// reads the cause: every Kubernetes object implements it.
type Object interface {
	GetNamespace() string
	GetName() string
	GetResourceVersion() string
}

// Cause is one cause of an add. Recording one costs no allocation: it holds
// its object (the cache's, immutable) rather than copies of its namespace,
// name and resourceVersion, which are read when the cause is.
type Cause struct {
	// Type says what happened.
	Type Type
	// Source names where the event came from: the kind of the object
	// ("ConfigMap", "Widget.example.com") or the source.
	Source string
	// Handler names the event handler that mapped the event to the key.
	Handler string
	// Object is the event's object (for a Delete, its last known state);
	// nil for the controller's own requeues.
	Object Object
	// Time is when the key was added for this cause; a work queue sets it
	// when it is zero.
	Time time.Time
}

// Recent is the number of causes a Record keeps: the last ones; the others
// are only counted.
const Recent = 4

// Record is why a key was added since a worker last took it: the last
// Recent causes and a count of all of them by type. Its size is fixed;
// copying it allocates nothing. The zero Record is empty.
type Record struct {
	recent [Recent]Cause
	next   uint8 // index in recent of the next cause
	n      uint8 // causes held in recent
	counts [numTypes]uint32
}

// Add keeps c (dropping the oldest kept cause past Recent) and counts it.
func (r *Record) Add(c Cause) {
	r.recent[r.next] = c
	r.next = (r.next + 1) % Recent
	if r.n < Recent {
		r.n++
	}
	r.counts[c.Type]++
}

// Tally counts a cause of type t without keeping it: an add that named no
// cause.
func (r *Record) Tally(t Type) {
	if t < numTypes {
		r.counts[t]++
	}
}

// Merge adds o's causes after r's: o's kept ones in order, and its counts.
func (r *Record) Merge(o *Record) {
	counts := r.counts
	for i := range o.Len() {
		r.Add(o.At(i))
	}
	for t, n := range o.counts {
		counts[t] += n
	}
	r.counts = counts
}

// Reset empties the record, letting go of the objects it held.
func (r *Record) Reset() {
	r.clearKept()
	r.counts = [numTypes]uint32{}
}

// clearKept forgets the kept causes (only the slots in use are written).
func (r *Record) clearKept() {
	start := r.start()
	for i := range int(r.n) {
		r.recent[(start+i)%Recent] = Cause{}
	}
	r.n, r.next = 0, 0
}

func (r *Record) start() int { return (int(r.next) - int(r.n) + Recent) % Recent }

// MoveTo moves r's content into dst (whose own content goes) and empties r,
// copying only the causes in use (most records hold one).
func (r *Record) MoveTo(dst *Record) {
	dst.clearKept()
	start := r.start()
	for i := range int(r.n) {
		j := (start + i) % Recent
		c := &dst.recent[i]
		*c = r.recent[j]
		r.recent[j] = Cause{}
	}
	dst.n, dst.next = r.n, r.n%Recent
	dst.counts = r.counts
	r.n, r.next = 0, 0
	r.counts = [numTypes]uint32{}
}

// Total returns the number of causes recorded: how many adds were merged
// into one hand-out of the key.
func (r *Record) Total() int {
	n := 0
	for _, c := range r.counts {
		n += int(c)
	}
	return n
}

// Count returns the number of causes of type t recorded.
func (r *Record) Count(t Type) int {
	if t >= numTypes {
		return 0
	}
	return int(r.counts[t])
}

// Counts yields each type recorded with its count, in the order of the
// types.
func (r *Record) Counts() iter.Seq2[Type, int] {
	return func(yield func(Type, int) bool) {
		for t, n := range r.counts {
			if n > 0 && !yield(Type(t), int(n)) {
				return
			}
		}
	}
}

// Len returns the number of causes kept (at most Recent).
func (r *Record) Len() int { return int(r.n) }

// At returns the i-th kept cause, oldest first (0 ≤ i < Len).
func (r *Record) At(i int) Cause {
	if i < 0 || i >= int(r.n) {
		panic(fmt.Sprintf("trigger: Record.At(%d) out of range [0, %d)", i, r.n))
	}
	return r.recent[(r.start()+i)%Recent]
}
