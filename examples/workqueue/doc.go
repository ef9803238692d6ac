// Command workqueue is a runnable tour of kloop's work queue: ten quick edits to one object become one reconcile, a
// failing key is retried with the default backoff (5 ms, 10 ms, 20 ms …), a
// RequeueAfter comes back on time, and the initial list waits behind fresh
// events at low priority.
//
//	go run ./examples/workqueue
package main
