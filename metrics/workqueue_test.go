package metrics

import (
	"strings"
	"sync"
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
	clock := &stepClock{now: time.Unix(1000, 0)}
	q, err := workqueue.New(workqueue.Options[string]{Name: "widgets", Metrics: provider, Clock: clock})
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
	clock.Advance(500 * time.Millisecond)

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
	if n := testutil.CollectAndCount(provider, "workqueue_queue_duration_seconds"); n != 1 {
		t.Fatalf("latency series = %d", n)
	}
	u := testutil.ToFloat64(gaugeFrom(t, reg, "workqueue_unfinished_work_seconds"))
	l := testutil.ToFloat64(gaugeFrom(t, reg, "workqueue_longest_running_processor_seconds"))
	if u != 0.5 || l != 0.5 {
		t.Fatalf("unfinished %v, longest %v", u, l)
	}
	q.Done(k)
	if n := testutil.CollectAndCount(provider, "workqueue_work_duration_seconds"); n != 1 {
		t.Fatalf("work duration series = %d", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP workqueue_work_duration_seconds How long in seconds processing an item from workqueue takes.
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="1e-08"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="1e-07"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="1e-06"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="9.999999999999999e-06"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="9.999999999999999e-05"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="0.001"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="0.01"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="0.1"} 0
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="1"} 1
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="10"} 1
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="100"} 1
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="1000"} 1
workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="+Inf"} 1
workqueue_work_duration_seconds_sum{controller="widgets",name="widgets"} 0.5
workqueue_work_duration_seconds_count{controller="widgets",name="widgets"} 1
`), "workqueue_work_duration_seconds"); err != nil {
		t.Fatal(err)
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
	if n := testutil.CollectAndCount(provider, "workqueue_depth"); n != maxPriorityLabels+1 {
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

// stepClock is a clock that moves only when told; its timers never fire.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *stepClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
func (c *stepClock) AfterFunc(time.Duration, func()) workqueue.Timer { return stoppedTimer{} }

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool               { return false }
func (stoppedTimer) Reset(time.Duration) bool { return false }
