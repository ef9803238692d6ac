// Package trigger is the vocabulary of why a key was queued: a Cause (what
// happened, to which object, through which handler), its Type, and the
// bounded Record a work queue keeps per key and hands to the worker with it.
//
// It is a leaf: the event sources (informer, controller's channel source)
// make Causes, the handlers pass them on, the work queue keeps Records, and
// the reconcile package reads them (reconcile.TriggersFrom) — without any of
// them importing another stage. Records are observability only: a reconciler
// stays level-triggered.
package trigger
