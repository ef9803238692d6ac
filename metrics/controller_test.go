package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"kloop.dev/kloop/controller"
)

func TestControllerMetricsNamesAndValues(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := NewController(reg)
	if err != nil {
		t.Fatal(err)
	}
	c.Register("widgets", func(s *controller.Stats) {
		s.Success, s.RequeueAfter, s.Errors = 7, 3, 2
		s.TerminalErrors, s.Panics, s.Timeouts = 1, 1, 0
		s.MaxConcurrentReconciles, s.ActiveWorkers = 4, 2
		s.ReconcileTime.Buckets[0] = 10 // ≤ 5 ms
		s.ReconcileTime.Buckets[4] = 2  // (50 ms, 100 ms]
		s.ReconcileTime.Count = 12
		s.ReconcileTime.Sum = 250 * time.Millisecond
	})
	want := `
# HELP controller_runtime_active_workers Number of currently used workers per controller
# TYPE controller_runtime_active_workers gauge
controller_runtime_active_workers{controller="widgets"} 2
# HELP controller_runtime_max_concurrent_reconciles Maximum number of concurrent reconciles per controller
# TYPE controller_runtime_max_concurrent_reconciles gauge
controller_runtime_max_concurrent_reconciles{controller="widgets"} 4
# HELP controller_runtime_reconcile_errors_total Total number of reconciliation errors per controller
# TYPE controller_runtime_reconcile_errors_total counter
controller_runtime_reconcile_errors_total{controller="widgets"} 2
# HELP controller_runtime_reconcile_panics_total Total number of reconciliation panics per controller
# TYPE controller_runtime_reconcile_panics_total counter
controller_runtime_reconcile_panics_total{controller="widgets"} 1
# HELP controller_runtime_reconcile_timeouts_total Total number of reconciliation timeouts per controller
# TYPE controller_runtime_reconcile_timeouts_total counter
controller_runtime_reconcile_timeouts_total{controller="widgets"} 0
# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="widgets",result="error"} 2
controller_runtime_reconcile_total{controller="widgets",result="requeue"} 0
controller_runtime_reconcile_total{controller="widgets",result="requeue_after"} 3
controller_runtime_reconcile_total{controller="widgets",result="success"} 7
# HELP controller_runtime_terminal_reconcile_errors_total Total number of terminal reconciliation errors per controller
# TYPE controller_runtime_terminal_reconcile_errors_total counter
controller_runtime_terminal_reconcile_errors_total{controller="widgets"} 1
`
	names := []string{"controller_runtime_active_workers", "controller_runtime_max_concurrent_reconciles",
		"controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_panics_total",
		"controller_runtime_reconcile_timeouts_total", "controller_runtime_reconcile_total",
		"controller_runtime_terminal_reconcile_errors_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 12 || h.GetSampleSum() != 0.25 {
			t.Fatalf("histogram count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
		}
		b := h.GetBucket()
		if len(b) != len(reconcileTimeBuckets) || b[0].GetUpperBound() != 0.005 || b[0].GetCumulativeCount() != 10 ||
			b[3].GetCumulativeCount() != 10 || b[4].GetUpperBound() != 0.1 || b[4].GetCumulativeCount() != 12 {
			t.Fatalf("buckets %v", b)
		}
		return
	}
	t.Fatal("controller_runtime_reconcile_time_seconds missing")
}

func TestNewControllerErrors(t *testing.T) {
	if _, err := NewController(nil); err == nil {
		t.Fatal("nil registerer accepted")
	}
	reg := prometheus.NewRegistry()
	if _, err := NewController(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewController(reg); err == nil {
		t.Fatal("registering twice accepted")
	}
}
