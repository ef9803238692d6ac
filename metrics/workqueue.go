package metrics

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/workqueue"
)

// maxPriorityLabels bounds the distinct values of the depth metric's priority
// label per queue, as controller-runtime does; the keys of further
// priorities are summed under "exceeded_cardinality_limit".
const maxPriorityLabels = 25

// Workqueue exposes work queues to Prometheus. Set it as
// workqueue.Options.Metrics. One Workqueue serves any number of queues; each
// queue's name fills both the name and the controller labels. The queues are
// read when Prometheus scrapes: recording costs the queues nothing but a few
// counter increments under their own lock.
type Workqueue struct {
	depth, adds, queueDuration, workDuration, unfinished, longest, retries *prometheus.Desc

	queues readers[workqueue.Stats]
}

var _ workqueue.MetricsProvider = (*Workqueue)(nil)

// NewWorkqueue registers the work queue metrics on reg.
func NewWorkqueue(reg prometheus.Registerer) (*Workqueue, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: NewWorkqueue needs a prometheus.Registerer")
	}
	labels := []string{"name", "controller"}
	w := &Workqueue{
		depth: prometheus.NewDesc("workqueue_depth",
			"Current depth of workqueue by workqueue and priority", append(labels, "priority"), nil),
		adds: prometheus.NewDesc("workqueue_adds_total",
			"Total number of adds handled by workqueue", labels, nil),
		queueDuration: prometheus.NewDesc("workqueue_queue_duration_seconds",
			"How long in seconds an item stays in workqueue before being requested", labels, nil),
		workDuration: prometheus.NewDesc("workqueue_work_duration_seconds",
			"How long in seconds processing an item from workqueue takes.", labels, nil),
		unfinished: prometheus.NewDesc("workqueue_unfinished_work_seconds",
			"How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "+
				"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
			labels, nil),
		longest: prometheus.NewDesc("workqueue_longest_running_processor_seconds",
			"How many seconds has the longest running processor for workqueue been running.", labels, nil),
		retries: prometheus.NewDesc("workqueue_retries_total",
			"Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
			labels, nil),
	}
	if err := reg.Register(w); err != nil {
		return nil, fmt.Errorf("metrics: registering work queue metrics: %w", err)
	}
	return w, nil
}

// Register implements workqueue.MetricsProvider. A second queue with the
// same name is refused.
func (w *Workqueue) Register(name string, read func(*workqueue.Stats)) error {
	return w.queues.add("work queue", name, read)
}

// Unregister removes the series of the queue registered as name, so that a
// queue that will not be used leaves none behind and its name can be used
// again.
func (w *Workqueue) Unregister(name string) { w.queues.remove(name) }

// Each reads a snapshot of every registered queue's statistics, as a
// scrape does, and calls fn with each (in no order): for live views.
func (w *Workqueue) Each(fn func(name string, s *workqueue.Stats)) { w.queues.each(fn) }

// Describe implements prometheus.Collector.
func (w *Workqueue) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{w.depth, w.adds, w.queueDuration, w.workDuration, w.unfinished, w.longest, w.retries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads every queue.
func (w *Workqueue) Collect(ch chan<- prometheus.Metric) {
	w.queues.each(func(name string, s *workqueue.Stats) {
		ch <- prometheus.MustNewConstMetric(w.adds, prometheus.CounterValue, float64(s.Adds), name, name)
		ch <- prometheus.MustNewConstMetric(w.retries, prometheus.CounterValue, float64(s.Retries), name, name)
		ch <- histogram(w.queueDuration, &s.QueueDuration, name)
		ch <- histogram(w.workDuration, &s.WorkDuration, name)
		ch <- prometheus.MustNewConstMetric(w.unfinished, prometheus.GaugeValue, s.Unfinished.Seconds(), name, name)
		ch <- prometheus.MustNewConstMetric(w.longest, prometheus.GaugeValue, s.Longest.Seconds(), name, name)
		overflow, overflowSeen := 0, false
		for i, d := range s.Depth {
			if i < maxPriorityLabels {
				ch <- prometheus.MustNewConstMetric(w.depth, prometheus.GaugeValue, float64(d.Ready), name, name, strconv.Itoa(d.Priority))
			} else {
				overflow += d.Ready
				overflowSeen = true
			}
		}
		if overflowSeen {
			ch <- prometheus.MustNewConstMetric(w.depth, prometheus.GaugeValue, float64(overflow), name, name, "exceeded_cardinality_limit")
		}
	})
}

// bucketBounds are workqueue.HistogramBounds() in seconds, computed exactly as
// controller-runtime computes its buckets, so that the "le" label values
// (9.999999999999999e-06 and all) are the same strings.
var bucketBounds = prometheus.ExponentialBuckets(10e-9, 10, len(workqueue.HistogramBounds()))

func histogram(desc *prometheus.Desc, h *workqueue.Histogram, name string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bucketBounds))
	var cumulative uint64
	for i, bound := range bucketBounds {
		cumulative += h.Buckets[i]
		buckets[bound] = cumulative
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, h.Sum.Seconds(), buckets, name, name)
}
