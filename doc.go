// Package kloop is a Kubernetes controller runtime for Go, written from first
// principles. It implements the whole path from a change in the API to a call
// of a reconcile function, and back.
//
// The pipeline, one package per stage:
//
//	workqueue  deduplicating, fair, rate-limited, delaying, prioritised queue of keys
//	metrics    Prometheus implementations of the stages' metrics providers
//
// This map grows as stages land.
package kloop
