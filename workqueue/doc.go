// Package workqueue is kloop's work queue: the stage between event handlers,
// which add keys, and workers, which take them and call Reconcile.
//
// A Queue[K] is fair (first in, first out within one priority), stingy (a key
// added many times before a worker takes it is handed out once) and gives a
// key to one worker at a time (a key added while held is marked dirty and
// comes back at Done). On top of that it delays keys (AddAfter, one timer for
// the whole queue), rate-limits retries (AddRateLimited, Forget,
// NumRequeues) and orders keys by priority (AddWithOptions).
//
// The usual worker loop:
//
//	for {
//		key, shutdown := q.Get()
//		if shutdown {
//			return
//		}
//		if err := sync(key); err != nil {
//			q.AddRateLimited(key) // retry with backoff
//		} else {
//			q.Forget(key) // reset the backoff
//		}
//		q.Done(key)
//	}
//
// Rate limiters: Exponential (per key, 5 ms doubling to 1000 s), Bucket (all
// keys, 10 qps, burst 100), MaxOf, FastSlow, and DefaultRateLimiter, which is
// the larger of Exponential and Bucket exactly as client-go's default
// controller rate limiter.
//
// Metrics go through a MetricsProvider set in Options; kloop.dev/kloop/metrics
// has the Prometheus one, with controller-runtime's metric names. The queue
// starts no goroutine: delays use one clock timer, armed for the earliest
// waiting key.
//
// Workers blocked in Get are woken one at a time: a key that becomes ready
// wakes one unless a woken one is already on its way, and a worker that
// takes a key and leaves others ready wakes the next. A burst of keys thus
// wakes the workers one after the other while they find work, not one per
// key (client-go's queue signals on every add). Done finds the key among the
// few held ones without hashing it, and Forget takes no lock while no key
// has failures. Next(done) is Done and GetWithPriority under one take of
// the lock: the controller's workers loop on it, so that per event a worker
// takes the queue's lock once. AddAll adds many keys under one take of the
// lock: an informer.Source hands over each run of informer events' keys
// with it, so the informer contends with the workers once per run.
//
// With Options.Triggers the queue also keeps, for each key waiting, a
// record of why it was added (a trigger.Record: the last trigger.Recent causes given
// to AddTriggered, AddAllTriggered or AddRecord, and a count of every add by
// type), merged exactly as the key's adds are: a key added while a worker
// holds it starts a new record, handed out with its next Get.
// GetWithTriggers and NextWithTriggers copy the record into the worker's
// buffer; nothing is allocated per add. The controller turns it on (see
// reconcile.TriggersFrom).
//
// A key that leaves the queue (Done with nothing pending) stays indexed,
// idle, until it is added again — a controller's keys come back — up to
// 4096 of them, the oldest let go first: a returning key costs one map
// lookup instead of a map insert at its add and a delete at its Done.
package workqueue
