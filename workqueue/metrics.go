package workqueue

import "time"

// MetricsProvider exposes the statistics of queues, for example to
// Prometheus (kloop.dev/kloop/metrics). It is set in Options.Metrics; the
// package keeps no global provider.
//
// The queue keeps its statistics itself, as plain counters under the lock it
// already holds, and the provider reads them when it wants them (at scrape
// time). Recording therefore costs a few nanoseconds and the clock reads; no
// metric call sits on the hot path.
type MetricsProvider interface {
	// Register is called once by New with the queue's name and a reader of
	// its statistics. read fills *Stats with a consistent snapshot; it may be
	// called from any goroutine at any time, also after ShutDown. A provider
	// refuses a name it already has (kloop.dev/kloop/metrics does): New then
	// fails with its error.
	Register(name string, read func(*Stats)) error
}

// numBounds is the number of bounds of the queue's duration histograms.
const numBounds = 12

// HistogramBounds returns the upper bounds (inclusive) of the queue's
// duration histograms: 10 ns, 100 ns, … 1000 s, as controller-runtime's
// ExponentialBuckets(10e-9, 10, 12). It returns a copy: the bounds are fixed.
func HistogramBounds() [numBounds]time.Duration { return histogramBounds }

var histogramBounds = [numBounds]time.Duration{
	10 * time.Nanosecond, 100 * time.Nanosecond, time.Microsecond, 10 * time.Microsecond,
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
	time.Second, 10 * time.Second, 100 * time.Second, 1000 * time.Second,
}

// Histogram counts durations.
type Histogram struct {
	// Buckets[i] counts the durations d with HistogramBounds()[i-1] < d <=
	// HistogramBounds()[i]; the last one counts those above every bound.
	Buckets [numBounds + 1]uint64
	Count   uint64
	Sum     time.Duration
}

func (h *Histogram) observe(d time.Duration) {
	i := 0
	for i < numBounds && d > histogramBounds[i] {
		i++
	}
	h.Buckets[i]++
	h.Count++
	h.Sum += d
}

// PriorityDepth is the number of ready keys of one priority.
type PriorityDepth struct {
	Priority int
	Ready    int
}

// Stats is a snapshot of a queue's statistics, with controller-runtime's
// metric in brackets.
type Stats struct {
	// Adds counts keys that entered the queue (workqueue_adds_total): a key
	// already waiting to be handed out is not counted again.
	Adds uint64
	// Retries counts adds with a non-zero delay: rate-limited requeues,
	// AddAfter and AddWithOptions with After (workqueue_retries_total).
	Retries uint64
	// Depth is the number of ready keys per priority, highest priority
	// first (workqueue_depth): every priority with ready keys, and up to two
	// more that had some (a priority whose keys were all handed out is
	// dropped once more than two are listed).
	Depth []PriorityDepth
	// QueueDuration: from becoming ready to being handed to a worker
	// (workqueue_queue_duration_seconds).
	QueueDuration Histogram
	// WorkDuration: from Get to Done (workqueue_work_duration_seconds).
	WorkDuration Histogram
	// Unfinished is the work in progress that Done has not yet observed, in
	// total (workqueue_unfinished_work_seconds), and Longest the age of the
	// longest-held key (workqueue_longest_running_processor_seconds).
	Unfinished, Longest time.Duration
}
