package builder_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// BenchmarkWriteToReconcile measures the whole loop on the embedded API
// server: an update written by the client, its watch event through the
// shared informer, the builder's informer.Source and the queue, to the start of
// the reconcile that sees it. One op is one update and its reconcile.
func BenchmarkWriteToReconcile(b *testing.B) {
	srv := apiservertest.NewServer(b, apiservertest.Options{})
	mgr, err := manager.New(srv.Config(), manager.Options{})
	if err != nil {
		b.Fatal(err)
	}
	seen := make(chan struct{}, 1)
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		select {
		case seen <- struct{}{}:
		default:
		}
		return reconcile.Result{}, nil
	})
	if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r); err != nil {
		b.Fatal(err)
	}
	c := mgr.Client()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bench"}, Data: map[string]string{"n": ""}}
	if err := c.Create(context.Background(), cm); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	<-seen // the initial list
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		cm.Data["n"] = string(rune('a' + i%26))
		if err := c.Update(ctx, cm); err != nil {
			b.Fatal(err)
		}
		<-seen
	}
}
