package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"kloop.dev/kloop/workqueue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWorkqueueMetricsNamesAndValues(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	provider, err := NewWorkqueue(reg)
	if err != nil {
		t.Fatal(err)
	}
	q, err := workqueue.New(workqueue.Options[string]{Name: "widgets", Metrics: provider})
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	q.Add("a")
	q.AddWithOptions("c", workqueue.AddOptions{Priority: -100})
	q.AddAfter("d", time.Hour)
	k, _ := q.Get()
	time.Sleep(2 * time.Millisecond)

	want := `
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="widgets",name="widgets"} 3
# HELP workqueue_depth Current depth of workqueue by workqueue and priority
# TYPE workqueue_depth gauge
workqueue_depth{controller="widgets",name="widgets",priority="-100"} 1
workqueue_depth{controller="widgets",name="widgets",priority="0"} 1
# HELP workqueue_retries_total Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)
# TYPE workqueue_retries_total counter
workqueue_retries_total{controller="widgets",name="widgets"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "workqueue_adds_total", "workqueue_depth", "workqueue_retries_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(provider.latency); n != 1 {
		t.Fatalf("latency series = %d", n)
	}
	u := testutil.ToFloat64(gaugeFrom(t, reg, "workqueue_unfinished_work_seconds"))
	l := testutil.ToFloat64(gaugeFrom(t, reg, "workqueue_longest_running_processor_seconds"))
	if u < 0.002 || l < 0.002 {
		t.Fatalf("unfinished %v, longest %v", u, l)
	}
	q.Done(k)
	if n := testutil.CollectAndCount(provider.workDuration); n != 1 {
		t.Fatalf("work duration series = %d", n)
	}
	if u := testutil.ToFloat64(gaugeFrom(t, reg, "workqueue_unfinished_work_seconds")); u != 0 {
		t.Fatalf("unfinished after Done = %v", u)
	}
	// Every metric controller-runtime exposes is there, with its labels.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, name := range []string{"workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds",
		"workqueue_work_duration_seconds", "workqueue_unfinished_work_seconds",
		"workqueue_longest_running_processor_seconds", "workqueue_retries_total"} {
		if !got[name] {
			t.Errorf("metric %s missing", name)
		}
	}
}

// gaugeFrom gathers one gauge family from reg as a collector of one metric.
func gaugeFrom(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "copy"})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("gauge %s not found", name)
	return nil
}

func TestPriorityLabelCardinalityIsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	provider, err := NewWorkqueue(reg)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := workqueue.New(workqueue.Options[int]{Name: "many", Metrics: provider})
	defer q.ShutDown()
	for p := range 100 {
		q.AddWithOptions(p, workqueue.AddOptions{Priority: p})
	}
	if n := testutil.CollectAndCount(provider.depth); n != maxPriorityLabels+1 {
		t.Fatalf("depth series = %d, want %d", n, maxPriorityLabels+1)
	}
}

func TestNewWorkqueueErrors(t *testing.T) {
	if _, err := NewWorkqueue(nil); err == nil {
		t.Fatal("nil registerer accepted")
	}
	reg := prometheus.NewRegistry()
	if _, err := NewWorkqueue(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWorkqueue(reg); err == nil {
		t.Fatal("registering twice on one registry accepted")
	}
}
