package metrics

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/workqueue"
)

// maxPriorityLabels bounds the distinct values of the depth metric's priority
// label per queue, as controller-runtime does; past it the label reads
// "exceeded_cardinality_limit".
const maxPriorityLabels = 25

// Workqueue makes the Prometheus metrics of work queues. Set it as
// workqueue.Options.Metrics. One Workqueue serves any number of queues; each
// queue's name fills both the name and the controller labels.
type Workqueue struct {
	depth        *prometheus.GaugeVec
	adds         *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	workDuration *prometheus.HistogramVec
	retries      *prometheus.CounterVec
	inFlight     *inFlightCollector
}

var _ workqueue.MetricsProvider = (*Workqueue)(nil)

// NewWorkqueue registers the work queue metrics on reg.
func NewWorkqueue(reg prometheus.Registerer) (*Workqueue, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: NewWorkqueue needs a prometheus.Registerer")
	}
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	w := &Workqueue{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of workqueue by workqueue and priority",
		}, []string{"name", "controller", "priority"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by workqueue",
		}, []string{"name", "controller"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long in seconds an item stays in workqueue before being requested",
			Buckets: buckets,
		}, []string{"name", "controller"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long in seconds processing an item from workqueue takes.",
			Buckets: buckets,
		}, []string{"name", "controller"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
		}, []string{"name", "controller"}),
		inFlight: &inFlightCollector{
			unfinished: prometheus.NewDesc("workqueue_unfinished_work_seconds",
				"How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "+
					"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
				[]string{"name", "controller"}, nil),
			longest: prometheus.NewDesc("workqueue_longest_running_processor_seconds",
				"How many seconds has the longest running processor for workqueue been running.",
				[]string{"name", "controller"}, nil),
			queues: map[string]func() (time.Duration, time.Duration){},
		},
	}
	for _, c := range []prometheus.Collector{w.depth, w.adds, w.latency, w.workDuration, w.retries, w.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: registering work queue metrics: %w", err)
		}
	}
	return w, nil
}

// NewQueueMetrics implements workqueue.MetricsProvider. A second queue with
// the same name takes over the first one's series.
func (w *Workqueue) NewQueueMetrics(name string, inFlight func() (unfinished, longest time.Duration)) workqueue.QueueMetrics {
	w.inFlight.set(name, inFlight)
	return &queueMetrics{
		name:         name,
		depthVec:     w.depth,
		depth:        map[int]prometheus.Gauge{},
		adds:         w.adds.WithLabelValues(name, name),
		latency:      w.latency.WithLabelValues(name, name),
		workDuration: w.workDuration.WithLabelValues(name, name),
		retries:      w.retries.WithLabelValues(name, name),
	}
}

// queueMetrics is one queue's sink. The queue calls it with its lock held, so
// the depth map needs no lock of its own.
type queueMetrics struct {
	name         string
	depthVec     *prometheus.GaugeVec
	depth        map[int]prometheus.Gauge // by priority; bounded by maxPriorityLabels+1 entries
	overflow     prometheus.Gauge         // the "exceeded_cardinality_limit" series, once needed
	adds         prometheus.Counter
	latency      prometheus.Observer
	workDuration prometheus.Observer
	retries      prometheus.Counter
}

func (m *queueMetrics) Added() { m.adds.Inc() }
func (m *queueMetrics) Retry() { m.retries.Inc() }

func (m *queueMetrics) Latency(d time.Duration)      { m.latency.Observe(d.Seconds()) }
func (m *queueMetrics) WorkDuration(d time.Duration) { m.workDuration.Observe(d.Seconds()) }

func (m *queueMetrics) Depth(priority, delta int) {
	g, ok := m.depth[priority]
	if !ok {
		if len(m.depth) < maxPriorityLabels {
			g = m.depthVec.WithLabelValues(m.name, m.name, strconv.Itoa(priority))
		} else {
			if m.overflow == nil {
				m.overflow = m.depthVec.WithLabelValues(m.name, m.name, "exceeded_cardinality_limit")
			}
			g = m.overflow
		}
		m.depth[priority] = g
	}
	g.Add(float64(delta))
}

// inFlightCollector reads the unfinished-work figures from the queues at
// scrape time.
type inFlightCollector struct {
	unfinished, longest *prometheus.Desc

	mu     sync.Mutex // guards queues
	queues map[string]func() (unfinished, longest time.Duration)
}

func (c *inFlightCollector) set(name string, f func() (time.Duration, time.Duration)) {
	c.mu.Lock()
	c.queues[name] = f
	c.mu.Unlock()
}

func (c *inFlightCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.unfinished
	ch <- c.longest
}

func (c *inFlightCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	queues := make(map[string]func() (time.Duration, time.Duration), len(c.queues))
	for k, v := range c.queues {
		queues[k] = v
	}
	c.mu.Unlock()
	for name, f := range queues {
		u, l := f()
		ch <- prometheus.MustNewConstMetric(c.unfinished, prometheus.GaugeValue, u.Seconds(), name, name)
		ch <- prometheus.MustNewConstMetric(c.longest, prometheus.GaugeValue, l.Seconds(), name, name)
	}
}
