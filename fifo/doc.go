// Package fifo is the in-order queue of kloop's informer pipeline:
//
//	API server → reflector → fifo → cache → event handlers → workqueue → Reconcile
//
// The reflector pushes every watch event into a [FIFO] (Add, Update, Delete,
// Bookmark) and every relist as one Replace; the informer Pops, applies each
// delta to the cache, then notifies its handlers. The producer side is the
// interface the reflector declares:
//
//	Add(obj T) error; Update(obj T) error; Delete(obj T) error
//	Replace(objs []T, resourceVersion string) error; Bookmark(resourceVersion string) error
//
// # Semantics
//
// Every delta is delivered, in the order it was pushed, exactly once: there
// is no merging of the deltas of one object (client-go's RealFIFO, not its
// DeltaFIFO). The delta types are Added, Updated, Deleted, Replaced, Sync and
// Bookmark.
//
// Replace is atomic. It queues one batch — a Replaced delta for every listed
// object, then a Deleted delta with FinalStateUnknown for every key that the
// consumer would hold once the deltas queued before it are applied but that
// the list lacks, carrying the last state known (from the last queued delta,
// else from [KnownObjects]) — and Pop hands that whole batch to one call of
// the process func. A handler therefore never sees a half-replaced world: the
// informer applies the batch to the cache, then notifies. Deltas already
// queued before the Replace are delivered before it; deltas pushed after,
// after it. Deltas being processed by a running Pop count as queued (they may
// not have reached the cache yet), which closes a race that client-go's
// unlocked processing leaves open.
//
// Other deltas are handed one per Pop, or, with Options.MaxRun, in runs:
// the delta at the head and the single deltas queued right behind it, up to
// MaxRun, in order (the informer takes runs of 64, so a burst of watch events
// costs it one wake-up and one lock per run). A run never holds a delta of a
// Replace batch, so the consumer tells them apart by the first delta: a
// Replace batch starts with Replaced, or with a Deleted whose
// FinalStateUnknown is set.
//
// Resync queues a Sync delta for every known object that has no delta
// queued or in flight, as client-go does: a queued delta will deliver a newer
// state, and a Sync of the older known one behind it would roll the consumer
// back.
//
// HasSynced follows client-go: the first Add, Update, Delete or Replace marks
// the FIFO populated; if it was a Replace, HasSynced becomes true when every
// delta queued up to and including that batch has been popped and its process
// func has returned (initialPopulationCount reaches zero); if it was an Add,
// Update or Delete (a hand-populated FIFO), at once. [FIFO.Synced] is a
// channel closed at that moment.
//
// # A slow consumer and memory
//
// Producers never block and nothing is dropped or merged, so when the
// consumer is slower than the watch the queue grows without bound, as
// client-go's does: memory is about 64 bytes per queued delta plus the objects
// it references, most of which become cached anyway. Export [FIFO.Len] as a
// gauge and alert on it. A consumer that cannot keep up is better fixed at the
// handlers (they only enqueue keys) than by dropping events: a FIFO that
// dropped deltas would leave the cache wrong until the next relist. The queue
// grows by chunks of 128 deltas and gives each chunk back as it is drained
// (up to four are kept for reuse), so a burst (for example a relist) never copies
// what is queued and its memory goes back as it drains; a Pop's batch buffer
// bigger than 1,024 deltas is not kept.
//
// # Performance
//
// Deltas live in chunks of values (internal/chunkq); a Pop copies its unit into a
// reused buffer, so pushing and popping allocate nothing but the key string
// of a namespaced object (and only signal the consumer when it is waiting).
// Figures (`go test -run='^$' -bench=. -benchmem ./fifo/`): bench/README.md.
package fifo
