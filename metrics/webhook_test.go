package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"kloop.dev/kloop/webhook"
)

func TestWebhookMetricsNamesAndValues(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	w, err := NewWebhook(reg)
	if err != nil {
		t.Fatal(err)
	}
	// No path: no series.
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("%d series before any path (%v)", n, err)
	}
	if err := w.Register("/validate-example-com-v1-widget", func(s *webhook.Stats) {
		s.Requests = map[int]uint64{200: 5, 500: 0, 400: 1}
		s.InFlight = 2
		s.AdmissionPanics = 1
		s.Latency.Buckets[5] = 4 // (100 µs, 1 ms]
		s.Latency.Buckets[6] = 2 // (1 ms, 10 ms]
		s.Latency.Count = 6
		s.Latency.Sum = 9 * time.Millisecond
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Register("/convert", func(s *webhook.Stats) {
		s.Requests = map[int]uint64{200: 1, 500: 0}
		s.ConversionPanics = 3
		s.Latency.Count = 1
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Register("/convert", func(*webhook.Stats) {}); err == nil {
		t.Fatal("a path registered twice: no error")
	}
	want := `
# HELP controller_runtime_conversion_webhook_panics_total Total number of conversion webhook panics
# TYPE controller_runtime_conversion_webhook_panics_total counter
controller_runtime_conversion_webhook_panics_total 3
# HELP controller_runtime_webhook_panics_total Total number of webhook panics
# TYPE controller_runtime_webhook_panics_total counter
controller_runtime_webhook_panics_total 1
# HELP controller_runtime_webhook_requests_in_flight Current number of admission requests being served.
# TYPE controller_runtime_webhook_requests_in_flight gauge
controller_runtime_webhook_requests_in_flight{webhook="/convert"} 0
controller_runtime_webhook_requests_in_flight{webhook="/validate-example-com-v1-widget"} 2
# HELP controller_runtime_webhook_requests_total Total number of admission requests by HTTP status code.
# TYPE controller_runtime_webhook_requests_total counter
controller_runtime_webhook_requests_total{code="200",webhook="/convert"} 1
controller_runtime_webhook_requests_total{code="200",webhook="/validate-example-com-v1-widget"} 5
controller_runtime_webhook_requests_total{code="400",webhook="/validate-example-com-v1-widget"} 1
controller_runtime_webhook_requests_total{code="500",webhook="/convert"} 0
controller_runtime_webhook_requests_total{code="500",webhook="/validate-example-com-v1-widget"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"controller_runtime_conversion_webhook_panics_total", "controller_runtime_webhook_panics_total",
		"controller_runtime_webhook_requests_in_flight", "controller_runtime_webhook_requests_total"); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() != "/validate-example-com-v1-widget" {
				continue
			}
			h := m.GetHistogram()
			b := h.GetBucket()
			if h.GetSampleCount() != 6 || h.GetSampleSum() != 0.009 || len(b) != 12 ||
				b[0].GetUpperBound() != 1e-8 || b[11].GetUpperBound() != 1000 ||
				b[4].GetCumulativeCount() != 0 || b[5].GetCumulativeCount() != 4 || b[6].GetCumulativeCount() != 6 {
				t.Fatalf("histogram %v", h)
			}
			return
		}
	}
	t.Fatal("no latency histogram")
}
