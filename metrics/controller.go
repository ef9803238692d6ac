package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/controller"
)

// reconcileTimeBuckets are controller-runtime's buckets for
// controller_runtime_reconcile_time_seconds, written as it writes them so the
// "le" label values are the same strings.
var reconcileTimeBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
	1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}

// Controller exposes controllers to Prometheus with controller-runtime's
// metric names and labels. Set it as controller.Options.Metrics. One
// Controller serves any number of controllers; they are read when Prometheus
// scrapes.
type Controller struct {
	total, errors, terminal, panics, timeouts, reconcileTime, workers, active *prometheus.Desc
	// kloop's own.
	staleSkips, staleTimeouts, hotLoops, fights *prometheus.Desc

	controllers readers[controller.Stats]
}

var _ controller.MetricsProvider = (*Controller)(nil)

// NewController registers the controller metrics on reg.
func NewController(reg prometheus.Registerer) (*Controller, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: NewController needs a prometheus.Registerer")
	}
	if len(reconcileTimeBuckets) != len(controller.ReconcileTimeBounds()) {
		return nil, fmt.Errorf("metrics: internal error: %d reconcile time buckets for %d bounds", len(reconcileTimeBuckets), len(controller.ReconcileTimeBounds()))
	}
	l := []string{"controller"}
	c := &Controller{
		total:         prometheus.NewDesc("controller_runtime_reconcile_total", "Total number of reconciliations per controller", []string{"controller", "result"}, nil),
		errors:        prometheus.NewDesc("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", l, nil),
		terminal:      prometheus.NewDesc("controller_runtime_terminal_reconcile_errors_total", "Total number of terminal reconciliation errors per controller", l, nil),
		panics:        prometheus.NewDesc("controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller", l, nil),
		timeouts:      prometheus.NewDesc("controller_runtime_reconcile_timeouts_total", "Total number of reconciliation timeouts per controller", l, nil),
		reconcileTime: prometheus.NewDesc("controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller", l, nil),
		workers:       prometheus.NewDesc("controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller", l, nil),
		active:        prometheus.NewDesc("controller_runtime_active_workers", "Number of currently used workers per controller", l, nil),
		staleSkips: prometheus.NewDesc("kloop_controller_stale_skips_total",
			"Keys skipped and requeued because the cache had not caught up with their last reconcile's writes, per controller", l, nil),
		staleTimeouts: prometheus.NewDesc("kloop_controller_stale_timeouts_total",
			"Keys reconciled although the cache had not caught up with their last reconcile's writes within the timeout, per controller", l, nil),
		hotLoops: prometheus.NewDesc("kloop_controller_hot_loops_total",
			"Objects reported as reconciled and written again and again by the controller itself, per controller", l, nil),
		fights: prometheus.NewDesc("kloop_controller_fighting_writers_total",
			"Objects reported as having a field that the controller and another writer keep rewriting, per controller", l, nil),
	}
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("metrics: registering controller metrics: %w", err)
	}
	return c, nil
}

// Register implements controller.MetricsProvider. A second controller with
// the same name is refused: controller names are unique per registry, as
// controller-runtime requires them to be per process.
func (c *Controller) Register(name string, read func(*controller.Stats)) error {
	return c.controllers.add("controller", name, read)
}

// Unregister removes the series of the controller registered as name, so
// that a controller that will not run (a builder whose Build failed after
// the registration) leaves none behind and its name can be used again.
func (c *Controller) Unregister(name string) { c.controllers.remove(name) }

// Each reads a snapshot of every registered controller's statistics, as a
// scrape does, and calls fn with each (in no order): for live views.
func (c *Controller) Each(fn func(name string, s *controller.Stats)) { c.controllers.each(fn) }

// Describe implements prometheus.Collector.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.errors, c.terminal, c.panics, c.timeouts, c.reconcileTime, c.workers, c.active,
		c.staleSkips, c.staleTimeouts, c.hotLoops, c.fights} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads every controller.
func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	c.controllers.each(func(name string, s *controller.Stats) {
		counter(c.total, s.Success, name, "success")
		counter(c.total, s.RequeueAfter, name, "requeue_after")
		counter(c.total, 0, name, "requeue") // kloop has no Result.Requeue; kept for dashboards
		counter(c.total, s.Errors, name, "error")
		counter(c.errors, s.Errors, name)
		counter(c.terminal, s.TerminalErrors, name)
		counter(c.panics, s.Panics, name)
		counter(c.timeouts, s.Timeouts, name)
		counter(c.staleSkips, s.StaleSkips, name)
		counter(c.staleTimeouts, s.StaleTimeouts, name)
		counter(c.hotLoops, s.HotLoops, name)
		counter(c.fights, s.FightingWriters, name)
		buckets := make(map[float64]uint64, len(reconcileTimeBuckets))
		var cumulative uint64
		for i, bound := range reconcileTimeBuckets {
			cumulative += s.ReconcileTime.Buckets[i]
			buckets[bound] = cumulative
		}
		ch <- prometheus.MustNewConstHistogram(c.reconcileTime, s.ReconcileTime.Count, s.ReconcileTime.Sum.Seconds(), buckets, name)
		ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(s.MaxConcurrentReconciles), name)
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(s.ActiveWorkers), name)
	})
}
