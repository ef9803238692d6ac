// Package cache is the indexer stage of kloop's informer pipeline:
//
//	API server → reflector → fifo → cache → event handlers → workqueue → Reconcile
//
// The informer pops deltas from the FIFO, applies each one to an [Indexer]
// (Add, Update, Delete, or Replace for a relist), and only then notifies the
// event handlers, so a handler that reads the cache sees at least the state in
// its event. Controllers read the Indexer (through the informer and the
// cached client) instead of calling the API server: a Get is a map lookup.
// The Indexer is also usable on its own as a thread-safe keyed store.
//
// # Keys and indexes
//
// Objects are stored under [Key]: "namespace/name", or "name" for
// cluster-scoped objects; [SplitKey] reverses it. Every Indexer has the index
// [NamespaceIndex] (cluster-scoped objects under ""), unless
// Options.DisableNamespaceIndex; more indexes are [IndexFunc]s given in
// Options.Indexers or added later with [Indexer.AddIndexers], which builds
// them from the objects already stored.
//
// # Shared objects: never mutate
//
// Reads return the stored objects themselves, not copies: the same pointer is
// handed to every controller and handler in the process. Mutating one corrupts
// everybody's view and the indexes. DeepCopy an object before changing it.
// Tests should create their Indexers with Options.DetectMutations (and
// OnMutation: t.Error) or call [Indexer.Check] at the end: the Indexer then
// keeps a deep copy of each object and reports every object mutated after it
// was stored, with the path of the first changed field.
//
// # Performance
//
// Objects live in a hash table of entries plus dense slices (all objects, and
// the objects of each namespace), so List and ByIndex on the namespace index
// copy a slice instead of iterating a map or chasing pointers. Custom index
// buckets point at entries: an Update that does not change an object's index
// values (always the case for the namespace index, whose value is part of the
// key) touches no index. Lookups build their key on the stack.
//
// Get and GetByKey take no lock at all: they read a hash table whose writers
// store an updated object atomically into the key's item (a new item only
// for a new key, or an object of another dynamic type; a new array when the
// table grows), so
// a reader never waits for a writer nor a writer for readers (on a
// read-write lock, an informer updating the cache and a worker reading it
// fall into step, each parking until the other leaves). Custom index funcs
// run before the write lock is taken, into a stack buffer, and Replace
// builds the new content without any lock,
// so readers of List and the indexes wait only for the swap; ReplaceFrom
// builds it from batches as a producer hands them over (the informer interns
// a relist's objects while the cache indexes them). Allocations per
// operation:
//
//	Update (existing key)      0 allocs   (when the object keeps its dynamic type)
//	Update with a custom index 1 alloc    (what the IndexFunc returns)
//	Get / GetByKey             0 allocs
//	Add (new key)              3 allocs   (the entry, its key string and its item)
//	List, ByIndex              1 alloc    (the result slice)
//
// Timings, the index's memory beyond the objects, and the commands are in
// README.md in this directory.
package cache
