package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/reconcile"
	"kloop.dev/kloop/workqueue"
)

// statsReader is a minimal MetricsProvider: it keeps the reader.
type statsReader struct{ read func(*controller.Stats) }

func (s *statsReader) Register(_ string, read func(*controller.Stats)) error {
	s.read = read
	return nil
}

// A controller fed by a channel: each key is reconciled until it settles.
// "db" fails once and is retried after a 200 ms backoff, "web" asks to be
// looked at again after 800 ms, "bad" fails for good.
func Example() {
	var mu sync.Mutex
	attempts := map[string]int{}
	settled := make(chan struct{})
	var once sync.Once
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		attempts[req.Name]++
		n := attempts[req.Name]
		fmt.Printf("reconcile %s (attempt %d)\n", req, n)
		if attempts["db"] == 2 && attempts["web"] == 2 && attempts["bad"] == 1 {
			once.Do(func() { close(settled) })
		}
		switch {
		case req.Name == "db" && n == 1:
			return reconcile.Result{}, errors.New("database not reachable")
		case req.Name == "web" && n == 1:
			return reconcile.Result{RequeueAfter: 800 * time.Millisecond}, nil
		case req.Name == "bad":
			return reconcile.Result{}, reconcile.Terminal(errors.New("spec.replicas must not be negative"))
		}
		return reconcile.Result{}, nil
	})

	stats := &statsReader{}
	backoff, err := workqueue.NewExponential[reconcile.Request](workqueue.ExponentialOptions{Base: 200 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	c, err := controller.New("widget", r, controller.Options{Metrics: stats, RateLimiter: backoff})
	if err != nil {
		panic(err)
	}
	events := make(chan handler.Event, 3)
	src, err := controller.NewChannelSource(events, handler.EnqueueRequestForObject{}, controller.ChannelOptions{})
	if err != nil {
		panic(err)
	}
	if err := c.Watch(src); err != nil {
		panic(err)
	}
	for _, name := range []string{"db", "web", "bad"} {
		events <- handler.GenericEvent{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	<-settled
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	var s controller.Stats
	stats.read(&s)
	fmt.Printf("success=%d requeue_after=%d errors=%d terminal=%d\n", s.Success, s.RequeueAfter, s.Errors, s.TerminalErrors)
	// Output:
	// reconcile default/db (attempt 1)
	// reconcile default/web (attempt 1)
	// reconcile default/bad (attempt 1)
	// reconcile default/db (attempt 2)
	// reconcile default/web (attempt 2)
	// success=2 requeue_after=1 errors=2 terminal=1
}
