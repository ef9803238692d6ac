package builder_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// A controller of the ConfigMaps of one namespace: its reconciles read
// ConfigMaps from the namespace's informer, the one that wakes them, and see
// nothing outside it; the manager runs no informer of every ConfigMap.
func ExampleWithScope() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mgr, err := manager.New(srv.RESTConfig(), manager.Options{})
	if err != nil {
		panic(err)
	}
	c := mgr.Client()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		panic(err)
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared"}}); err != nil {
		panic(err)
	}
	reconciled := make(chan string, 1)
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "kube-root-ca.crt" {
			return reconcile.Result{}, nil // every namespace has one, with the cluster's CA
		}
		var cm corev1.ConfigMap
		if err := c.Get(ctx, req.NamespacedName, &cm); err != nil {
			return reconcile.Result{}, err
		}
		outside := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shared"}, &corev1.ConfigMap{})
		var list corev1.ConfigMapList
		otherList := c.List(ctx, &list, client.InNamespace("default"))
		reconciled <- fmt.Sprintf("%s (color %s); get of default/shared out of scope: %v; list of default out of scope: %v",
			req, cm.Data["color"], errors.Is(outside, client.ErrOutOfScope), errors.Is(otherList, client.ErrOutOfScope))
		return reconcile.Result{}, nil
	})
	err = builder.ControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}, builder.WithScope(informer.Scope{Namespace: "team-a"})).
		Complete(r)
	if err != nil {
		panic(err)
	}
	mctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(mctx) }()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "settings"}, Data: map[string]string{"color": "blue"}}
	if err := c.Create(ctx, cm); err != nil {
		panic(err)
	}
	fmt.Println(<-reconciled)
	fmt.Println("informers:", mgr.Factory().NumInformers())

	// Outside a reconcile, the client reads the whole kind.
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shared"}, &corev1.ConfigMap{}); err != nil {
		panic(err)
	}
	fmt.Println("informers after a read outside reconciles:", mgr.Factory().NumInformers())
	stop()
	fmt.Println("manager stopped:", <-stopped)
	cancel()
	fmt.Println("server stopped:", srv.Close())
	// Output:
	// team-a/settings (color blue); get of default/shared out of scope: true; list of default out of scope: true
	// informers: 1
	// informers after a read outside reconciles: 2
	// manager stopped: <nil>
	// server stopped: <nil>
}
