package liveview

import (
	"math"
	"testing"
	"time"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/workqueue"
)

func TestQuantile(t *testing.T) {
	bounds := []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}
	tests := []struct {
		name      string
		q         float64
		cur, base []uint64
		want      float64 // ms; NaN: nil
	}{
		{"nothing observed", 0.5, []uint64{3, 0, 0, 0}, []uint64{3, 0, 0, 0}, math.NaN()},
		{"all in the first bucket", 0.5, []uint64{10, 0, 0, 0}, []uint64{0, 0, 0, 0}, 0.5},
		{"interpolated in the second", 0.5, []uint64{0, 4, 0, 0}, []uint64{0, 0, 0, 0}, 5.5},
		{"p99 in the third", 0.99, []uint64{50, 40, 10, 0}, []uint64{0, 0, 0, 0}, 10 + 90*0.9},
		{"above every bound", 0.99, []uint64{0, 0, 0, 5}, []uint64{0, 0, 0, 0}, 100},
		{"only the window counts", 0.5, []uint64{100, 4, 0, 0}, []uint64{100, 0, 0, 0}, 5.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := quantile(tt.q, bounds, tt.cur, tt.base)
			if math.IsNaN(tt.want) {
				if got != nil {
					t.Fatalf("got %v, want nil", *got)
				}
				return
			}
			if got == nil || math.Abs(*got-tt.want) > 1e-9 {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHistoryView(t *testing.T) {
	sample := func(sec int, events uint64, success uint64, depth int) Sample {
		var qs workqueue.Stats
		qs.Depth = []workqueue.PriorityDepth{{Priority: 0, Ready: depth}, {Priority: -100, Ready: 1}}
		qs.QueueDuration.Buckets[6] = success // (1 ms, 10 ms]
		var cs controller.Stats
		cs.Success, cs.Errors, cs.TerminalErrors = success, 3, 1
		cs.MaxConcurrentReconciles, cs.ActiveWorkers = 4, 2
		cs.ReconcileTime.Buckets[0] = success
		return Sample{
			Time:        t0.Add(time.Duration(sec) * time.Second),
			Informers:   []informer.InformerStats{{Name: "configmaps", Kind: "ConfigMap", Events: events, Queued: 2, Cached: 10}},
			Controllers: map[string]controller.Stats{"c": cs},
			Queues:      map[string]workqueue.Stats{"c": qs},
		}
	}
	var h history
	h.add(sample(0, 100, 10, 5))
	first := h.view()
	if first.Informers[0].EventsPerSec != 0 || first.Controllers[0].QueueP50 != nil {
		t.Errorf("a first frame has rates or percentiles: %+v", first)
	}
	h.add(sample(2, 300, 50, 7))
	v := h.view()
	in, c := v.Informers[0], v.Controllers[0]
	if in.EventsPerSec != 100 || in.FIFODepth != 2 || in.CacheSize != 10 || in.Events != 300 {
		t.Errorf("informer view %+v", in)
	}
	if c.ReconcilesPerSec["success"] != 20 || c.Reconciles["error"] != 2 || c.Reconciles["terminal"] != 1 || c.ReconcilesTotal != 53 {
		t.Errorf("controller reconciles %+v %+v (total %d)", c.Reconciles, c.ReconcilesPerSec, c.ReconcilesTotal)
	}
	if c.QueueDepthTotal != 8 || c.ActiveWorkers != 2 || c.Workers != 4 {
		t.Errorf("controller view %+v", c)
	}
	if c.QueueP50 == nil || *c.QueueP50 <= 1 || *c.QueueP50 > 10 {
		t.Errorf("queue p50 %v, want within (1 ms, 10 ms]", c.QueueP50)
	}
	// Samples older than the Window go, but one stays as the base.
	for s := 3; s <= 30; s++ {
		h.add(sample(s, 300, 50, 0))
	}
	if n := len(h.samples); n > int(Window/time.Second)+2 {
		t.Errorf("%d samples kept", n)
	}
	if v := h.view(); v.Controllers[0].QueueP50 != nil {
		t.Errorf("a window without observations has a p50 %v", *v.Controllers[0].QueueP50)
	}
}
