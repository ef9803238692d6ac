// Package informer is the stage of kloop's pipeline that wires the others
// together and fans changes out to event handlers:
//
//	API server → reflector → fifo → cache → event handlers → workqueue → Reconcile
//
// An [Informer] runs a reflector (list, then watch) that pushes every change
// into an in-order FIFO; one goroutine pops the FIFO, applies each delta to
// the cache, and THEN queues a notification for every handler, so a handler
// that reads the cache sees at least the state of its event. A relist is
// applied as one atomic cache Replace (built while the objects are interned,
// for large lists); objects that disappeared during the
// gap are reported as [Deleted] tombstones with FinalStateUnknown and the
// last state the cache held; changed objects as updates, new ones as adds;
// objects relisted unchanged (the resourceVersion the cache holds) are
// cached without a notification, as client-go treats them as resyncs — a
// relist after 410 Gone does not make every controller reconcile every
// object (periodic resyncs are the handlers' own, below).
//
// # Handlers
//
// Each [Handler] added with AddHandler has its own unbounded, ordered buffer
// drained by its own goroutine (started by Run): a slow handler delays only
// itself, never the watch, the cache or the other handlers. A handler added
// after the start first gets an OnAdd (initialList true) for every cached
// object. [Registration.HasSynced] is per handler: true once that handler
// has returned from every notification of the initial list. Resyncs are per
// handler too (HandlerOptions.ResyncPeriod; 10 h ± 10 % by default, NoResync
// turns them off, at least MinResyncPeriod, 1 s, as in client-go):
// OnUpdate(obj, obj) for every cached object, queued in
// order with the handler's other notifications. The informer takes queued
// watch events from its FIFO in runs of up to 64: it applies a run to the
// cache, then notifies every handler of it, so a handler always finds in the
// cache the state of its notification or a newer one (as in client-go), and
// a burst costs one wake-up per run, not per event. HandlerOptions.Inline
// instead calls a handler on the informer's own goroutine right after the
// cache update of each run, for handlers that only enqueue keys and never
// block (the controller's own): one hand-off less per event. A Handler that
// is also a [Flusher] is told when each run of its notifications ends
// (after the run, before HasSynced counts it), so that it can hand over
// what the run produced in one go: a [Source] adds a run's keys to the
// work queue under one take of its lock. A handler that panics is
// logged and keeps receiving later notifications. When Run's context is
// cancelled, pending notifications are dropped and Run returns once the
// handler calls in progress have returned.
//
// Handlers should only compute keys and add them to a work queue. Objects
// passed to handlers and returned by Get, List and ByIndex are the cached
// ones, shared by everybody: never mutate them (DeepCopy first).
//
// # Lean by default
//
// Before an object is queued, the informer drops metadata.managedFields
// (Options.KeepManagedFields opts out) and runs Options.Transform, on the
// watch's goroutine; as it caches the object, on its own goroutine (the
// cache's only writer, which reads the cached version without contention),
// it interns strings (Options.DisableInterning opts out): in metadata the namespace,
// label keys and values, annotation keys and short values, finalizers and
// owner references' apiVersion, kind, name and uid; elsewhere every string of at
// most 64 bytes (images, node names, env values, condition types, IPs of a
// node…) and, for unstructured objects, every map key. Equal labels,
// annotations, other map[string]string (node selectors, a CR's parameters,
// a ConfigMap's data) and resource lists (requests, limits, capacity) of
// typed objects become one shared map: the Pods of one ReplicaSet hold one
// of each. The same pass drops the spare capacity a JSON decoder leaves in
// slices.
//
// Canonical strings and maps live in tables of the informer (Go's unique
// package would drop a copy at every garbage collection once its Handle is
// gone, and share nothing across collections). The tables work in
// generations: when a generation has added as many entries as the table
// held at its start (at least 4096), it becomes the previous one and the
// one before is dropped, so an entry no object brings during a whole
// generation is released. Typed objects are walked by a plan compiled once
// per Go type, and an update is walked together with the version the cache
// holds: what did not change takes the cached copies, so only new strings
// are looked up; memory the cached version owns (an object sent again, a
// shared slice or map) is never written, since handlers read it
// concurrently. Shared maps are read-only like everything cached (DeepCopy
// gives a caller maps of its own); the mutation detector reports a write
// to one.
//
// By default an updated object has only its metadata interned against the
// cached version; Options.InternUpdates interns it whole. Figures (memory
// per cached object, cost per event, side by side with client-go's
// SharedIndexInformer): bench/README.md.
//
// # Source: informer events to a controller
//
// [Source] (NewSource) is the controller.Source over one shared informer: a
// handler registered on the informer when the controller starts,
// predicates, and a handler.EventHandler; initial-list and resync events go
// to the low-priority enqueuer, and HasSynced is the informer
// registration's. The builder makes one for each For, Owns and Watches. A
// resync is known by its update carrying the very same object as old and
// new (a relist never notifies an unchanged object), without reading
// either. The requests its handler adds during a run of informer events
// wait for the run's end ([Flusher]) and reach the controller's queue with
// one AddAll: the informer takes the queue's lock once per run instead of
// once per event, which with several workers was most of its cost per
// event. Adds from elsewhere — a handler that kept its Enqueuer — go to the
// queue at once between runs, and with the run's requests during one. The
// package imports handler and handler/predicate for this, not the
// controller: Source takes the queue as handler.Enqueuers. When the queue
// records why each request was added (handler.TriggerEnqueuer: the
// controller's does), each request goes with its event's trigger — type,
// SourceOptions.Kind, the event's object, the handler's name — at no
// allocation per event (the trigger holds the object; see
// reconcile.TriggersFrom).
//
// # How far the cache has caught up
//
// StoreResourceVersion is the resourceVersion of the last relist, watch
// event or bookmark the cache applied: every change up to it is in the
// cache, also of objects that did not change (a bookmark moves it). A
// write answered with resourceVersion rv is in the cache once it is at rv
// or later (kloop.dev/kloop/client's read-your-own-writes waits for that);
// Changed wakes a reader at each change of the cache. Both take their own
// lock, never the one held while handlers run inline, so a handler may read
// them; a handler that waits for the cache must not run inline (it holds
// the very goroutine that would advance it).
//
// # Factory
//
// A [Factory] shares informers: exactly one informer — one watch, one cache
// — per representation (typed, unstructured, metadata-only), resource and
// scope (namespace, label selector, field selector), however many callers
// ask. Typed informers map a Go type to its resource through a
// runtime.Scheme (Go type → kind) and a [Mapper] (kind → resource); by
// default the Scheme knows k8s.io/api's types and the Mapper asks the
// server's discovery, once per group version (again when a kind is
// missing, for CRDs created since), serving the kinds it knows without a
// lock while it asks for others. Users add their CRD types to the Scheme,
// or register their resources with a meta.DefaultRESTMapper given as
// [StaticMapper] to avoid discovery. [Factory.ForObject] gives an untyped
// view for code that only has a runtime.Object (the cached client). Typed,
// unstructured and metadata-only informers of one resource are distinct
// informers (they decode differently), as in controller-runtime.
// Metadata-only informers ask the server for PartialObjectMetadata: the
// cheapest way to watch a kind whose content a controller never reads.
//
// With the default Mapper, an informer whose list or watch the server
// answers 404 — its kind no longer served, its CRD deleted — makes the
// factory ask discovery afresh; if the kind is gone, the factory stops and
// drops every informer of the resource (their caches with them) and closes
// their [Informer.Dropped] channels; the next request for the kind makes a
// new informer once [Factory.WaitForKind] sees it served again.
//
// FactoryOptions.DefaultNamespaces restricts the informers of namespaced
// kinds to some namespaces (controller-runtime's cache.Options.DefaultNamespaces):
// an operator whose RBAC grants it those namespaces never lists the whole
// cluster. With several, an informer whose Scope names no namespace is a
// view of one informer (one list and watch) per namespace: its reads of one
// namespace go to that namespace's informer, List merges them, and its
// handlers receive the events of all of them, one at a time.
// FactoryOptions.ByObject overrides the namespaces per kind (GroupKind) and
// adds label and field selectors and a transform to every informer of the
// kind (controller-runtime's cache.Options.ByObject). Cluster-scoped kinds
// ignore the namespaces.
//
// The lists and watches of all a factory's informers share one client-side
// rate limit, as those of a client-go informer factory share their
// clientset's: the rest.Config's RateLimiter if set, else one token bucket
// of its QPS with its Burst (default 10) made by NewFactory when QPS > 0;
// QPS 0 or negative means none (controller-runtime's convention). Discovery
// requests are not limited.
//
//	f, _ := informer.NewFactory(cfg, informer.FactoryOptions{})
//	pods, _ := informer.InformerFor[*corev1.Pod](f, informer.Scope{Namespace: "default"})
//	reg, _ := pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{...}, informer.HandlerOptions{})
//	go f.Start(ctx)
//	_ = f.WaitForCacheSync(ctx)
//
// # Without the Factory
//
// New takes any reflector.ListerWatcher, so an informer can be fed by a
// test double or by reflector.NewRESTListerWatcher directly; Run blocks
// until its context is cancelled and starts no goroutine before.
package informer
