package fifo_test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kloop.dev/kloop/cache"
	"kloop.dev/kloop/fifo"
	"kloop.dev/kloop/reflector"
)

// The shared contract of the informer stack, checked at compile time: the
// reflector pushes into a FIFO, and the FIFO reads what the consumer knows
// from a cache.Indexer.
var (
	_ reflector.Store[*corev1.Pod]                  = (*fifo.FIFO[*corev1.Pod])(nil)
	_ reflector.Store[*unstructured.Unstructured]   = (*fifo.FIFO[*unstructured.Unstructured])(nil)
	_ fifo.KnownObjects[*corev1.Pod]                = (*cache.Indexer[*corev1.Pod])(nil)
	_ fifo.KnownObjects[*unstructured.Unstructured] = (*cache.Indexer[*unstructured.Unstructured])(nil)
)
