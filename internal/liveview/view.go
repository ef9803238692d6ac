package liveview

import (
	"cmp"
	"slices"
	"time"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/workqueue"
)

// Sample is one reading of the pipeline's statistics, as the stages keep
// them (counters since they started, gauges now).
type Sample struct {
	// Time is when it was read.
	Time time.Time
	// Informers are the shared informers' (informer.Factory.InformerStats).
	Informers []informer.InformerStats
	// Controllers and Queues are each controller's and its work queue's,
	// by the controller's name.
	Controllers map[string]controller.Stats
	Queues      map[string]workqueue.Stats
}

// InformerView is what the page shows of an informer.
type InformerView struct {
	Name         string  `json:"name"`
	Kind         string  `json:"kind"`
	Events       uint64  `json:"events"`
	EventsPerSec float64 `json:"eventsPerSec"`
	FIFODepth    int     `json:"fifoDepth"`
	CacheSize    int     `json:"cacheSize"`
}

// ControllerView is what the page shows of a controller and its queue.
// Latencies are in milliseconds over the last Window, nil when nothing
// was observed in it.
type ControllerView struct {
	Name             string                    `json:"name"`
	QueueDepth       []workqueue.PriorityDepth `json:"queueDepth"`
	QueueDepthTotal  int                       `json:"queueDepthTotal"`
	ActiveWorkers    int                       `json:"activeWorkers"`
	Workers          int                       `json:"workers"`
	Reconciles       map[string]uint64         `json:"reconciles"`
	ReconcilesTotal  uint64                    `json:"reconcilesTotal"`
	ReconcilesPerSec map[string]float64        `json:"reconcilesPerSec"`
	QueueP50         *float64                  `json:"queueP50ms"`
	QueueP99         *float64                  `json:"queueP99ms"`
	ReconcileP50     *float64                  `json:"reconcileP50ms"`
	ReconcileP99     *float64                  `json:"reconcileP99ms"`
	StaleSkips       uint64                    `json:"staleSkips"`
	HotLoops         uint64                    `json:"hotLoops"`
	FightingWriters  uint64                    `json:"fightingWriters"`
}

// View is one frame of the page: the pipeline's figures, rates over the
// last interval, latencies over the last Window.
type View struct {
	Time        time.Time        `json:"time"`
	Informers   []InformerView   `json:"informers"`
	Controllers []ControllerView `json:"controllers"`
}

// Window is how far back the latency percentiles look.
const Window = 10 * time.Second

// history holds the last samples of one viewer, to compute rates (from the
// previous one) and percentiles (from the oldest within Window).
type history struct {
	samples []Sample // oldest first
}

func (h *history) add(s Sample) {
	h.samples = append(h.samples, s)
	// Keep one sample older than Window, the base of the percentiles.
	i := 0
	for i+1 < len(h.samples) && s.Time.Sub(h.samples[i+1].Time) >= Window {
		i++
	}
	h.samples = h.samples[i:]
}

// view computes the frame of the last sample added.
func (h *history) view() View {
	cur := h.samples[len(h.samples)-1]
	var prev, base *Sample
	if len(h.samples) > 1 {
		prev, base = &h.samples[len(h.samples)-2], &h.samples[0]
	}
	v := View{Time: cur.Time, Informers: []InformerView{}, Controllers: []ControllerView{}}
	secs := 0.0
	if prev != nil {
		secs = cur.Time.Sub(prev.Time).Seconds()
	}
	rate := func(now, before uint64) float64 {
		if secs <= 0 || now < before {
			return 0
		}
		return float64(now-before) / secs
	}
	for _, in := range cur.Informers {
		iv := InformerView{Name: in.Name, Kind: in.Kind, Events: in.Events, FIFODepth: in.Queued, CacheSize: in.Cached}
		if prev != nil {
			for _, p := range prev.Informers {
				if p.Name == in.Name {
					iv.EventsPerSec = rate(in.Events, p.Events)
				}
			}
		}
		v.Informers = append(v.Informers, iv)
	}
	for name, cs := range cur.Controllers {
		qs := cur.Queues[name]
		cv := ControllerView{
			Name: name, QueueDepth: slices.Clone(qs.Depth), ActiveWorkers: cs.ActiveWorkers,
			Workers: cs.MaxConcurrentReconciles, StaleSkips: cs.StaleSkips, HotLoops: cs.HotLoops,
			FightingWriters:  cs.FightingWriters,
			Reconciles:       outcomes(cs),
			ReconcilesPerSec: map[string]float64{},
		}
		if cv.QueueDepth == nil {
			cv.QueueDepth = []workqueue.PriorityDepth{}
		}
		for _, d := range qs.Depth {
			cv.QueueDepthTotal += d.Ready
		}
		for _, n := range cv.Reconciles {
			cv.ReconcilesTotal += n
		}
		if prev != nil {
			before := outcomes(prev.Controllers[name])
			for k, n := range cv.Reconciles {
				cv.ReconcilesPerSec[k] = rate(n, before[k])
			}
		}
		if base != nil {
			bq, bc := base.Queues[name].QueueDuration, base.Controllers[name].ReconcileTime
			wb := workqueue.HistogramBounds()
			cv.QueueP50 = quantile(0.5, wb[:], qs.QueueDuration.Buckets[:], bq.Buckets[:])
			cv.QueueP99 = quantile(0.99, wb[:], qs.QueueDuration.Buckets[:], bq.Buckets[:])
			cb := controller.ReconcileTimeBounds()
			cv.ReconcileP50 = quantile(0.5, cb[:], cs.ReconcileTime.Buckets[:], bc.Buckets[:])
			cv.ReconcileP99 = quantile(0.99, cb[:], cs.ReconcileTime.Buckets[:], bc.Buckets[:])
		}
		v.Controllers = append(v.Controllers, cv)
	}
	slices.SortFunc(v.Controllers, func(a, b ControllerView) int { return cmp.Compare(a.Name, b.Name) })
	return v
}

// outcomes are a controller's reconciles by result (terminal errors are
// counted apart from the other errors).
func outcomes(s controller.Stats) map[string]uint64 {
	return map[string]uint64{
		string(controller.OutcomeSuccess):      s.Success,
		string(controller.OutcomeRequeueAfter): s.RequeueAfter,
		string(controller.OutcomeError):        s.Errors - min(s.Errors, s.TerminalErrors),
		string(controller.OutcomeTerminal):     s.TerminalErrors,
	}
}

// quantile estimates the q-quantile, in milliseconds, of the observations
// between two readings of a histogram (buckets cur minus base; bounds are
// the buckets' upper bounds, the last bucket has none), interpolating
// linearly within the bucket as Prometheus' histogram_quantile does; nil
// when no observation fell between them.
func quantile(q float64, bounds []time.Duration, cur, base []uint64) *float64 {
	var total uint64
	delta := make([]uint64, len(cur))
	for i := range cur {
		if cur[i] >= base[i] {
			delta[i] = cur[i] - base[i]
		}
		total += delta[i]
	}
	if total == 0 {
		return nil
	}
	rank := q * float64(total)
	var seen float64
	for i, n := range delta {
		if n == 0 {
			continue
		}
		if seen+float64(n) >= rank {
			if i >= len(bounds) { // above every bound: the highest one
				ms := float64(bounds[len(bounds)-1]) / float64(time.Millisecond)
				return &ms
			}
			lo := time.Duration(0)
			if i > 0 {
				lo = bounds[i-1]
			}
			d := float64(lo) + (float64(bounds[i])-float64(lo))*(rank-seen)/float64(n)
			ms := d / float64(time.Millisecond)
			return &ms
		}
		seen += float64(n)
	}
	return nil
}
