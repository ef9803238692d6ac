// Package storage is the embedded API server's versioned object store: the
// part of the server that plays etcd and the watch cache. It lives in
// memory, and with [Options.Dir] also in a directory, across restarts.
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
//
// # Persistence
//
// With Options.Dir the store keeps a write-ahead log and snapshots in the
// directory, as etcd does, and a new store on the directory starts with
// the objects, the revision and the history (count, age and bytes bounds
// applied, with each event's original commit time) of the last, and its
// compactions:
//
//   - A write appends its record to the log with one write(2), under its
//     resource's lock, before anyone can see it: a kill -9 of the process
//     (the kernel keeps what was written) loses nothing any client saw.
//   - The write returns only once an fdatasync covers its record. Writers
//     waiting together share one fdatasync (group commit: the first to
//     wait runs it for everything written so far; those who come while it
//     runs wait for the next), so the disk's sync rate bounds the rate of
//     waves of writes, not of writes. An acknowledged write survives a
//     power loss too; a write another client saw before its fdatasync may
//     not (etcd shows a write only once it is on disk).
//   - Revisions are handed out under reservations of 10,000 written to the
//     log before the revisions are used; a new store starts at the last
//     reservation, past every revision the last one may have shown (a
//     list's or a bookmark's included), so no revision means two states.
//     A watch from a revision of before the restart gets the events after
//     it if the history still holds them, else ErrExpired (410), as
//     before the restart.
//   - Once the log since the last snapshot holds Options.SnapshotBytes (64
//     MiB, or the size of the last snapshot if larger), a snapshot starts
//     a new log segment, writes every resource's state and history to a
//     new file (fdatasync, rename), and removes the segments and snapshot
//     it replaces. Writes go on meanwhile; each resource is read under
//     its lock once.
//   - A crash may leave the last record of the newest segment cut short
//     (or followed by zeros): it was never acknowledged, and opening the
//     directory cuts it off, as etcd repairs its log. Any other damage
//     (a bad checksum or length elsewhere, a truncated snapshot, a
//     missing segment) fails New with ErrCorrupt, naming the file and
//     offset; a directory written by a newer format fails with
//     ErrNewerFormat, and one another store has open with ErrInUse (an
//     flock, released by Close or by the end of the process).
//
// A failed write(2) or fdatasync fails that write and every later one
// (what the kernel kept is unknown): the store then serves reads only.
package storage
