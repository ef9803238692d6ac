package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// controller-runtime v0.25.2 works against kloop's embedded API server
// unchanged: its manager syncs its cache, a controller built with For/Owns
// reconciles, its client reads from the cache and writes status.
func TestControllerRuntimeAgainstEmbeddedServer(t *testing.T) {
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	mgr, err := ctrl.NewManager(srv.Config(), manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	c := mgr.GetClient()
	err = ctrl.NewControllerManagedBy(mgr).
		Named("kloop-compat").
		For(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, req.NamespacedName, &cm); err != nil {
				return reconcile.Result{}, ctrlclient.IgnoreNotFound(err)
			}
			mu.Lock()
			seen[req.String()] = cm.Data["v"]
			mu.Unlock()
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, Controller: ptr(true)}}},
				StringData: map[string]string{"v": cm.Data["v"]}}
			if err := c.Create(ctx, secret); ctrlclient.IgnoreAlreadyExists(err) != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	direct, err := ctrlclient.New(srv.Config(), ctrlclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "compat"}, Data: map[string]string{"v": "1"}}
	if err := direct.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait("the first reconcile", func() bool { mu.Lock(); defer mu.Unlock(); return seen["default/compat"] == "1" })
	cm.Data["v"] = "2"
	if err := direct.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	wait("the reconcile of the update", func() bool { mu.Lock(); defer mu.Unlock(); return seen["default/compat"] == "2" })
	var secret corev1.Secret
	wait("the owned Secret", func() bool {
		return direct.Get(ctx, types.NamespacedName{Namespace: "default", Name: "compat"}, &secret) == nil
	})
	if ref := metav1.GetControllerOf(&secret); ref == nil || ref.UID != cm.UID {
		t.Fatalf("the Secret's controller is %v", ref)
	}
}
