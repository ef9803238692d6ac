// Package handler turns events about objects into reconcile Requests. It is
// the stage between an event source (an informer, a channel) and the
// controller's work queue: handlers enqueue keys, never objects, and they see
// only an Enqueuer (Add, AddAfter), never the queue itself.
//
// The events are declared here, independent of any informer: CreateEvent
// (IsInInitialList marks the objects of the initial list), UpdateEvent,
// DeleteEvent (FinalStateUnknown marks a delete the informer inferred after a
// relist, when the object in the event is the last state it knew) and
// GenericEvent (anything else, for example from a channel). Objects are any
// Kubernetes object: metav1.Object plus runtime.Object.
//
// Handlers, with controller-runtime's semantics:
//
//	EnqueueRequestForObject{}         the object's own namespace/name
//	EnqueueRequestForOwner(gk, opts)  the owner of kind gk named in the object's ownerReferences:
//	                                  the controller owner only by default, or every owner of that kind;
//	                                  matched by API group (not version) and kind
//	EnqueueRequestsFromMapFunc(fn)    every request fn returns, deduplicated (updates map both the
//	                                  old and the new object)
//	Funcs{…}                          your own functions; nil ones do nothing
//
// Dispatch calls the right method of a handler for an event and chooses the
// enqueuer: events of the initial list, and updates that carry no change
// (same resourceVersion: a resync), go to the low-priority enqueuer so that
// live changes are reconciled first, as controller-runtime's priority queue
// does. The controller's sources use it; informer.Source, which knows an
// informer's resync by the very same object as old and new, routes its
// events itself. An Enqueuer that is also a BatchEnqueuer (the controller's)
// takes many requests under one take of its lock (AddAll); one that is a
// TriggerEnqueuer (the controller's) also takes why each request is added
// (a trigger.Cause: the event, its object, the handler), which
// informer.Source hands over and reconcile.TriggersFrom reads back.
// EnqueueRequestForObject and EnqueueRequestsFromMapFunc name themselves
// (String) in those records.
//
// Nil objects, and typed nil pointers in an Object, never panic: handlers
// ignore them.
//
// Predicates live in the sub-package kloop.dev/kloop/handler/predicate. They
// filter the same events, but they are their own concept: keeping them apart
// lets them have controller-runtime's names (predicate.Funcs,
// predicate.GenerationChanged, predicate.And…) without clashing with the
// handlers' (handler.Funcs), and reads as controller authors already write
// it. The events are declared here, so predicate imports handler and not the
// other way round.
package handler
