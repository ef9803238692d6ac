package controller

import (
	"context"
	"errors"
	"sync"
	"testing"

	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/workqueue"
)

// names is a metrics provider (of controllers or of queues) that refuses
// the names in taken and can take a registration back, as
// kloop.dev/kloop/metrics's providers do.
type names[S any] struct {
	mu    sync.Mutex // guards taken
	taken map[string]bool
}

func (n *names[S]) Register(name string, _ func(*S)) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken[name] {
		return errors.New("name taken")
	}
	if n.taken == nil {
		n.taken = map[string]bool{}
	}
	n.taken[name] = true
	return nil
}

func (n *names[S]) Unregister(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.taken, name)
}

func (n *names[S]) has(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.taken[name]
}

// A New refused by the controller metrics (the name is taken there) takes
// back its queue's registration, made just before: the failed controller
// leaves no work-queue series and does not hold the queue name.
func TestNewRefusedTakesQueueMetricsBack(t *testing.T) {
	ctrlM := &names[Stats]{taken: map[string]bool{"dup": true}}
	queueM := &names[workqueue.Stats]{}
	r := reconcile.Func(func(_ context.Context, _ reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	if _, err := New("dup", r, Options{Metrics: ctrlM, QueueMetrics: queueM}); err == nil {
		t.Fatal("New under a taken controller name succeeded")
	}
	if queueM.has("dup") {
		t.Fatal("the refused controller left its queue registered")
	}
	if _, err := New("fresh", r, Options{Metrics: ctrlM, QueueMetrics: queueM}); err != nil {
		t.Fatal(err)
	}
	if !ctrlM.has("fresh") || !queueM.has("fresh") {
		t.Fatal("a controller under a free name is not registered")
	}
}
