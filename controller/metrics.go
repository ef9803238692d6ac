package controller

import (
	"slices"
	"sync/atomic"
	"time"
)

// MetricsProvider exposes the statistics of controllers, for example to
// Prometheus with controller-runtime's metric names (the implementation lives
// in kloop.dev/kloop/metrics). It is set in Options.Metrics; the package
// keeps no global provider.
//
// Pull style, as workqueue.MetricsProvider: the controller keeps its
// statistics as atomic counters and the provider reads them when it wants
// them (at scrape time). Recording costs a few atomic adds per reconcile and
// no metric library call sits on the workers' path.
type MetricsProvider interface {
	// Register is called once by New with the controller's name and a
	// reader of its statistics. read fills *Stats; it may be called from any
	// goroutine at any time, also after Start returned. A provider refuses a
	// name it already has (kloop.dev/kloop/metrics does, as controller names
	// must be unique): New then fails with its error, and the controller
	// that has the name keeps its series; the queue's registration, made
	// just before, is taken back if Options.QueueMetrics has an
	// Unregister(name string) method (kloop.dev/kloop/metrics's has).
	Register(name string, read func(*Stats)) error
}

// ReconcileTimeBounds returns the upper bounds (inclusive) of the reconcile
// time histogram, controller-runtime's buckets for
// controller_runtime_reconcile_time_seconds. It returns a copy: the bounds
// are fixed.
func ReconcileTimeBounds() [len(reconcileTimeBounds)]time.Duration { return reconcileTimeBounds }

var reconcileTimeBounds = [...]time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond,
	300 * time.Millisecond, 350 * time.Millisecond, 400 * time.Millisecond, 450 * time.Millisecond,
	500 * time.Millisecond, 600 * time.Millisecond, 700 * time.Millisecond, 800 * time.Millisecond,
	900 * time.Millisecond, time.Second, 1250 * time.Millisecond, 1500 * time.Millisecond,
	1750 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second,
	3500 * time.Millisecond, 4 * time.Second, 4500 * time.Millisecond, 5 * time.Second,
	6 * time.Second, 7 * time.Second, 8 * time.Second, 9 * time.Second,
	10 * time.Second, 15 * time.Second, 20 * time.Second, 25 * time.Second,
	30 * time.Second, 40 * time.Second, 50 * time.Second, 60 * time.Second,
}

// Histogram counts reconcile durations.
type Histogram struct {
	// Buckets[i] counts the durations d with ReconcileTimeBounds()[i-1] < d <=
	// ReconcileTimeBounds()[i]; the last one counts those above every bound.
	Buckets [len(reconcileTimeBounds) + 1]uint64
	// Count is the sum of Buckets; Sum the total duration.
	Count uint64
	Sum   time.Duration
}

// Stats is a snapshot of a controller's statistics, with controller-runtime's
// metric in brackets (all labelled controller=<name>).
type Stats struct {
	// Reconciles by outcome (controller_runtime_reconcile_total with
	// result="success", "requeue_after" and "error"). kloop has no
	// Result.Requeue, so result="requeue" is always 0.
	Success, RequeueAfter, Errors uint64
	// TerminalErrors counts the errors marked with reconcile.Terminal
	// (controller_runtime_terminal_reconcile_errors_total); they are also
	// in Errors, as in controller-runtime
	// (controller_runtime_reconcile_errors_total equals Errors).
	TerminalErrors uint64
	// Panics counts reconciles that panicked
	// (controller_runtime_reconcile_panics_total); recovered panics are
	// also in Errors.
	Panics uint64
	// Timeouts counts reconciles whose context hit ReconcileTimeout
	// (controller_runtime_reconcile_timeouts_total).
	Timeouts uint64
	// ReconcileTime is the duration of each reconcile, as the controller
	// measured it around Reconcile (controller_runtime_reconcile_time_seconds).
	ReconcileTime Histogram
	// MaxConcurrentReconciles is the number of workers
	// (controller_runtime_max_concurrent_reconciles).
	MaxConcurrentReconciles int
	// ActiveWorkers is the number of workers in a reconcile now
	// (controller_runtime_active_workers).
	ActiveWorkers int

	// kloop's own (no controller-runtime counterpart):

	// StaleSkips counts the keys skipped and requeued because the cache
	// had not caught up with their last reconcile's writes
	// (kloop_controller_stale_skips_total; kube-controller-manager's
	// stale_sync_skips_total). StaleTimeouts counts the keys reconciled
	// anyway once ReadYourOwnWritesTimeout passed
	// (kloop_controller_stale_timeouts_total).
	StaleSkips, StaleTimeouts uint64
	// HotLoops and FightingWriters count the reports of the hot-loop
	// detector (kloop_controller_hot_loops_total,
	// kloop_controller_fighting_writers_total): see HotLoopOptions.
	HotLoops, FightingWriters uint64
}

// stats are a controller's live statistics: atomics, so that workers never
// share a lock for them.
type stats struct {
	success, requeueAfter, errors, terminal, panics, timeouts atomic.Uint64
	staleSkips, staleTimeouts, hotLoops, fights               atomic.Uint64
	active                                                    atomic.Int64
	buckets                                                   [len(reconcileTimeBounds) + 1]atomic.Uint64
	sum                                                       atomic.Int64 // nanoseconds
}

func (s *stats) observe(d time.Duration) {
	i, _ := slices.BinarySearch(reconcileTimeBounds[:], d) // first bound >= d
	s.buckets[i].Add(1)
	s.sum.Add(int64(d))
}

func (s *stats) read(out *Stats, workers int) {
	out.Success = s.success.Load()
	out.RequeueAfter = s.requeueAfter.Load()
	out.Errors = s.errors.Load()
	out.TerminalErrors = s.terminal.Load()
	out.Panics = s.panics.Load()
	out.Timeouts = s.timeouts.Load()
	out.StaleSkips = s.staleSkips.Load()
	out.StaleTimeouts = s.staleTimeouts.Load()
	out.HotLoops = s.hotLoops.Load()
	out.FightingWriters = s.fights.Load()
	out.ReconcileTime.Count = 0
	for i := range s.buckets {
		n := s.buckets[i].Load()
		out.ReconcileTime.Buckets[i] = n
		out.ReconcileTime.Count += n
	}
	out.ReconcileTime.Sum = time.Duration(s.sum.Load())
	out.MaxConcurrentReconciles = workers
	out.ActiveWorkers = int(s.active.Load())
}
