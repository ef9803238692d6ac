package builder_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// widgetReconciler keeps one Deployment per Widget, owned by it, and
// records the Widget's state only when it changes.
type widgetReconciler struct {
	c          *client.Client
	reconciles atomic.Int32
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.reconciles.Add(1)
	var w testcrd.Widget
	if err := r.c.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	d := deployment(w.Namespace, w.Name, nil)
	d.Spec.Template.Spec.Containers[0].Image = w.Spec.Image
	d.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: testcrd.GroupVersion.String(), Kind: "Widget", Name: w.Name, UID: w.UID, Controller: new(true),
	}}
	if err := r.c.Create(ctx, d); client.IgnoreAlreadyExists(err) != nil {
		return reconcile.Result{}, err
	}
	if w.Status.State != "ready" {
		w.Status.State = "ready"
		if err := r.c.Status().Update(ctx, &w); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// A user's CRD struct as For: the controller creates an owned Deployment,
// recreates it when it is deleted (Owns), writes its status without a hot
// loop (GenerationChanged on For), and settles.
func TestWidgetOperator(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testWidgetOperator)
}

// widgetManager installs the Widget CRD on env (shared on the real server)
// and returns a manager whose scheme knows it, with a context for requests
// that ends with the test or after a minute.
func widgetManager(t *testing.T, env *apiservertest.Env) (context.Context, *manager.Manager) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	testcrd.AddToScheme(scheme)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cfg := env.Config()
	if err := testcrd.Install(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(cfg, manager.Options{Cache: informer.FactoryOptions{Scheme: scheme}})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, mgr
}

func testWidgetOperator(t *testing.T, env *apiservertest.Env) {
	ns := env.Namespace
	_, mgr := widgetManager(t, env)
	c := mgr.Client()
	r := &widgetReconciler{c: c}
	err := builder.ControllerManagedBy(mgr).
		For(&testcrd.Widget{}, builder.WithPredicates(predicate.GenerationChanged{})).
		Owns(&appsv1.Deployment{}).
		Complete(r)
	if err != nil {
		t.Fatal(err)
	}
	start(t, mgr)

	w := &testcrd.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1"}, Spec: testcrd.WidgetSpec{Image: "nginx:1"}}
	create(t, c, w)
	key := client.ObjectKey{Namespace: ns, Name: "w1"}
	testutil.Eventually(t, "the Widget's state", func() bool {
		var got testcrd.Widget
		return c.Get(context.Background(), key, &got) == nil && got.Status.State == "ready"
	})
	var d appsv1.Deployment
	testutil.Eventually(t, "the owned Deployment", func() bool { return c.Get(context.Background(), key, &d) == nil })
	if ref := metav1.GetControllerOf(&d); ref == nil || ref.UID != w.UID {
		t.Fatalf("the Deployment's controller is %v, want the Widget", ref)
	}
	// No hot loop: the status write does not wake the Widget again, so the
	// reconciles stop.
	testutil.Eventually(t, "the controller to settle", func() bool {
		n := r.reconciles.Load()
		time.Sleep(300 * time.Millisecond)
		return r.reconciles.Load() == n
	})

	// Someone deletes the Deployment: Owns wakes the Widget, which recreates it.
	if err := c.Delete(context.Background(), &d); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the Deployment recreated", func() bool {
		var again appsv1.Deployment
		err := c.Uncached().Get(context.Background(), key, &again)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil && again.UID != d.UID
	})
}
