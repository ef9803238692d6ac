package bench

import (
	"github.com/prometheus/client_golang/prometheus"
	cgworkqueue "k8s.io/client-go/util/workqueue"
)

// promProvider is a client-go workqueue.MetricsProvider over Prometheus with
// controller-runtime's metric names, labels and buckets (the same as
// controller-runtime's internal provider, which cannot be imported), on a
// registry of its own so that the contenders do not share series.
type promProvider struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

func newPromProvider(reg prometheus.Registerer) *promProvider {
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	labels := []string{"name", "controller"}
	p := &promProvider{
		depth:        prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth", Help: "depth"}, append(labels, "priority")),
		adds:         prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total", Help: "adds"}, labels),
		latency:      prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds", Help: "latency", Buckets: buckets}, labels),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds", Help: "work", Buckets: buckets}, labels),
		unfinished:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds", Help: "unfinished"}, labels),
		longest:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds", Help: "longest"}, labels),
		retries:      prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total", Help: "retries"}, labels),
	}
	reg.MustRegister(p.depth, p.adds, p.latency, p.workDuration, p.unfinished, p.longest, p.retries)
	return p
}

func (p *promProvider) NewDepthMetric(name string) cgworkqueue.GaugeMetric {
	return p.depth.WithLabelValues(name, name, "")
}
func (p *promProvider) NewAddsMetric(name string) cgworkqueue.CounterMetric {
	return p.adds.WithLabelValues(name, name)
}
func (p *promProvider) NewLatencyMetric(name string) cgworkqueue.HistogramMetric {
	return p.latency.WithLabelValues(name, name)
}
func (p *promProvider) NewWorkDurationMetric(name string) cgworkqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name, name)
}
func (p *promProvider) NewUnfinishedWorkSecondsMetric(name string) cgworkqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name, name)
}
func (p *promProvider) NewLongestRunningProcessorSecondsMetric(name string) cgworkqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name, name)
}
func (p *promProvider) NewRetriesMetric(name string) cgworkqueue.CounterMetric {
	return p.retries.WithLabelValues(name, name)
}
