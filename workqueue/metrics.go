package workqueue

import "time"

// MetricsProvider makes the metrics of one queue. It is set in
// Options.Metrics; the package keeps no global provider.
type MetricsProvider interface {
	// NewQueueMetrics returns the metrics sink of the queue called name.
	// inFlight reports, when the provider wants to know (at scrape time,
	// for example), the seconds of work in progress that Done has not yet
	// observed and the age of the longest-running item.
	NewQueueMetrics(name string, inFlight func() (unfinished, longest time.Duration)) QueueMetrics
}

// QueueMetrics receives the measurements of one queue. Its methods are called
// with the queue's lock held: they must be quick, must not block and must not
// call back into the queue.
type QueueMetrics interface {
	// Added counts a key that entered the queue (adds_total). A key that
	// was already waiting to be handed out is not counted again.
	Added()
	// Depth changes by delta the number of keys of the given priority that
	// are ready to be handed out (depth).
	Depth(priority, delta int)
	// Latency observes how long a key waited between becoming ready and
	// being handed to a worker (queue_duration_seconds).
	Latency(d time.Duration)
	// WorkDuration observes how long a worker held a key (work_duration_seconds).
	WorkDuration(d time.Duration)
	// Retry counts an add with a non-zero delay: rate-limited requeues,
	// AddAfter and AddWithOptions with After (retries_total).
	Retry()
}
