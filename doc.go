// Package kloop is a Kubernetes controller runtime for Go, written from first
// principles. It implements the whole path from a change in the API to a call
// of a reconcile function, and back.
//
// The pipeline, one package per stage (the map grows as stages land):
//
//	apiserver    embedded Kubernetes API server: REST, watch, discovery, CRDs (storage/, apiservertest/)
//	reflector    lists, then watches from the list's resourceVersion; relists on 410 Gone
//	fifo         delivers every delta in order; a relist as one atomic batch
//	cache        thread-safe indexer keyed namespace/name, with indexes
//	workqueue    deduplicating, fair, rate-limited, delaying, prioritised queue of keys
//	metrics      Prometheus exposition of the stages' statistics, controller-runtime's names
//
// Commands and examples:
//
//	cmd/kloop            kloop apiserver: the embedded API server for kubectl and client-go
//	examples/workqueue   a runnable tour of the work queue
//
// Separate module:
//
//	bench      side-by-side benchmarks against client-go and controller-runtime
package kloop
