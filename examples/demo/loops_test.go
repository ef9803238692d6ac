package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
)

// TestHealthyOperatorNoReport: the demo's Widget operator (status written
// only when it changes) at 1,000 Widgets, each created and then edited
// twice by 8 concurrent writers, reconciles every edit and is never reported
// as a hot loop or a fight, on both servers — the detector's thresholds
// stay clear of a healthy operator under load, whose every reconcile
// writes (the finalizer, the ConfigMap, the status) but ends the chain.
func TestHealthyOperatorNoReport(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 Widgets: not in -short")
	}
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		if err := apiservertest.InstallCRDs(ctx, env.Config(), widgetCRD()); err != nil {
			t.Fatal(err)
		}
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		scheme.AddKnownTypes(widgetGV, &Widget{}, &WidgetList{})
		metav1.AddToGroupVersion(scheme, widgetGV)
		logs := &testutil.SyncBuffer{}
		reg := prometheus.NewRegistry()
		mgr, err := manager.New(env.Config(), manager.Options{
			Cache:      informer.FactoryOptions{Scheme: scheme, DefaultNamespaces: []string{env.Namespace}},
			Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
			Registerer: reg,
		})
		if err != nil {
			t.Fatal(err)
		}
		c := mgr.Client()
		rec, err := mgr.Recorder("widget-controller")
		if err != nil {
			t.Fatal(err)
		}
		r := &reconciler{c: c, rec: rec, log: func(string, ...any) {}, count: map[string]int{}}
		if err := builder.ControllerManagedBy(mgr).
			For(&Widget{}, builder.WithPredicates(predicate.GenerationChanged{})).
			Owns(&corev1.ConfigMap{}).
			WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
			Complete(r); err != nil {
			t.Fatal(err)
		}
		mgrDone := make(chan error, 1)
		mctx, stop := context.WithCancel(ctx)
		go func() { mgrDone <- mgr.Start(mctx) }()
		defer func() {
			stop()
			if err := <-mgrDone; err != nil {
				t.Error(err)
			}
		}()

		const widgets, writers = 1000, 8
		colors := []string{"red", "green", "blue"}
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
			return c.Create(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name(i)}, Spec: WidgetSpec{Color: colors[0]}})
		})
		for edit := 1; edit < len(colors); edit++ {
			parallel("edit", func(i int) error {
				patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"color":"`+colors[edit]+`"}}`))
				return c.Patch(ctx, &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name(i)}}, patch)
			})
		}
		// Up to the test's deadline: 3,000 generations take a while under
		// -race on a busy machine.
		waitReady := func(cond func() error) {
			for {
				err := cond()
				if err == nil {
					return
				}
				select {
				case <-ctx.Done():
					t.Fatalf("waiting for every Widget ready at its last generation: %v", err)
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		waitReady(func() error {
			var l WidgetList
			if err := c.Uncached().List(ctx, &l, client.InNamespace(env.Namespace)); err != nil {
				return err
			}
			n := 0
			for _, w := range l.Items {
				if w.Status.State == "ready" && w.Status.ObservedGeneration == w.Generation && w.Generation == int64(len(colors)) {
					n++
				}
			}
			if n != widgets {
				return fmt.Errorf("%d of %d ready", n, widgets)
			}
			return nil
		})
		time.Sleep(time.Second) // the last reconciles' writes come back as events
		for _, m := range []string{"kloop_controller_hot_loops_total", "kloop_controller_fighting_writers_total"} {
			if v := counterValue(t, reg, m, "widget"); v != 0 {
				t.Errorf("%s = %v for a healthy operator\nlogs:\n%s", m, v, logs.String())
			}
		}
		var evs corev1.EventList
		if err := c.Uncached().List(ctx, &evs, client.InNamespace(env.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "HotLoop" || e.Reason == "FightingWriters" {
				t.Errorf("Event on %s: %s %s", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		r.mu.Lock()
		total := 0
		for _, n := range r.count {
			total += n
		}
		r.mu.Unlock()
		t.Logf("%d reconciles for %d Widgets × %d generations", total, widgets, len(colors))
	})
}

// counterValue returns the counter name{controller=ctrl} of reg (-1: none).
func counterValue(t *testing.T, reg *prometheus.Registry, name, ctrl string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == ctrl {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
