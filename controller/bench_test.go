package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"kloop.dev/kloop/internal/rctx"
	"kloop.dev/kloop/internal/testutil"
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
			c, err := New("bench", r, Options{MaxConcurrentReconciles: workers, Metrics: &testutil.Provider[Stats]{}})
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

// BenchmarkReconcileHandler is the controller's own work around one no-op
// Reconcile, without the queue: reconcile ID, context, Result handling,
// statistics.
func BenchmarkReconcileHandler(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"timeout", Options{ReconcileTimeout: time.Minute}},
		{"traced", Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))}},
		{"observed", Options{Observer: discardObserver{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				return reconcile.Result{}, nil
			})
			c, err := New("bench", r, bc.opts)
			if err != nil {
				b.Fatal(err)
			}
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
			ctx := context.Background()
			ids := newIDSource()
			b.ReportAllocs()
			for b.Loop() {
				c.reconcileHandler(ctx, req, 0, ids.next(), nil, nil)
			}
			var s Stats
			c.readStats(&s)
			if s.Success == 0 {
				b.Fatal("no reconcile counted")
			}
			if tp, ok := bc.opts.TracerProvider.(*sdktrace.TracerProvider); ok {
				_ = tp.Shutdown(context.Background())
			}
		})
	}
}

// discardExporter is an OpenTelemetry span exporter that drops the spans.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// discardObserver is an Observer that keeps nothing.
type discardObserver struct{}

func (discardObserver) Observe(string, *Observation) {}

// BenchmarkReconcileID compares the reconcile ID source with
// k8s.io/apimachinery's uuid.NewUUID (controller-runtime's), side by side.
func BenchmarkReconcileID(b *testing.B) {
	var sink string
	b.Run("kloop", func(b *testing.B) {
		ids := newIDSource()
		b.ReportAllocs()
		for b.Loop() {
			sink = rctx.FormatUUID(ids.next())
		}
	})
	b.Run("apimachinery-uuid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = string(uuid.NewUUID())
		}
	})
	_ = sink
}
