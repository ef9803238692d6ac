// Package controller runs a reconcile.Reconciler: it owns a work queue of
// reconcile.Requests (kloop.dev/kloop/workqueue), starts its sources, waits
// for them to sync, and runs MaxConcurrentReconciles workers that take keys
// and call Reconcile.
//
//	c, err := controller.New("widget", r, controller.Options{MaxConcurrentReconciles: 4})
//	src, err := controller.NewChannelSource(events, handler.EnqueueRequestForObject{}, controller.ChannelOptions{})
//	err = c.Watch(src)
//	err = c.Start(ctx) // blocks until ctx is cancelled
//
// # The Result rules
//
// Exactly as controller-runtime (pkg/internal/controller), with kloop's
// Result that has only RequeueAfter:
//
//	Result{}, nil               Forget (the backoff resets); the key leaves the queue
//	Result{RequeueAfter: d}, nil Forget, then AddAfter(d)
//	_, err                      AddRateLimited (backoff); the Result is ignored, and a
//	                            warning is logged when it was set
//	_, reconcile.Terminal(err)  logged and counted, Forget, not requeued
//	panic                       counted; recovered into an error wrapping ErrPanic and
//	                            handled as one (Options.RecoverPanic, default true)
//
// One difference from controller-runtime: a terminal error also resets the
// key's backoff (Forget), since it will not be retried.
//
// Each reconcile gets a reconcile ID (a random UUID) and a logger with the
// attributes controller, namespace, name and reconcileID in its context (read
// them with reconcile.IDFrom and reconcile.LoggerFrom). With ReconcileTimeout
// set, its context is cancelled once the timeout expires, with a cause that
// wraps ErrReconcileTimeout. Options.BaseContext adds values to the context
// of every reconcile and source handler (the builder adds the
// client.ReadScopes of the watches with a scope).
//
// Logs go to Options.Logger, slog.Default() unless set (as every stage's
// Logger: Go's convention, so that a failing reconcile is never silent;
// slog.New(slog.DiscardHandler) silences it). logr users (zapr, funcr,
// klog) bridge both ways with logr's own functions:
// slog.New(logr.ToSlogHandler(l)) as a Logger, and
// logr.FromSlogHandler(logger.Handler()) for code that takes a logr.Logger.
// Through that bridge an error record arrives as logr's Error(nil, msg)
// with the error in its "err" value, and logr's V(n) is slog's level -n.
//
// # Sources, sync and priorities
//
// A Source delivers events through two handler.Enqueuers onto the same
// queue: live changes at priority 0, and the objects of the initial list and
// resyncs at LowPriority (-100), as controller-runtime's priority queue, so
// that a restart with a large list does not delay live changes. Handlers never
// see the queue. Start starts every source (Source.Start blocks until its
// context is cancelled; the controller owns and joins those goroutines) and
// reconciles nothing until every source's HasSynced is true; if that takes
// longer than CacheSyncTimeout (default 2 minutes) Start returns an error.
// ChannelSource feeds events from a Go channel; informer.Source, the adapter
// of a shared informer, comes with the informer stage.
//
// # Concurrency and shutdown
//
// The queue hands a key to one worker at a time, so a key is never reconciled
// twice at once, while different keys run in parallel up to
// MaxConcurrentReconciles. A key added while it is reconciled is reconciled
// once more afterwards; keys added many times while waiting are reconciled
// once.
//
// When the context of Start is cancelled, the controller stops its sources,
// shuts the queue down with drain (the reconciles in flight finish; their
// context is cancelled, as in controller-runtime; keys still waiting are
// dropped and will come back with the next initial list), waits for its
// workers and returns nil. A failing source stops the controller the same
// way, and Start returns the source's error.
//
// # Why each reconcile ran
//
// The work queue keeps, for each key waiting, a record of what added it:
// the last trigger.Recent causes — an informer event (Create,
// InitialList, Update, Resync, Delete: the kind, the object's namespace,
// name and resourceVersion, the handler, the time), a channel source's
// event, or the controller's own requeue (Error, RequeueAfter, and Stale or
// SlowDown below) — and a count of every cause, merged as the key's adds
// merge (a key held by a worker and added again starts a new record for its
// next reconcile). reconcile.TriggersFrom(ctx) reads it; the reconcile's log
// lines carry it as the attribute group triggers (total, recent). It is for
// observability only: logic stays level-triggered. Recording allocates
// nothing per event; Options.DisableTriggers turns it off.
//
// # Read-your-own-writes and stale keys
//
// The writes a reconcile makes through kloop.dev/kloop/client are handed to
// the controller. When the reconcile returns, those the client's cache has
// not caught up with yet are remembered for the key, and the key's next
// reconcile waits for them: the worker skips the key and requeues it after
// 10 ms (trigger Stale; the causes it came with kept), without calling
// Reconcile, until the cache has them — as kube-controller-manager does
// since Kubernetes 1.36 (KEP-5647) — or ReadYourOwnWritesTimeout (3 s)
// passed since the writes, when it reconciles anyway and logs a warning.
// Stats.StaleSkips and StaleTimeouts count both. Options.DisableReadYourOwnWrites
// turns this off, and the waits of the reconciles' cached reads too.
//
// # Hot loops and fighting writers
//
// From the triggers and the writes of each reconcile, the controller
// notices a key that is reconciled and written again and again, each
// reconcile triggered only by its own previous writes and none changing a
// generation (HotLoopOptions.Threshold, 10, in a row: the timestamp written
// into the status on every reconcile), and a key whose object another
// writer keeps updating and the controller keeps writing back
// (FightThreshold, 5, rounds within Window, 30 s; a status write answering
// someone's spec change is no round). A fight is confirmed from
// managedFields — the other writer's version of the object read with
// HotLoopOptions.Get (the builder's: one metadata-only Get) before the
// round's reconcile, the controller's from its write's answer — and
// reported only when fields changed hands, naming the field managers and
// the field paths; the informer's cache needs no managedFields (kloop's
// strips them). A report is a Warning Event on the object (reasons HotLoop,
// FightingWriters; HotLoopOptions.Recorder, the builder sets the manager's),
// a log line and Stats.HotLoops or FightingWriters, at most once per key per
// Window. HotLoopOptions.SlowDown (opt-in) holds a reported key back to one
// reconcile per SlowDown until its loop or fight stops (trigger SlowDown).
//
// # Tracing and observers
//
// With Options.TracerProvider, each reconcile is an OpenTelemetry span
// "Reconcile <controller>" (attributes kloop.controller,
// k8s.namespace.name, k8s.object.name, kloop.reconcile_id,
// kloop.triggers — the reconcile.TriggersFrom rendering — and
// kloop.triggers.total, kloop.reconcile.result: success, requeueAfter,
// error or terminal; an error's status and event). The reconcile's context
// carries the span, so that the API calls made with it through a traced
// transport (kloop.dev/kloop/manager's and client's TracerProvider) are its
// children, and the client hands back each write's span: the reconcile's
// span gets an event "write" per write, with the resourceVersion it
// produced, and each write's span is remembered (as soon as the client has
// the answer) by object and resourceVersion in Options.TracedWrites, a
// WriteSpans of the last DefaultTracedWrites writes, the controller's own or
// shared (a manager's controllers share one). A reconcile triggered by the
// event of one of those writes (its object at that resourceVersion) links
// to the write's span (attribute kloop.link "write→event"), in any
// controller that shares the WriteSpans; the links are taken when the
// reconcile begins and again when it ends, so that a write's event that
// overtook its answer is linked too, unless the reconcile it triggered
// began and ended before the writer's client read the answer. Without a
// TracerProvider the reconcile path makes no OpenTelemetry call.
//
// Options.Observer is told of each reconcile (Observation: its triggers,
// start, duration, Outcome, error and writes), of each key skipped or let
// through by the stale check, and of each hot-loop and fighting-writers
// report; the manager's live view keeps them as per-object timelines.
//
// # Metrics
//
// Pull style, for speed: the controller keeps its statistics as atomic
// counters (Stats) and a MetricsProvider reads them at scrape time, as the
// work queue does with workqueue.Stats. A reconcile costs a few atomic adds
// and no metric library call. Stats maps one-to-one onto controller-runtime's
// metrics (controller_runtime_reconcile_total{result=success|error|requeue_after},
// _reconcile_errors_total, _terminal_reconcile_errors_total,
// _reconcile_panics_total, _reconcile_timeouts_total, _reconcile_time_seconds
// with its buckets, _max_concurrent_reconciles, _active_workers). The queue's
// own statistics go to Options.QueueMetrics under the controller's name.
//
// # Helpers
//
// The helpers for the writes a reconcile makes (finalizers, owner
// references, UpdateStatus, CreateOrUpdate, CreateOrPatch, deterministic
// names) are in kloop.dev/kloop/controller/controllerutil.
package controller
