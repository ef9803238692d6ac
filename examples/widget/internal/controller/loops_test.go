package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/examples/cloud"
	examplev1 "kloop.dev/kloop/examples/widget/api/v1"
	"kloop.dev/kloop/examples/widget/internal/controller"
)

// TestHealthyOperatorNoReport: the Widget operator (status written only
// when it changes, a steady poll) at 1,000 Widgets, each created and then
// resized twice by 8 concurrent writers, converges and is never reported as
// a hot loop or a fight, on both servers — the detector's thresholds stay
// clear of a healthy operator under load, whose reconciles write (the
// finalizer, the status) and requeue, but end each chain.
func TestHealthyOperatorNoReport(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 Widgets: not in -short")
	}
	apiservertest.ForEachTarget(t, crdOptions, func(t *testing.T, env *apiservertest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		h := newHarness(t, env, cloud.Options{})
		m := h.startManager(managerOptions{widget: controller.WidgetOptions{MaxConcurrentReconciles: 4}})

		const widgets, writers = 1000, 8
		sizes := []string{"small", "medium", "large"}
		parallel := func(what string, fn func(i int) error) {
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Go(func() {
					for i := w; i < widgets; i += writers {
						if err := fn(i); err != nil {
							errs <- fmt.Errorf("%s widget %d: %w", what, i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		}
		name := func(i int) string { return fmt.Sprintf("w%04d", i) }
		parallel("create", func(i int) error {
			w := &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name(i)}, Spec: examplev1.WidgetSpec{Region: "local-1", Size: sizes[0]}}
			return h.c.Create(ctx, w)
		})
		for edit := 1; edit < len(sizes); edit++ {
			parallel("edit", func(i int) error {
				patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"size":"`+sizes[edit]+`"}}`))
				return h.c.Patch(ctx, &examplev1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name(i)}}, patch)
			})
		}
		// Up to the test's deadline: 3,000 generations take a while under
		// -race on a busy machine.
		for {
			var l examplev1.WidgetList
			err := h.c.List(ctx, &l, client.InNamespace(h.ns))
			n := 0
			for _, w := range l.Items {
				if isRunning(&w) == nil && w.Generation == int64(len(sizes)) {
					n++
				}
			}
			if err == nil && n == widgets {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for every Widget Running at its last generation: %d of %d (%v)", n, widgets, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		time.Sleep(time.Second) // the last reconciles' writes come back as events
		for _, metric := range []string{"kloop_controller_hot_loops_total", "kloop_controller_fighting_writers_total"} {
			if v := counterValue(t, m.reg, metric, "widget"); v != 0 {
				t.Errorf("%s = %v for a healthy operator\nlogs:\n%s", metric, v, h.logs.String())
			}
		}
		var evs corev1.EventList
		if err := h.c.List(ctx, &evs, client.InNamespace(h.ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "HotLoop" || e.Reason == "FightingWriters" {
				t.Errorf("Event on %s: %s %s", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		if s := h.cloud.Stats(); s.Live != widgets || s.Created != widgets {
			t.Errorf("cloud: %d live, %d created, want %d", s.Live, s.Created, widgets)
		}
		t.Logf("%v reconciles for %d Widgets × %d generations", counterValue(t, m.reg, "controller_runtime_reconcile_total", "widget"), widgets, len(sizes))
	})
}

// counterValue returns the sum of the counter name{controller=ctrl} of reg
// (-1: none).
func counterValue(t *testing.T, reg *prometheus.Registry, name, ctrl string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v, found := 0.0, false
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == ctrl {
					v += m.GetCounter().GetValue()
					found = true
				}
			}
		}
	}
	if !found {
		return -1
	}
	return v
}
