package manager_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// A reconcile records an Event with the manager's recorder: it reaches the
// server once the manager runs; a second Recorder call for the component
// returns the same recorder.
func TestRecorder(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		mgr, err := manager.New(env.Config(), manager.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := mgr.Recorder("configmap-controller")
		if err != nil {
			t.Fatal(err)
		}
		if again, err := mgr.Recorder("configmap-controller"); err != nil || again != rec {
			t.Fatalf("second Recorder: %p, %v; want %p", again, err, rec)
		}
		if _, err := mgr.Recorder(""); err == nil {
			t.Fatal("a recorder without a component")
		}
		r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			if err := mgr.Client().Get(ctx, req.NamespacedName, &cm); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if cm.Namespace == env.Namespace {
				rec.Eventf(&cm, corev1.EventTypeNormal, "Reconciled", "reconciled %s", cm.Name)
			}
			return reconcile.Result{}, nil
		})
		if err := builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(r); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := run(t, ctx, mgr)
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		if err := mgr.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "noted"}}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the reconcile's event", func() bool {
			var l corev1.EventList
			if err := mgr.Client().Uncached().List(ctx, &l, client.InNamespace(env.Namespace)); err != nil {
				t.Fatal(err)
			}
			for _, ev := range l.Items {
				if ev.InvolvedObject.Name == "noted" && ev.Reason == "Reconciled" && ev.Message == "reconciled noted" &&
					ev.Source.Component == "configmap-controller" {
					return true
				}
			}
			return false
		})
	})
}
