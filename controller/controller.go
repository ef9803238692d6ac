package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/reconcile/trigger"
	"kloop.dev/kloop/workqueue"
)

// LowPriority is the work queue priority of the keys of the initial list and
// of resyncs, as controller-runtime's handler.LowPriority: live changes
// (priority 0) are reconciled first.
const LowPriority = -100

// Defaults of Options.
const (
	DefaultMaxConcurrentReconciles = 1
	DefaultCacheSyncTimeout        = 2 * time.Minute
)

// ErrReconcileTimeout is the cause (context.Cause) of a reconcile context
// cancelled because the reconcile ran longer than Options.ReconcileTimeout.
var ErrReconcileTimeout = errors.New("reconcile timeout")

// ErrPanic is wrapped by the error a recovered panic of Reconcile turns into.
var ErrPanic = errors.New("reconcile panicked")

// Options configures a Controller. The zero value is ready to use.
type Options struct {
	// MaxConcurrentReconciles is the number of workers. A key is never
	// reconciled by two workers at once, whatever this number. Default 1.
	MaxConcurrentReconciles int

	// RateLimiter decides the backoff of keys whose reconcile failed.
	// Default: workqueue.DefaultRateLimiter (per key 5 ms doubling to
	// 1000 s, and 10 qps with a burst of 100 overall), on Clock.
	RateLimiter workqueue.RateLimiter[reconcile.Request]

	// CacheSyncTimeout bounds the wait, in Start, for every source to have
	// synced; Start returns an error when it expires. Default 2 minutes.
	CacheSyncTimeout time.Duration

	// RecoverPanic turns a panic in Reconcile into an error (logged with
	// its stack, counted, the key requeued with backoff). When false the
	// panic is counted and propagates, crashing the process. Default true.
	RecoverPanic *bool

	// NeedLeaderElection says whether a manager with leader election runs
	// this controller only on the leader. Default true; false runs it on
	// every replica (for controllers that only read, or that shard work
	// themselves).
	NeedLeaderElection *bool

	// ReconcileTimeout, when positive, bounds each reconcile: its context
	// is cancelled with the cause ErrReconcileTimeout once it expires. The
	// controller still waits for Reconcile to return. It uses the runtime's
	// timers, not Clock (testing/synctest makes them deterministic).
	// Default 0: no timeout.
	ReconcileTimeout time.Duration

	// Logger receives the controller's logs; each reconcile gets it with
	// the attributes controller, namespace, name and reconcileID, in its
	// context (reconcile.LoggerFrom). Default: slog.Default().
	Logger *slog.Logger

	// Metrics reads the controller's statistics (reconcile totals, errors,
	// panics, reconcile time, workers). Default: none (and reconciles are
	// then not timed: no clock reads).
	Metrics MetricsProvider

	// QueueMetrics reads the statistics of the controller's work queue,
	// registered under the controller's name (kloop.dev/kloop/metrics'
	// Workqueue gives controller-runtime's workqueue_* metrics). Default: none.
	QueueMetrics workqueue.MetricsProvider

	// BaseContext, when set, derives from Start's context the context the
	// controller's sources (and so their handlers) and reconciles run
	// with: to carry values they read, such as the client.ReadScopes that
	// kloop.dev/kloop/builder adds for a watch with a scope. It is called
	// once per Start and must return ctx or a context derived from it (its
	// cancellation is Start's); a nil result makes Start fail. Default:
	// Start's context as is.
	BaseContext func(ctx context.Context) context.Context

	// Clock is the source of time for the queue, the default rate limiter,
	// the cache-sync timeout and the reconcile time. Default:
	// workqueue.RealClock.
	Clock workqueue.Clock

	// DisableTriggers turns off the record of why each reconcile runs.
	// By default the work queue keeps, for each key waiting, the last
	// trigger.Recent causes that added it (the event's type,
	// kind, object, handler, time; the controller's own requeues) and a
	// count of all of them, merged as the key's adds merge, at no
	// allocation per event; a reconcile reads them with
	// reconcile.TriggersFrom and its log lines carry them. Default false.
	DisableTriggers bool

	// DisableReadYourOwnWrites turns off, for this controller, what makes
	// a reconcile see its controller's own writes. By default the writes
	// a reconcile makes through kloop's client (kloop.dev/kloop/client)
	// are remembered, and the key's next reconcile does not run before the
	// cache has caught up with them — the key is skipped and requeued
	// after a short delay, without calling Reconcile (Stats.StaleSkips), as
	// kube-controller-manager's controllers do since Kubernetes 1.36
	// (KEP-5647) — at most ReadYourOwnWritesTimeout after the writes, then
	// it is reconciled anyway, with a warning (Stats.StaleTimeouts); and
	// the client's cached reads in the reconcile wait for the client's
	// own writes (client.Options.DisableReadYourOwnWrites turns that off
	// for a whole client). Default false.
	DisableReadYourOwnWrites bool
	// ReadYourOwnWritesTimeout bounds how long after a reconcile's writes
	// the key's next reconcile waits for the cache. Default
	// DefaultReadYourOwnWritesTimeout (3 s).
	ReadYourOwnWritesTimeout time.Duration

	// HotLoop configures the detector of hot loops (a key reconciled and
	// written again and again by its own writes) and fighting writers (a
	// field of the key's object that the controller and another writer
	// keep rewriting). Default: on, reporting only (see HotLoopOptions);
	// it needs the trigger records (off with DisableTriggers).
	HotLoop HotLoopOptions

	// TracerProvider, when set, makes each reconcile an OpenTelemetry
	// span, "Reconcile <controller>", with the attributes controller,
	// namespace, name, reconcileID, the triggers (their rendering and
	// total) and the result, an event per write it made (with the
	// resourceVersion the write produced), and links to the spans of the
	// controller's earlier writes whose events triggered it (the last
	// DefaultTracedWrites writes are remembered). The reconcile's context
	// carries the span: the API calls made with it (through a traced
	// transport: manager.Options.TracerProvider, client.Options.
	// TracerProvider) are its children. Build it with the OpenTelemetry
	// SDK (sdktrace.NewTracerProvider) or pass otel.GetTracerProvider();
	// kloop sets no global. Default nil: no tracing, and no OpenTelemetry
	// call on the reconcile path.
	TracerProvider trace.TracerProvider
	// TracedWrites remembers the spans of the traced reconciles' writes, to
	// link the reconciles that their events trigger to them. Share one
	// between controllers to link across them (the builder sets the
	// manager's). Default: the controller's own, of DefaultTracedWrites.
	TracedWrites *WriteSpans

	// Observer, when set, is told of each reconcile (its triggers, result,
	// duration and writes), of the keys skipped while the cache is behind
	// their writes, and of the loop detector's reports: the manager's live
	// view (manager.Options.LiveViewBindAddress) sets it. It is called on
	// the workers' goroutines and must not block. Default nil: none.
	Observer Observer
}

func (o *Options) setDefaults() {
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.CacheSyncTimeout == 0 {
		o.CacheSyncTimeout = DefaultCacheSyncTimeout
	}
	if o.RecoverPanic == nil {
		t := true
		o.RecoverPanic = &t
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = workqueue.RealClock{}
	}
	if o.RateLimiter == nil {
		o.RateLimiter = workqueue.DefaultRateLimiter[reconcile.Request](o.Clock)
	}
	if o.ReadYourOwnWritesTimeout == 0 {
		o.ReadYourOwnWritesTimeout = DefaultReadYourOwnWritesTimeout
	}
	o.HotLoop.setDefaults()
}

func (o *Options) validate() error {
	var errs []error
	if o.MaxConcurrentReconciles < 0 {
		errs = append(errs, fmt.Errorf("MaxConcurrentReconciles %d is negative", o.MaxConcurrentReconciles))
	}
	if o.CacheSyncTimeout < 0 {
		errs = append(errs, fmt.Errorf("CacheSyncTimeout %s is negative", o.CacheSyncTimeout))
	}
	if o.ReconcileTimeout < 0 {
		errs = append(errs, fmt.Errorf("ReconcileTimeout %s is negative", o.ReconcileTimeout))
	}
	if o.ReadYourOwnWritesTimeout < 0 {
		errs = append(errs, fmt.Errorf("ReadYourOwnWritesTimeout %s is negative", o.ReadYourOwnWritesTimeout))
	}
	if err := o.HotLoop.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Controller runs a Reconciler for the keys its sources enqueue: it owns a
// work queue of reconcile.Requests, MaxConcurrentReconciles workers, and the
// handling of each Result (see the package documentation).
type Controller struct {
	name  string
	do    reconcile.Reconciler
	opts  Options // defaults filled
	queue *workqueue.Queue[reconcile.Request]
	log   *slog.Logger // opts.Logger with the controller attribute
	quiet bool         // opts.Logger discards: skip building per-reconcile loggers
	timed bool         // opts.Metrics or Observer is set: time each reconcile (nobody reads the time otherwise)

	normal, low enqueuer // what sources and handlers see of queue

	timeoutCause error // the cause of a ReconcileTimeout, naming the controller

	// stale skips the keys whose cache is behind their last reconcile's
	// writes (nil: Options.DisableReadYourOwnWrites).
	stale *staleTracker
	// loops reports hot loops and fighting writers (nil: off).
	loops *loopDetector
	// tracing makes the reconciles' spans (nil: no TracerProvider).
	tracing *tracing
	// obs is Options.Observer (nil: none).
	obs Observer
	// recordWrites: reconciles collect their writes (for stale, loops,
	// tracing, obs).
	recordWrites bool

	// stopping is set before the queue shuts down: keys still handed out
	// are then released without a reconcile.
	stopping atomic.Bool

	stats stats

	// mu guards sources, started, run and stopped.
	mu      sync.Mutex
	sources []Source
	started bool
	// run starts a source on the running controller (set by Start while
	// it runs, nil before and after): the way Watch after Start starts
	// its source.
	run func(Source)
	// stopped is set by Start before it waits for the sources to stop:
	// no source starts after it.
	stopped bool
}

// New returns a controller named name (used in logs and metrics; give each
// controller of a process its own) that calls r. It starts nothing: add
// sources with Watch, then call Start.
func New(name string, r reconcile.Reconciler, opts Options) (*Controller, error) {
	if name == "" {
		return nil, errors.New("controller: New needs a name")
	}
	if r == nil {
		return nil, fmt.Errorf("controller %q: New needs a Reconciler", name)
	}
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("controller %q: invalid options: %w", name, err)
	}
	q, err := workqueue.New(workqueue.Options[reconcile.Request]{
		Name:        name,
		RateLimiter: opts.RateLimiter,
		Metrics:     opts.QueueMetrics,
		Clock:       opts.Clock,
		Triggers:    !opts.DisableTriggers,
	})
	if err != nil {
		return nil, fmt.Errorf("controller %q: %w", name, err)
	}
	c := &Controller{
		name:   name,
		do:     r,
		opts:   opts,
		queue:  q,
		log:    opts.Logger.With("controller", name),
		quiet:  opts.Logger.Handler() == slog.DiscardHandler,
		timed:  opts.Metrics != nil,
		normal: enqueuer{q: q},
		low:    enqueuer{q: q, prio: LowPriority},
		timeoutCause: fmt.Errorf("%w: controller %q: reconcile exceeded ReconcileTimeout %s",
			ErrReconcileTimeout, name, opts.ReconcileTimeout),
	}
	if !opts.DisableReadYourOwnWrites {
		c.stale = newStaleTracker(opts.ReadYourOwnWritesTimeout, c.log)
		c.recordWrites = true
	}
	if !opts.HotLoop.Disable && !opts.DisableTriggers {
		c.loops = newLoopDetector(opts.HotLoop, c.log, &c.stats)
		c.recordWrites = true
	}
	if opts.TracerProvider != nil {
		c.tracing = newTracing(opts.TracerProvider, name, opts.TracedWrites)
		c.recordWrites = true
	}
	if opts.Observer != nil {
		c.obs = opts.Observer
		c.timed = true
		c.recordWrites = true
		if c.loops != nil {
			c.loops.notify = func(req reconcile.Request, typ ObservationType, msg string) {
				c.obs.Observe(name, &Observation{Type: typ, Request: req, Start: c.opts.Clock.Now(), Message: msg})
			}
		}
	}
	if opts.Metrics != nil {
		if err := opts.Metrics.Register(name, c.readStats); err != nil {
			// The queue registered its metrics under the name just before:
			// take them back where the provider can (kloop.dev/kloop/metrics
			// can), so that the refused controller leaves no series behind.
			if u, ok := opts.QueueMetrics.(interface{ Unregister(name string) }); ok {
				u.Unregister(name)
			}
			return nil, fmt.Errorf("controller %q: registering metrics: %w", name, err)
		}
	}
	return c, nil
}

// Name returns the controller's name.
func (c *Controller) Name() string { return c.name }

func (c *Controller) readStats(s *Stats) { c.stats.read(s, c.opts.MaxConcurrentReconciles) }

// Watch adds a source of events. Sources added before Start are started by
// it, and it waits for all of them to have synced before the first
// reconcile. A source added while the controller runs is started at once,
// as in controller-runtime (for watches that become possible later, such as
// a CRD installed after the start): the workers do not wait for it to
// sync, and its failure stops the controller as any source's does. Watch
// after the controller stopped returns an error.
func (c *Controller) Watch(src Source) error {
	if src == nil {
		return fmt.Errorf("controller %q: Watch needs a Source", c.name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("controller %q: Watch after the controller stopped", c.name)
	}
	c.sources = append(c.sources, src)
	if c.run != nil {
		c.run(src)
	}
	return nil
}

// NeedLeaderElection reports whether the controller runs only on the leader
// (Options.NeedLeaderElection; default true). A manager asks it.
func (c *Controller) NeedLeaderElection() bool {
	return c.opts.NeedLeaderElection == nil || *c.opts.NeedLeaderElection
}

// Start runs the controller until ctx is cancelled: it starts every source,
// waits until all have synced (at most CacheSyncTimeout, else it returns an
// error), then runs the workers. When ctx is cancelled it stops the sources,
// lets the reconciles in flight finish (their context is cancelled too; keys
// still waiting are dropped, the next start lists them again), and returns
// nil. If a source fails, Start stops the same way and returns its error.
// A controller starts once.
func (c *Controller) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return fmt.Errorf("controller %q: started twice", c.name)
	}
	c.started = true
	c.mu.Unlock()
	defer c.markStopped() // whichever way Start returns

	parent := ctx
	if c.opts.BaseContext != nil {
		if ctx = c.opts.BaseContext(parent); ctx == nil {
			return fmt.Errorf("controller %q: Options.BaseContext returned a nil context", c.name)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var sourcesWG, workersWG sync.WaitGroup
	var failMu sync.Mutex // guards failure
	var failure error     // the first source error; read after sourcesWG.Wait
	// stop shuts everything down in order: sources first (no new keys), then
	// the queue, waiting for the reconciles in flight, then the workers. It
	// returns the error of a failed source, unless the parent was cancelled.
	stop := func() error {
		c.markStopped()
		cancel(nil)
		sourcesWG.Wait()
		c.stopping.Store(true)
		c.queue.ShutDownWithDrain()
		workersWG.Wait()
		if parent.Err() != nil {
			return nil
		}
		return failure
	}

	// run starts a source; it is called with c.mu held, before stop sets
	// stopped, so sourcesWG.Go never races with sourcesWG.Wait.
	run := func(src Source) {
		sourcesWG.Go(func() {
			err := src.Start(ctx, c.normal, c.low)
			if err == nil || ctx.Err() != nil {
				return
			}
			err = fmt.Errorf("controller %q: source %v: %w", c.name, src, err)
			failMu.Lock()
			if failure == nil {
				failure = err
			}
			failMu.Unlock()
			cancel(err)
		})
	}
	c.mu.Lock()
	sources := slices.Clone(c.sources)
	c.log.Info("starting controller", "sources", len(sources), "workers", c.opts.MaxConcurrentReconciles)
	for _, src := range sources {
		run(src)
	}
	c.run = run
	c.mu.Unlock()

	if err := c.waitForSync(ctx, sources); err != nil {
		if stopErr := stop(); stopErr != nil {
			return stopErr // a source failed, which is why the wait ended
		}
		if parent.Err() != nil {
			return nil // cancelled while waiting: not an error
		}
		c.log.Error("sources did not sync", "err", err)
		return err
	}

	c.log.Info("sources synced, starting workers", "workers", c.opts.MaxConcurrentReconciles)
	for range c.opts.MaxConcurrentReconciles {
		workersWG.Go(func() { c.work(ctx) })
	}
	<-ctx.Done()
	c.log.Info("stopping controller, waiting for reconciles in flight")
	err := stop()
	c.log.Info("controller stopped")
	return err
}

// markStopped makes Watch refuse new sources from now on.
func (c *Controller) markStopped() {
	c.mu.Lock()
	c.stopped, c.run = true, nil
	c.mu.Unlock()
}

// waitForSync polls the sources' HasSynced, 1 ms doubling to 100 ms apart,
// until all have synced, ctx is done or CacheSyncTimeout expired.
func (c *Controller) waitForSync(ctx context.Context, sources []Source) error {
	expired := make(chan struct{})
	deadline := c.opts.Clock.AfterFunc(c.opts.CacheSyncTimeout, func() { close(expired) })
	defer deadline.Stop()
	interval := time.Millisecond
	for {
		synced := true
		for _, s := range sources {
			if !s.HasSynced() {
				synced = false
				break
			}
		}
		if synced {
			return nil
		}
		tick := make(chan struct{})
		t := c.opts.Clock.AfterFunc(interval, func() { close(tick) })
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-expired:
			t.Stop()
			return fmt.Errorf("controller %q: sources not synced after CacheSyncTimeout %s: %w",
				c.name, c.opts.CacheSyncTimeout, context.DeadlineExceeded)
		case <-tick:
		}
		interval = min(2*interval, 100*time.Millisecond)
	}
}

// work is one worker: it takes keys until the queue shuts down. The queue
// never hands a key to two workers at once.
func (c *Controller) work(ctx context.Context) {
	ids := newIDSource()
	// trigs is the record of why the key handed out was added: this
	// worker's, reused (nil without triggers).
	var trigs *trigger.Record
	if !c.opts.DisableTriggers {
		trigs = new(trigger.Record)
	}
	// writes collects each reconcile's writes: this worker's, reused.
	var writes *rctx.Writes
	if c.recordWrites {
		writes = new(rctx.Writes)
	}
	req, prio, shutdown := c.queue.GetWithTriggers(trigs)
	for !shutdown {
		// Shutting down (ctx is cancelled at once, stopping only once the
		// sources have stopped): the key is left for the next start.
		if !c.stopping.Load() && ctx.Err() == nil {
			c.stats.active.Add(1)
			c.reconcileHandler(ctx, req, prio, ids.next(), trigs, writes)
			c.stats.active.Add(-1)
		}
		// Done and the next key in one take of the queue's lock.
		req, prio, shutdown = c.queue.NextWithTriggers(req, trigs)
	}
}

// reconcileHandler reconciles req, handed out at priority prio, once and
// applies the Result rules. Requeues keep the priority, as
// controller-runtime's priority queue does: a failing key of the initial list
// is retried behind fresh events.
func (c *Controller) reconcileHandler(ctx context.Context, req reconcile.Request, prio int, id [16]byte, trigs *trigger.Record, writes *rctx.Writes) {
	// Both checks read the clock only when some key has writes pending
	// or a loop state.
	if c.stale != nil && c.stale.n.Load() > 0 {
		switch c.stale.check(req, c.opts.Clock.Now()) {
		case stale:
			// The cache is behind the key's last writes: what Reconcile
			// would read is older than what it wrote. Try again soon,
			// with the causes the key came with.
			c.stats.staleSkips.Add(1)
			if c.obs != nil {
				c.obs.Observe(c.name, &Observation{Type: StaleSkip, Request: req, Triggers: trigs, Start: c.opts.Clock.Now()})
			}
			c.queue.AddRecord(req, workqueue.AddOptions{Priority: prio, After: staleRequeueDelay}, trigs, bookkeeping(trigs, trigger.Stale))
			return
		case gaveUp:
			c.stats.staleTimeouts.Add(1)
			if c.obs != nil {
				c.obs.Observe(c.name, &Observation{Type: StaleTimeout, Request: req, Triggers: trigs, Start: c.opts.Clock.Now()})
			}
		}
	}
	if c.loops != nil && c.loops.n.Load() > 0 {
		wait, keep := c.loops.before(ctx, req, trigs, c.opts.Clock.Now())
		if wait > 0 {
			// A key that loops, held back (HotLoopOptions.SlowDown).
			c.queue.AddRecord(req, workqueue.AddOptions{Priority: prio, After: wait}, trigs, bookkeeping(trigs, trigger.SlowDown))
			return
		}
		if writes != nil {
			writes.KeepManagedFields = keep
		}
	}
	var start time.Time
	if c.timed {
		start = c.opts.Clock.Now()
	}
	// The ID's text is made only when something is logged, or when
	// reconcile.IDFrom asks for it.
	var sc *rctx.Scope
	if c.quiet {
		sc = &rctx.Scope{Context: ctx, UUID: id, HasUUID: true, Logger: c.log}
	} else {
		sc = newReconcileScope(ctx, c.log, req, id)
	}
	var span trace.Span
	var links []trace.Link
	if c.tracing != nil {
		sc.Context, span, links = c.tracing.start(sc.Context, req, id, trigs)
		sc.Traced = true
		sc.OnTracedWrite = c.tracing.record
	}
	sc.Triggers = trigs
	sc.Writes = writes
	sc.NoReadWait = c.opts.DisableReadYourOwnWrites
	log := sc.Logger
	ctx = sc
	// why is the triggers' log attribute, built only when a line is
	// written.
	why := slog.Any("triggers", triggersValue{sc})

	res, err := c.reconcile(ctx, req)
	var ws []rctx.Write
	if writes != nil {
		ws = writes.Take(nil)
		staleKeys := c.stale != nil && (len(ws) > 0 || c.stale.n.Load() > 0)
		loopKeys := c.loops != nil && (len(ws) > 0 || c.loops.n.Load() > 0)
		if staleKeys || loopKeys {
			now := c.opts.Clock.Now()
			if staleKeys {
				c.stale.record(req, ws, now)
			}
			if loopKeys {
				c.loops.after(req, trigs, ws, err != nil, now)
			}
		}
	}
	switch {
	case err != nil:
		c.stats.errors.Add(1)
		if reconcile.IsTerminal(err) {
			c.stats.terminal.Add(1)
			c.queue.Forget(req)
			log.Error("reconcile failed with a terminal error, not requeued", "err", err, why)
		} else {
			c.queue.AddTriggered(req, workqueue.AddOptions{Priority: prio, RateLimited: true}, trigger.Cause{Type: trigger.Error})
			log.Error("reconcile failed, requeued with backoff", "err", err, why)
		}
		if !res.IsZero() {
			log.Warn("Reconcile returned a Result and a non-nil error: the Result is ignored when the error is non-nil",
				"requeueAfter", res.RequeueAfter)
		}
	case res.RequeueAfter > 0:
		c.stats.requeueAfter.Add(1)
		c.queue.Forget(req)
		c.queue.AddTriggered(req, workqueue.AddOptions{Priority: prio, After: res.RequeueAfter}, trigger.Cause{Type: trigger.RequeueAfter})
		if !c.quiet && log.Enabled(ctx, slog.LevelDebug) {
			log.Debug("reconciled, requeued after a delay", "requeueAfter", res.RequeueAfter, why)
		}
	default:
		c.stats.success.Add(1)
		c.queue.Forget(req)
		if !c.quiet && log.Enabled(ctx, slog.LevelDebug) {
			log.Debug("reconciled", why)
		}
	}
	var took time.Duration
	if c.timed {
		took = c.opts.Clock.Since(start)
		c.stats.observe(took)
	}
	if span != nil || c.obs != nil {
		out := outcome(res, err)
		if span != nil {
			c.tracing.end(span, links, trigs, out, res, err, ws)
		}
		if c.obs != nil {
			o := &Observation{Type: Reconciled, Request: req, ReconcileID: sc.IDString(), Triggers: trigs,
				Start: start, Duration: took, Outcome: out, Err: err, Writes: writesOf(nil, ws)}
			if out == OutcomeRequeueAfter {
				o.RequeueAfter = res.RequeueAfter
			}
			c.obs.Observe(c.name, o)
		}
	}
}

// outcome says how a reconcile ended, by the Result rules.
func outcome(res reconcile.Result, err error) Outcome {
	switch {
	case err != nil && reconcile.IsTerminal(err):
		return OutcomeTerminal
	case err != nil:
		return OutcomeError
	case res.RequeueAfter > 0:
		return OutcomeRequeueAfter
	}
	return OutcomeSuccess
}

// reconcile calls the Reconciler with the timeout and the panic recovery.
func (c *Controller) reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.stats.panics.Add(1)
			if !*c.opts.RecoverPanic {
				panic(r)
			}
			reconcile.LoggerFrom(ctx).Error("reconcile panicked", "panic", r, "stack", string(debug.Stack()))
			if e, ok := r.(error); ok {
				err = fmt.Errorf("%w: %w", ErrPanic, e)
			} else {
				err = fmt.Errorf("%w: %v", ErrPanic, r)
			}
			res = reconcile.Result{}
		}
	}()
	if d := c.opts.ReconcileTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, c.timeoutCause)
		defer cancel()
		defer func() {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && context.Cause(ctx) == c.timeoutCause {
				c.stats.timeouts.Add(1)
			}
		}()
	}
	return c.do.Reconcile(ctx, req)
}

// enqueuer is the handler.Enqueuer of one priority.
type enqueuer struct {
	q    *workqueue.Queue[reconcile.Request]
	prio int
}

var _ handler.TriggerEnqueuer = enqueuer{}

func (e enqueuer) AddAll(reqs []reconcile.Request) {
	e.q.AddAll(reqs, workqueue.AddOptions{Priority: e.prio})
}

func (e enqueuer) AddTriggered(req reconcile.Request, t trigger.Cause) {
	e.q.AddTriggered(req, workqueue.AddOptions{Priority: e.prio}, t)
}

func (e enqueuer) AddAllTriggered(reqs []reconcile.Request, ts []trigger.Cause) {
	e.q.AddAllTriggered(reqs, ts, workqueue.AddOptions{Priority: e.prio})
}

// bookkeeping is the trigger of the controller's own requeue of a key it
// did not reconcile (typ: Stale or SlowDown), recorded once per record
// (none when trigs has one already), so that a key held back many times
// keeps the causes it came with among its recent triggers.
func bookkeeping(trigs *trigger.Record, typ trigger.Type) trigger.Cause {
	if trigs != nil && trigs.Count(typ) > 0 {
		return trigger.Cause{}
	}
	return trigger.Cause{Type: typ}
}

// triggersValue is a reconcile's triggers as a log value, built only when a
// handler formats it.
type triggersValue struct{ sc *rctx.Scope }

func (v triggersValue) LogValue() slog.Value {
	t, ok := reconcile.TriggersFrom(v.sc)
	if !ok {
		return slog.StringValue("not recorded")
	}
	return t.LogValue()
}

func (e enqueuer) Add(req reconcile.Request) {
	if e.prio == 0 {
		e.q.Add(req)
		return
	}
	e.q.AddWithOptions(req, workqueue.AddOptions{Priority: e.prio})
}

func (e enqueuer) AddAfter(req reconcile.Request, d time.Duration) {
	e.q.AddWithOptions(req, workqueue.AddOptions{Priority: e.prio, After: d})
}
