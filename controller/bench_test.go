package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/reconcile"
)

// BenchmarkReconcile measures the controller's own cost per reconcile: a key
// added through the handlers' enqueuer, taken by a worker, a no-op Reconcile
// with its ID and context, the Result handling and the statistics.
func BenchmarkReconcile(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var done atomic.Int64
			target := int64(b.N)
			finished := make(chan struct{})
			r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				if done.Add(1) == target {
					close(finished)
				}
				return reconcile.Result{}, nil
			})
			c, err := New("bench", r, Options{MaxConcurrentReconciles: workers, Metrics: &metricsRecorder{}})
			if err != nil {
				b.Fatal(err)
			}
			reqs := make([]reconcile.Request, b.N)
			for i := range reqs {
				reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("obj-%d", i)}}
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- c.Start(ctx) }()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range reqs {
				c.normal.Add(reqs[i])
			}
			<-finished
			b.StopTimer()
			cancel()
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}
