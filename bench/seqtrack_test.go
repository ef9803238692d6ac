package bench

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// seqTracker follows n writes (or watch events) numbered 0..n-1 over k keys:
// write i changes key i%k, so each key's writes are k apart and in order.
// The sender stamps write i with sent (just before it leaves), and the object
// it produces carries i. A reconcile that reads key j's object from its cache
// with sequence number s has handled every write of j up to s that no earlier
// reconcile handled: each of them gets the latency now − sent, once. Writes
// merged by the queue's deduplication are thus counted with the latency of
// the reconcile that finally saw them (or a later state), never dropped.
//
// Reconciles of one key never run at once (both runtimes guarantee it, and the
// queue's lock orders them), so the per-key state needs no lock of its own.
type seqTracker struct {
	k, n int
	base time.Time
	sent []atomic.Int64 // write i's send time, ns since base
	lat  []int64        // write i's latency in ns: written once, by the reconcile that handled it
	// next[j] is the first write of key j not yet handled (j, j+k, …); n or
	// more once the key's last write was handled.
	next []atomic.Int64
	// initial[j] is set once a reconcile saw key j in its initial state
	// (sequence -1).
	initial []atomic.Bool

	reconciles atomic.Int64 // reconciles of tracked keys
	direct     atomic.Int64 // writes whose own state a reconcile read
	initialN   atomic.Int64 // keys seen in their initial state
	finished   atomic.Int64 // keys whose last write was handled
	bad        atomic.Int64 // objects whose key and sequence disagree
	lastSent   atomic.Int64 // ns since base of the latest send
}

func newSeqTracker(k, n int) *seqTracker {
	t := &seqTracker{k: k, n: n, base: time.Now(),
		sent: make([]atomic.Int64, n), lat: make([]int64, n),
		next: make([]atomic.Int64, k), initial: make([]atomic.Bool, k)}
	for j := range t.next {
		t.next[j].Store(int64(j))
	}
	for j := range k {
		if j >= n { // a key with no write is finished from the start
			t.finished.Add(1)
		}
	}
	return t
}

func (t *seqTracker) now() int64 { return int64(time.Since(t.base)) }

// send stamps write i; at is a now() reading.
func (t *seqTracker) send(i int, at int64) {
	t.sent[i].Store(at)
	t.lastSent.Store(at)
}

// observe records that a reconcile read key j at sequence seq (-1: the
// object's initial state, before any tracked write).
func (t *seqTracker) observe(j, seq int) {
	if j < 0 || j >= t.k {
		return
	}
	t.reconciles.Add(1)
	if seq < 0 {
		if t.initial[j].CompareAndSwap(false, true) {
			t.initialN.Add(1)
		}
		return
	}
	if seq >= t.n || seq%t.k != j {
		t.bad.Add(1)
		return
	}
	next := t.next[j].Load()
	if int64(seq) < next {
		return // already handled: a reconcile of a state seen before
	}
	now := t.now()
	for s := next; s <= int64(seq); s += int64(t.k) {
		t.lat[s] = now - t.sent[s].Load()
	}
	t.next[j].Store(int64(seq + t.k))
	t.direct.Add(1)
	if seq+t.k >= t.n {
		t.finished.Add(1)
	}
}

// observeNamed is observe for an object named prefix+key whose sequence is
// the decimal string seq.
func (t *seqTracker) observeNamed(name, seq string) {
	j, err := strconv.Atoi(strings.TrimPrefix(name, objPrefix))
	if err != nil {
		return
	}
	s, err := strconv.Atoi(seq)
	if err != nil {
		t.bad.Add(1)
		return
	}
	t.observe(j, s)
}

// objPrefix starts the name of every tracked object: objPrefix + key.
const objPrefix = "cm-"

func objName(j int) string { return objPrefix + strconv.Itoa(j) }

// waitFor polls cond every 200 µs until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
	return true
}

// seqResult is what a tracked run measured.
type seqResult struct {
	eventsPerSec float64 // n / (first send → every key's last write handled)
	p50, p99     time.Duration
	max          time.Duration
	lag          time.Duration // last send → every key's last write handled
	merged       int           // writes whose own state no reconcile read (deduplicated)
	reconciles   int64
	cpu          time.Duration // the process's CPU time per write, start → end
}

// result computes the figures of a run that started sending at start (a now()
// reading), had every key finished at end and used cpu of the process's CPU
// time in between.
func (t *seqTracker) result(start, end int64, cpu time.Duration) seqResult {
	lat := slices.Clone(t.lat)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	q := func(p float64) time.Duration { return time.Duration(lat[int(p*float64(len(lat)-1))]) }
	return seqResult{
		eventsPerSec: float64(t.n) / (float64(end-start) / 1e9),
		p50:          q(0.50),
		p99:          q(0.99),
		max:          q(1),
		lag:          time.Duration(end - t.lastSent.Load()),
		merged:       t.n - int(t.direct.Load()),
		reconciles:   t.reconciles.Load(),
		cpu:          cpu / time.Duration(t.n),
	}
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r seqResult) report(b *testing.B) {
	b.ReportMetric(r.eventsPerSec, "events/s")
	b.ReportMetric(float64(r.p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(r.max.Microseconds()), "max-µs")
	b.ReportMetric(float64(r.lag.Microseconds()), "lag-µs")
	b.ReportMetric(float64(r.merged), "merged-writes")
	b.ReportMetric(float64(r.reconciles), "reconciles")
	b.ReportMetric(float64(r.cpu.Nanoseconds())/1e3, "cpu-µs/event")
}

// metricRatios prints, for one workload, kloop's figure over each anchor's.
type metricRatios struct {
	mu  sync.Mutex
	res map[string]seqResult // by contender
}

func (m *metricRatios) record(name string, r seqResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.res == nil {
		m.res = map[string]seqResult{}
	}
	m.res[name] = r
}

// writersOnly names the run without a controller that metricRatios
// subtracts to get a runtime's own CPU time per event.
const writersOnly = "writers-only"

// print prints one line per figure and kloop variant ("kloop",
// "kloop-nointern"): the variant's figure over each anchor's.
func (m *metricRatios) print(workload string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	base, hasBase := m.res[writersOnly]
	metrics := []struct {
		unit string
		of   func(seqResult) float64
	}{
		{"events/s", func(r seqResult) float64 { return r.eventsPerSec }},
		{"p50 latency", func(r seqResult) float64 { return float64(r.p50) }},
		{"p99 latency", func(r seqResult) float64 { return float64(r.p99) }},
		{"cpu/event", func(r seqResult) float64 { return float64(r.cpu) }},
	}
	if hasBase {
		metrics = append(metrics, struct {
			unit string
			of   func(seqResult) float64
		}{"runtime cpu/event over " + writersOnly, func(r seqResult) float64 { return float64(r.cpu - base.cpu) }})
	}
	for _, variant := range []string{"kloop", "kloop-buffered", "kloop-nointern"} {
		k, ok := m.res[variant]
		if !ok {
			continue
		}
		for _, metric := range metrics {
			out := "ratio " + workload + " (" + metric.unit + "):"
			n := 0
			for _, other := range []string{"client-go", "controller-runtime"} {
				if o, ok := m.res[other]; ok && metric.of(o) > 0 {
					out += fmt.Sprintf(" %s/%s=%.3f", variant, other, metric.of(k)/metric.of(o))
					n++
				}
			}
			if n > 0 {
				fmt.Println(out)
			}
		}
	}
}

// The tracker gives each write one latency, from the reconcile that first
// read its state or a later one, and finishes a key at its last write.
func TestSeqTracker(t *testing.T) {
	tests := []struct {
		name         string
		k, n         int
		observations [][2]int // key, sequence
		wantDirect   int64
		wantFinished int64
		wantHandled  []bool // by write
	}{
		{
			name: "every write seen", k: 2, n: 4,
			observations: [][2]int{{0, -1}, {1, -1}, {0, 0}, {1, 1}, {0, 2}, {1, 3}},
			wantDirect:   4, wantFinished: 2,
			wantHandled: []bool{true, true, true, true},
		},
		{
			name: "merged writes handled by a later state", k: 2, n: 6,
			observations: [][2]int{{0, 4}, {1, 1}},
			wantDirect:   2, wantFinished: 1,
			wantHandled: []bool{true, true, true, false, true, false},
		},
		{
			name: "repeated and stale reconciles change nothing", k: 1, n: 3,
			observations: [][2]int{{0, 1}, {0, 1}, {0, 0}, {0, 2}},
			wantDirect:   2, wantFinished: 1,
			wantHandled: []bool{true, true, true},
		},
		{
			name: "a key without writes is finished", k: 3, n: 2,
			observations: [][2]int{{0, 0}, {1, 1}},
			wantDirect:   2, wantFinished: 3,
			wantHandled: []bool{true, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newSeqTracker(tt.k, tt.n)
			for i := range tt.n {
				tr.send(i, -1) // every latency is then positive
			}
			for _, o := range tt.observations {
				tr.observe(o[0], o[1])
			}
			if got := tr.direct.Load(); got != tt.wantDirect {
				t.Errorf("direct = %d, want %d", got, tt.wantDirect)
			}
			if got := tr.finished.Load(); got != tt.wantFinished {
				t.Errorf("finished = %d, want %d", got, tt.wantFinished)
			}
			for i, want := range tt.wantHandled {
				if got := tr.lat[i] > 0; got != want {
					t.Errorf("write %d handled = %v, want %v", i, got, want)
				}
			}
		})
	}
}
