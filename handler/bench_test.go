package handler

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/reconcile"
)

// countEnqueuer counts adds, like a queue that costs nothing.
type countEnqueuer struct{ n *int }

func (c countEnqueuer) Add(reconcile.Request)                     { *c.n++ }
func (c countEnqueuer) AddAfter(reconcile.Request, time.Duration) { *c.n++ }

// BenchmarkDispatch is the per-event cost of the handlers themselves.
func BenchmarkDispatch(b *testing.B) {
	owned := pod("ns", "p", ref("apps/v1", "ReplicaSet", "rs", false), ref("example.com/v1", "Widget", "w", true))
	newer := owned.DeepCopy()
	newer.ResourceVersion = "2"
	owner, err := EnqueueRequestForOwner(schema.GroupKind{Group: "example.com", Kind: "Widget"}, OwnerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	fanout := EnqueueRequestsFromMapFunc(func(_ context.Context, o Object) []reconcile.Request {
		return []reconcile.Request{requestFor(o), requestFor(o)}
	})
	for _, bc := range []struct {
		name string
		h    EventHandler
		ev   Event
	}{
		{"ForObject/create", EnqueueRequestForObject{}, CreateEvent{Object: owned}},
		{"ForObject/update", EnqueueRequestForObject{}, UpdateEvent{ObjectOld: owned, ObjectNew: newer}},
		{"ForOwner/update", owner, UpdateEvent{ObjectOld: owned, ObjectNew: newer}},
		{"FromMapFunc/update", fanout, UpdateEvent{ObjectOld: owned, ObjectNew: newer}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var n int
			q := countEnqueuer{&n}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				Dispatch(ctx, bc.h, bc.ev, q, q)
			}
			if n == 0 {
				b.Fatal("nothing enqueued")
			}
		})
	}
}
