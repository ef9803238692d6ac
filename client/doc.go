// Package client reads and writes Kubernetes objects for controllers:
// reads from the informer cache, writes to the API server.
//
//	API server → reflector → fifo → cache → handlers → workqueue → Reconcile → client → API server
//
// A [Client] made with Options.Factory serves Get and List from the
// factory's shared informers: the first read of a kind starts an informer
// for the whole kind and waits for its initial list (and for
// Factory.Start), so that later reads are map lookups. Get and List fill
// the caller's object with a deep copy: the caller may modify it. Reads
// are as fresh as the cache — a little behind the server right after a
// write; use [Client.Uncached] (or Options.Uncached for whole kinds) for a
// read that must see the latest state.
//
// [Client.IndexField] indexes a kind's cached objects by a field of your
// choosing, as controller-runtime's FieldIndexer: a cached List with
// MatchingFields on that field is then answered from the index (in every
// informer of the kind, scoped ones included). Without an index, a cached
// List can select on metadata.name and metadata.namespace only; other
// fields are a BadRequest that says to index them or read uncached.
//
// A controller that watches a kind with a scope (builder.WithScope: a
// namespace, a label or field selector) reads that kind from the informer
// of the scope: the builder puts [ReadScopes] in the context of its
// reconciles and handlers ([WithReadScopes]), and Get and List with that
// context use the same shared informer that woke the reconcile. The read
// is never older than the event, and no second, whole-kind informer is
// started. Such a controller sees only its scope: Get of an object its
// selectors exclude is NotFound, List returns the scope's objects, and a Get
// or List in a namespace outside it fails with [ErrOutOfScope] (as with
// controller-runtime's namespace-restricted caches), not NotFound for an
// object that may exist. Reads with a context without scopes (outside
// reconciles, other controllers) use the whole-kind informer. A factory
// with FactoryOptions.DefaultNamespaces (or ByObject namespaces) scopes the
// reads of namespaced kinds to those namespaces the same way: a Get or a
// List of one namespace reads that namespace's informer, a List of all
// namespaces merges theirs, and a namespace outside them is ErrOutOfScope.
//
// Create, Update, Patch, Delete, DeleteAllOf and Status().Update /
// Status().Patch go to the API server over the *rest.Config's transport, and
// fill the object with the server's answer. [Client.DeleteAllOf] deletes what
// its list options select (namespace, labels, fields) in one collection
// DELETE, with a Delete's options. Patches: [MergeFrom] (a JSON merge
// patch), [MergeFromWithOptimisticLock] (one that carries the
// resourceVersion: a Conflict if the object changed since it was read),
// [StrategicMergeFrom] (lists merged by key, for built-in kinds), [RawPatch].
// [Client.Apply] and Status().Apply send a server-side apply of an
// [ApplyConfiguration] — client-go's typed apply configurations, or an
// unstructured object through [ApplyConfigurationFromUnstructured] — under
// the write's field manager ([FieldOwner] or Options.FieldOwner: one is
// required), [ForceOwnership] to take conflicting fields over.
// [Reader], [Writer], [StatusClient] and [ReadWriter] are the interfaces
// *Client implements, for wrappers and fakes in unit tests. Errors from the server are *apierrors.StatusError, so
// apierrors.IsNotFound, IsConflict and IsAlreadyExists work; [IgnoreNotFound]
// and [IgnoreAlreadyExists] turn the expected ones into nil. As client-go's
// REST client does, a request answered 429 (API Priority and Fairness) or
// 5xx with a Retry-After header (delay-seconds or an HTTP-date) is sent
// again after that wait, up to 10 times, while its context lasts; the
// error of an answer whose Status does not say has the header's wait in
// Details.RetryAfterSeconds (apierrors.SuggestsClientDelay). rest.Config's
// RateLimiter, or QPS (> 0) and Burst (default 10), limit the client's
// requests as in client-go; QPS 0 means no client-side limit, as with
// controller-runtime's config since v0.21 (API Priority and Fairness
// protects the server).
//
// A [Recorder] records Kubernetes Events about objects, as client-go's
// EventRecorder: Event and Eventf never block (a goroutine run by
// Recorder.Start writes them, in order, through the Client), a repeated
// event counts on the existing Event (count and lastTimestamp patched), and
// a spam filter caps each object's events (25, then one per 5 minutes), and
// from the tenth distinct message within 10 minutes, similar events (same
// object, type and reason) are combined into one Event, as client-go's
// EventAggregator does. manager.Manager.Recorder hands them out.
//
// # Read-your-own-writes
//
// With a Factory, the client remembers what each of its writes of a cached
// kind returned — Create, Update, Patch, Apply, Status().Update/Patch/Apply:
// the object's resourceVersion; Delete: that the object (its UID) is gone —
// and a cached Get of that object, or a cached List of that kind (in that
// namespace), waits until the informer it reads has caught up with the write:
// the cache holds the object at that resourceVersion or later, or the
// informer's StoreResourceVersion (the last event, relist or bookmark it
// applied) reached it, compared with k8s.io/apimachinery/pkg/util/resourceversion.
// A read waits at most until Options.ReadYourOwnWritesTimeout (3 s) after the
// write, then goes on with the cache as it is, logs a warning (once per
// write) and counts a stale read (Options.Metrics; kloop.dev/kloop/metrics'
// Client exposes the counters). A resourceVersion that does not parse tells
// nothing and is not waited for; so are dry runs, DeleteAllOf (its answer
// names no object), writes of kinds read from the API server, and writes to
// a cache scoped by a field selector (one scoped by a label selector waits
// for the objects it selects). A read whose context is cancelled while it
// waits fails with the context's error. The writes of one client only:
// another process's writes, or another client's, are not waited for, as
// with any cache. Options.DisableReadYourOwnWrites turns it off; a
// controller's Options.DisableReadYourOwnWrites turns it off for that
// controller's reconciles. A write made in a controller's reconcile is also
// handed to the controller, which holds the key's next reconcile until the
// cache has it (see kloop.dev/kloop/controller).
//
// # Tracing
//
// Options.TracerProvider makes each request of the client an OpenTelemetry
// span "<VERB> <resource>", child of the span in the request's context (a
// traced reconcile's), with the call's attributes and the answer's status
// and resourceVersion; a manager's client is traced by the manager's
// transport instead (manager.Options.TracerProvider). In a traced
// reconcile (controller.Options.TracerProvider) each write hands the
// controller its span, which the controller links the reconciles that the
// write's event triggers to.
//
// A namespace given for a cluster-scoped kind (in an ObjectKey, InNamespace
// or an object's metadata) is ignored, as by controller-runtime and
// kube-apiserver, cached or not.
//
// Typed objects (k8s.io/api structs, CRD structs registered in the Scheme),
// *unstructured.Unstructured and *metav1.PartialObjectMetadata (with their
// apiVersion and kind set) are all accepted; kinds map to resources through
// the factory's Mapper (discovery by default). A metadata-only object is
// read, patched and deleted, never created or updated (Create, Update and
// Status().Update refuse it: the server would drop everything but its
// metadata).
package client
