// Package storage is the embedded API server's in-memory, versioned object
// store: the part of the server that plays etcd and the watch cache.
//
// # Revisions
//
// The store keeps one global, monotonic revision, like etcd's. Every write
// takes the next revision and it becomes the written object's
// resourceVersion. Revisions of one resource increase in commit order;
// revisions of different resources interleave, so a resource sees gaps, as it
// does on etcd.
//
// # Representation
//
// Objects are stored pre-encoded: an [Object] holds the JSON bytes of the
// object (with metadata.resourceVersion already set to its revision), plus the
// few attributes the store and the watchers filter on (namespace, name, uid,
// labels and selectable fields), which the caller extracts once at write time.
// Stored objects and their bytes are immutable. This makes the hot paths cheap:
// a GET or a LIST copies bytes into the response without encoding, and a watch
// event is framed once ([Event.Frame]) and the same bytes are written to every
// watcher, whatever their number. Writers pay the encoding once, on the write.
//
// # History and watches
//
// Every resource has an event history: a ring bounded by event count and by
// age (defaults 10,000 events and 5 minutes, the etcd compaction interval);
// the histories of all resources together are bounded by bytes too (default
// 128 MiB; [Store.HistoryBytes] says what an event costs): past it the
// store's oldest events go first, whatever their resource, as an etcd
// compaction would drop them, so large objects written often cannot make
// the history hold gigabytes. An eviction, whichever bound makes it, moves
// the resource's oldest servable revision exactly as a compaction does.
// A watcher is only a cursor into that ring, so a write costs the same with no
// watcher or with thousands: it appends one event and wakes the waiting
// watchers. Each watcher filters and reads on its own goroutine. A watcher
// that falls so far behind that its next event left the ring is disconnected
// with [ErrWatcherTooSlow] (the client re-watches from its last revision, or
// relists on 410): a slow consumer never slows writers or other watchers, and
// the memory a slow watcher can hold is bounded by the ring.
//
// Watching from a revision delivers every event after it, with no gap and no
// duplicate, as long as the revision is inside the history; an older one gets
// [ErrExpired] (HTTP 410 Gone, reason Expired) and a revision the store has
// not reached gets [ErrTooLargeResourceVersion]. Because every write is
// visible as soon as it commits, a revision beyond the current one cannot
// have been handed out by this store, so the store answers at once rather
// than waiting for it as kube-apiserver's watch cache does.
//
// Lists read the current state, or the exact state at an older revision that
// is still inside the history (the ring keeps the previous state of every
// event, so the store rolls the current state back), which also gives
// consistent pagination.
package storage
