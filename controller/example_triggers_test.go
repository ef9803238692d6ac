package controller_test

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/reconcile"
)

// Why did this reconcile run? Three updates of one ConfigMap arrive while
// the key waits: one reconcile, whose triggers name all three. Then the
// reconcile's own error brings it back once more.
func ExampleTriggersFrom() {
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	calls := 0
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		calls++
		if calls == 1 {
			close(started)
			<-release // the first reconcile holds the key while events pile up
			return reconcile.Result{}, nil
		}
		t, _ := reconcile.TriggersFrom(ctx)
		fmt.Printf("reconcile %d of %s: %d triggers\n", calls, req, t.Total)
		for _, tr := range t.Recent {
			fmt.Println("  ", tr)
		}
		if calls == 2 {
			return reconcile.Result{}, fmt.Errorf("not yet")
		}
		close(done)
		return reconcile.Result{}, nil
	})
	c, err := controller.New("triggers", r, controller.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	// Unbuffered: a send returns once the source took the event, after it
	// dispatched the one before. A generic event, filtered out, marks the
	// end.
	events := make(chan handler.Event)
	src, err := controller.NewChannelSource(events, handler.EnqueueRequestForObject{}, controller.ChannelOptions{
		Predicates: []predicate.Predicate{predicate.Funcs{GenericFunc: func(handler.GenericEvent) bool { return false }}},
	})
	if err != nil {
		panic(err)
	}
	if err := c.Watch(src); err != nil {
		panic(err)
	}
	cm := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings", ResourceVersion: rv}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Start(ctx) }()
	events <- handler.CreateEvent{Object: cm("1")}
	<-started
	for _, rv := range []string{"2", "3", "4"} {
		events <- handler.UpdateEvent{ObjectOld: cm("1"), ObjectNew: cm(rv)}
	}
	events <- handler.GenericEvent{Object: cm("4")} // the updates are queued
	close(release)
	<-done
	cancel()
	<-stopped
	// Output:
	// reconcile 2 of default/settings: 3 triggers
	//    Update ConfigMap default/settings rv=2 by EnqueueRequestForObject
	//    Update ConfigMap default/settings rv=3 by EnqueueRequestForObject
	//    Update ConfigMap default/settings rv=4 by EnqueueRequestForObject
	// reconcile 3 of default/settings: 1 triggers
	//    Error
}
