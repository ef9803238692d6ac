package workqueue

import (
	"fmt"
	"iter"
	"time"
)

// TriggerType says what kind of cause added a key.
type TriggerType uint8

// The trigger types. A controller's informer sources record Create,
// InitialList, Update, Resync and Delete; a channel source Generic; the
// controller itself Error, RequeueAfter, Stale and SlowDown.
const (
	// TriggerUnknown: an Add that named no cause (Add, AddAll, AddAfter…).
	TriggerUnknown TriggerType = iota
	// TriggerCreate: an object appeared (a watch ADDED event).
	TriggerCreate
	// TriggerInitialList: an object of an informer's initial list or relist.
	TriggerInitialList
	// TriggerUpdate: an object changed.
	TriggerUpdate
	// TriggerResync: an informer's periodic resync (no change).
	TriggerResync
	// TriggerDelete: an object was deleted.
	TriggerDelete
	// TriggerGeneric: an event from outside the API (a channel source).
	TriggerGeneric
	// TriggerError: the key's reconcile failed and it is retried with backoff.
	TriggerError
	// TriggerRequeueAfter: the key's reconcile asked to be called again
	// after a delay (Result.RequeueAfter).
	TriggerRequeueAfter
	// TriggerStale: the controller skipped the key because its cache had
	// not caught up with the key's last reconcile's own writes yet, and
	// requeued it.
	TriggerStale
	// TriggerSlowDown: the controller delayed the key because it loops
	// (see controller.HotLoopOptions.SlowDown).
	TriggerSlowDown

	numTriggerTypes
)

var triggerTypeNames = [numTriggerTypes]string{
	"Unknown", "Create", "InitialList", "Update", "Resync", "Delete", "Generic",
	"Error", "RequeueAfter", "Stale", "SlowDown",
}

func (t TriggerType) String() string {
	if t < numTriggerTypes {
		return triggerTypeNames[t]
	}
	return fmt.Sprintf("TriggerType(%d)", uint8(t))
}

// TriggerObject is what a Trigger reads of its object, when (and only when)
// somebody reads the trigger: every Kubernetes object implements it.
type TriggerObject interface {
	GetNamespace() string
	GetName() string
	GetResourceVersion() string
}

// Trigger is one cause of an add. Recording one costs no allocation: it
// holds its object (the cache's, immutable) rather than copies of its
// namespace, name and resourceVersion, which are read when the trigger is.
type Trigger struct {
	// Type says what happened.
	Type TriggerType
	// Source names where the event came from: the kind of the object
	// ("ConfigMap", "Widget.example.com") or the source.
	Source string
	// Handler names the event handler that mapped the event to the key.
	Handler string
	// Object is the event's object (for a Delete, its last known state);
	// nil for the controller's own requeues.
	Object TriggerObject
	// Time is when the key was added for this cause; the queue sets it when
	// it is zero.
	Time time.Time
	// at is, while the queue holds the trigger, 1 + when it was added in
	// ns since the queue's epoch, for a zero Time (0: unset): one reading
	// of the monotonic clock per add (Time is made from it at the
	// hand-out).
	at int64
}

// RecentTriggers is the number of triggers a key's record keeps: the last
// ones; the others are only counted.
const RecentTriggers = 4

// Triggers is the record of why a key was added since a worker last took it
// (Options.Triggers): the last RecentTriggers triggers and a count of all
// of them by type. Its size is fixed; copying it allocates nothing.
type Triggers struct {
	recent [RecentTriggers]Trigger
	next   uint8 // index in recent of the next trigger
	n      uint8 // triggers held in recent
	counts [numTriggerTypes]uint32
}

// Add records t.
func (r *Triggers) Add(t Trigger) {
	r.recent[r.next] = t
	r.next = (r.next + 1) % RecentTriggers
	if r.n < RecentTriggers {
		r.n++
	}
	r.counts[t.Type]++
}

// merge adds o's triggers after r's: o's kept ones in order, and its
// counts.
func (r *Triggers) merge(o *Triggers) {
	counts := r.counts
	for i := range o.Len() {
		r.Add(o.At(i))
	}
	for t, n := range o.counts {
		counts[t] += n
	}
	r.counts = counts
}

// count records a trigger of type t that is not kept (a plain Add).
func (r *Triggers) count(t TriggerType) { r.counts[t]++ }

// Reset empties the record, letting go of the objects it held.
func (r *Triggers) Reset() {
	r.clearKept()
	r.counts = [numTriggerTypes]uint32{}
}

// clearKept forgets the kept triggers (only the slots in use are written).
func (r *Triggers) clearKept() {
	start := (int(r.next) - int(r.n) + RecentTriggers) % RecentTriggers
	for i := range int(r.n) {
		r.recent[(start+i)%RecentTriggers] = Trigger{}
	}
	r.n, r.next = 0, 0
}

// moveTo moves r's content into dst (whose own content goes) and empties
// r, copying only the triggers in use: most records hold one.
func (r *Triggers) moveTo(dst *Triggers, epoch time.Time) {
	dst.clearKept()
	start := (int(r.next) - int(r.n) + RecentTriggers) % RecentTriggers
	for i := range int(r.n) {
		j := (start + i) % RecentTriggers
		t := &dst.recent[i]
		*t = r.recent[j]
		if t.Time.IsZero() && t.at != 0 {
			t.Time = epoch.Add(time.Duration(t.at - 1))
		}
		t.at = 0
		r.recent[j] = Trigger{}
	}
	dst.n, dst.next = r.n, r.n%RecentTriggers
	dst.counts = r.counts
	r.n, r.next = 0, 0
	r.counts = [numTriggerTypes]uint32{}
}

// Total returns the number of triggers recorded: how many adds were merged
// into one hand-out of the key.
func (r *Triggers) Total() int {
	n := 0
	for _, c := range r.counts {
		n += int(c)
	}
	return n
}

// Count returns the number of triggers of type t recorded.
func (r *Triggers) Count(t TriggerType) int {
	if t >= numTriggerTypes {
		return 0
	}
	return int(r.counts[t])
}

// Counts yields each type recorded with its count, in the order of the
// types.
func (r *Triggers) Counts() iter.Seq2[TriggerType, int] {
	return func(yield func(TriggerType, int) bool) {
		for t, n := range r.counts {
			if n > 0 && !yield(TriggerType(t), int(n)) {
				return
			}
		}
	}
}

// Len returns the number of triggers kept (at most RecentTriggers).
func (r *Triggers) Len() int { return int(r.n) }

// At returns the i-th kept trigger, oldest first (0 ≤ i < Len).
func (r *Triggers) At(i int) Trigger {
	if i < 0 || i >= int(r.n) {
		panic(fmt.Sprintf("workqueue: Triggers.At(%d) out of range [0, %d)", i, r.n))
	}
	start := (int(r.next) - int(r.n) + RecentTriggers) % RecentTriggers
	return r.recent[(start+i)%RecentTriggers]
}
