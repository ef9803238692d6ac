// Package kloop is a Kubernetes controller runtime for Go, written from first
// principles. It implements the whole path from a change in the API to a call
// of a reconcile function, and back.
//
// The pipeline, one package per stage (the map grows as stages land):
//
//	workqueue  deduplicating, fair, rate-limited, delaying, prioritised queue of keys
//	metrics    Prometheus exposition of the stages' statistics, controller-runtime's names
//
// Separate module:
//
//	bench      side-by-side benchmarks against client-go and controller-runtime
package kloop
