package metrics

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/webhook"
)

// webhookLatencyBuckets are controller-runtime's buckets of
// controller_runtime_webhook_latency_seconds, computed as it computes them
// so that the "le" label values are the same strings.
var webhookLatencyBuckets = prometheus.ExponentialBuckets(10e-9, 10, 12)

// Webhook exposes a webhook server's paths to Prometheus with
// controller-runtime's metric names and labels. Set it as
// webhook.Options.Metrics (the manager does). It reads the paths when
// Prometheus scrapes.
type Webhook struct {
	requests, latency, inFlight, panics, conversionPanics *prometheus.Desc

	paths readers[webhook.Stats]
}

var _ webhook.MetricsProvider = (*Webhook)(nil)

// NewWebhook registers the webhook metrics on reg.
func NewWebhook(reg prometheus.Registerer) (*Webhook, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: NewWebhook needs a prometheus.Registerer")
	}
	if len(webhookLatencyBuckets) != len(webhook.LatencyBounds()) {
		return nil, fmt.Errorf("metrics: internal error: %d webhook latency buckets for %d bounds", len(webhookLatencyBuckets), len(webhook.LatencyBounds()))
	}
	w := &Webhook{
		requests:         prometheus.NewDesc("controller_runtime_webhook_requests_total", "Total number of admission requests by HTTP status code.", []string{"webhook", "code"}, nil),
		latency:          prometheus.NewDesc("controller_runtime_webhook_latency_seconds", "Histogram of the latency of processing admission requests", []string{"webhook"}, nil),
		inFlight:         prometheus.NewDesc("controller_runtime_webhook_requests_in_flight", "Current number of admission requests being served.", []string{"webhook"}, nil),
		panics:           prometheus.NewDesc("controller_runtime_webhook_panics_total", "Total number of webhook panics", nil, nil),
		conversionPanics: prometheus.NewDesc("controller_runtime_conversion_webhook_panics_total", "Total number of conversion webhook panics", nil, nil),
	}
	if err := reg.Register(w); err != nil {
		return nil, fmt.Errorf("metrics: registering webhook metrics: %w", err)
	}
	return w, nil
}

// Register implements webhook.MetricsProvider; a path is registered once.
func (w *Webhook) Register(path string, read func(*webhook.Stats)) error {
	return w.paths.add("webhook", path, read)
}

// Describe implements prometheus.Collector.
func (w *Webhook) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{w.requests, w.latency, w.inFlight, w.panics, w.conversionPanics} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads every path. The panic
// counters are there once a path is.
func (w *Webhook) Collect(ch chan<- prometheus.Metric) {
	var panics, conversionPanics uint64
	seen := false
	w.paths.each(func(path string, s *webhook.Stats) {
		seen = true
		for code, n := range s.Requests {
			ch <- prometheus.MustNewConstMetric(w.requests, prometheus.CounterValue, float64(n), path, strconv.Itoa(code))
		}
		buckets := make(map[float64]uint64, len(webhookLatencyBuckets))
		var cumulative uint64
		for i, bound := range webhookLatencyBuckets {
			cumulative += s.Latency.Buckets[i]
			buckets[bound] = cumulative
		}
		ch <- prometheus.MustNewConstHistogram(w.latency, s.Latency.Count, s.Latency.Sum.Seconds(), buckets, path)
		ch <- prometheus.MustNewConstMetric(w.inFlight, prometheus.GaugeValue, float64(s.InFlight), path)
		panics += s.AdmissionPanics
		conversionPanics += s.ConversionPanics
	})
	if seen {
		ch <- prometheus.MustNewConstMetric(w.panics, prometheus.CounterValue, float64(panics))
		ch <- prometheus.MustNewConstMetric(w.conversionPanics, prometheus.CounterValue, float64(conversionPanics))
	}
}
