package builder_test

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller/controllerutil"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/reconcile"
)

const widgetFinalizer = "example.com/cleanup"

// finalizerReconciler keeps a finalizer on every Widget and removes it once
// the Widget is being deleted (after its cleanup).
type finalizerReconciler struct {
	c  *client.Client
	ns string // the test's namespace: other tests' Widgets are left alone
	// sawDeletion is set when a reconcile saw the deletionTimestamp.
	sawDeletion atomic.Bool
}

func (r *finalizerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace != r.ns {
		return reconcile.Result{}, nil
	}
	var w testcrd.Widget
	if err := r.c.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if w.DeletionTimestamp != nil {
		r.sawDeletion.Store(true)
		if controllerutil.RemoveFinalizer(&w, widgetFinalizer) {
			return reconcile.Result{}, r.c.Update(ctx, &w)
		}
		return reconcile.Result{}, nil
	}
	changed, err := controllerutil.AddFinalizer(&w, widgetFinalizer)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	if changed {
		return reconcile.Result{}, r.c.Update(ctx, &w)
	}
	return reconcile.Result{}, nil
}

// The finalizer pattern with GenerationChanged on For, as kubebuilder
// scaffolds it: the deletion of an object with a finalizer is an update
// that sets deletionTimestamp and, on Kubernetes, bumps the generation, so
// it passes the predicate; the controller removes its finalizer and the
// object goes.
func TestFinalizerWithGenerationChanged(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ns := env.Namespace
		ctx, mgr := widgetManager(t, env)
		c := mgr.Client()
		r := &finalizerReconciler{c: c, ns: ns}
		// The reconcile reads through the client from the informer that
		// woke it (the whole kind here; the scope's with WithScope), so it
		// never reads an older object than the event's.
		err := builder.ControllerManagedBy(mgr).
			For(&testcrd.Widget{}, builder.WithPredicates(predicate.GenerationChanged{})).
			Complete(r)
		if err != nil {
			t.Fatal(err)
		}
		start(t, mgr)

		w := &testcrd.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1"}, Spec: testcrd.WidgetSpec{Color: "red"}}
		create(t, c, w)
		key := client.ObjectKey{Namespace: ns, Name: "w1"}
		var got testcrd.Widget
		testutil.Eventually(t, "the finalizer added", func() bool {
			return c.Uncached().Get(ctx, key, &got) == nil && controllerutil.ContainsFinalizer(&got, widgetFinalizer)
		})
		if err := c.Delete(ctx, &got); err != nil {
			t.Fatal(err)
		}
		var marked testcrd.Widget
		if err := c.Uncached().Get(ctx, key, &marked); err == nil {
			t.Logf("deletion marked: generation %d -> %d, deletionTimestamp %v", got.Generation, marked.Generation, marked.DeletionTimestamp)
		}
		testutil.Eventually(t, "the Widget gone", func() bool {
			err := c.Uncached().Get(ctx, key, &testcrd.Widget{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			return apierrors.IsNotFound(err)
		})
		if !r.sawDeletion.Load() {
			t.Fatal("no reconcile saw the deletionTimestamp")
		}
	})
}
