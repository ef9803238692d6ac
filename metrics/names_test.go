package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/leaderelection"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/workqueue"
)

// Each provider registers a name once: a second stage under a taken name is
// refused with an error that names it, and the first keeps its series.
func TestRegisterRefusesTakenNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := NewController(reg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkqueue(reg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLeaderElection(reg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		register func(name string, value float64) error
		metric   string
	}{
		{"controller", func(name string, v float64) error {
			return c.Register(name, func(s *controller.Stats) { s.MaxConcurrentReconciles = int(v) })
		}, "controller_runtime_max_concurrent_reconciles"},
		{"work queue", func(name string, v float64) error {
			return w.Register(name, func(s *workqueue.Stats) { s.Adds = uint64(v) })
		}, "workqueue_adds_total"},
		{"leader election", func(name string, v float64) error {
			return l.Register(name, func(s *leaderelection.Status) { s.Leading = v == 1 })
		}, "leader_election_master_status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.register("first", 1); err != nil {
				t.Fatalf("first registration: %v", err)
			}
			err := tt.register("first", 2)
			if err == nil || !strings.Contains(err.Error(), `"first" is already registered`) {
				t.Fatalf("second registration under the name: %v, want a refusal naming it", err)
			}
			if err := tt.register("second", 2); err != nil {
				t.Fatalf("another name: %v", err)
			}
			if n := testutil.CollectAndCount(reg, tt.metric); n != 2 {
				t.Errorf("%s has %d series, want 2 (first, second)", tt.metric, n)
			}
		})
	}
	if err := c.Register("nil-reader", nil); err == nil {
		t.Error("a nil reader was accepted")
	}
}

// controller.New and workqueue.New fail under a name their provider already
// has: the controller that has it keeps its statistics.
func TestNewUnderTakenNameFails(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	cm, err := NewController(reg)
	if err != nil {
		t.Fatal(err)
	}
	qm, err := NewWorkqueue(reg)
	if err != nil {
		t.Fatal(err)
	}
	noop := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	if _, err := controller.New("widgets", noop, controller.Options{Metrics: cm, QueueMetrics: qm, MaxConcurrentReconciles: 3}); err != nil {
		t.Fatal(err)
	}
	_, err = controller.New("widgets", noop, controller.Options{Metrics: cm, QueueMetrics: qm, MaxConcurrentReconciles: 7})
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second controller.New under the name: %v, want a refusal", err)
	}
	_, err = controller.New("widgets", noop, controller.Options{Metrics: cm, MaxConcurrentReconciles: 7})
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second controller.New under the name, controller metrics only: %v, want a refusal", err)
	}
	want := `
# HELP controller_runtime_max_concurrent_reconciles Maximum number of concurrent reconciles per controller
# TYPE controller_runtime_max_concurrent_reconciles gauge
controller_runtime_max_concurrent_reconciles{controller="widgets"} 3
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "controller_runtime_max_concurrent_reconciles"); err != nil {
		t.Error(err)
	}
	if _, err := workqueue.New(workqueue.Options[string]{Name: "widgets", Metrics: qm}); err == nil {
		t.Error("workqueue.New under a taken name succeeded")
	}
	if _, err := workqueue.New(workqueue.Options[string]{Metrics: qm}); err == nil {
		t.Error("workqueue.New with Metrics and no Name succeeded")
	}
}

// Unregister takes a name back: its series go, and the name can be
// registered again.
func TestUnregister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := NewController(reg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkqueue(reg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		register   func() error
		unregister func()
		metric     string
	}{
		{"controller", func() error {
			return c.Register("gone", func(s *controller.Stats) { s.MaxConcurrentReconciles = 1 })
		}, func() { c.Unregister("gone") }, "controller_runtime_max_concurrent_reconciles"},
		{"work queue", func() error {
			return w.Register("gone", func(s *workqueue.Stats) { s.Adds = 1 })
		}, func() { w.Unregister("gone") }, "workqueue_adds_total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.register(); err != nil {
				t.Fatal(err)
			}
			if n := testutil.CollectAndCount(reg, tt.metric); n != 1 {
				t.Fatalf("%s: %d series after Register, want 1", tt.metric, n)
			}
			tt.unregister()
			tt.unregister() // a name not registered: nothing happens
			if n := testutil.CollectAndCount(reg, tt.metric); n != 0 {
				t.Fatalf("%s: %d series after Unregister, want 0", tt.metric, n)
			}
			if err := tt.register(); err != nil {
				t.Fatalf("Register after Unregister: %v", err)
			}
		})
	}
}
