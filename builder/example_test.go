package builder_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/controller"
	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// A Deployment controller that also reacts to its ReplicaSets (Owns) and to
// the ConfigMap its "config" annotation names (Watches with a map
// function), on the embedded API server.
func Example() {
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
	reconciled := make(chan string, 16)
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var d appsv1.Deployment
		if err := c.Get(ctx, req.NamespacedName, &d); err != nil {
			return reconcile.Result{}, err
		}
		reconciled <- fmt.Sprintf("reconcile %s (config %s)", req, d.Annotations["config"])
		return reconcile.Result{}, nil
	})
	// The Deployments that read a ConfigMap, from the manager's cache.
	readers := func(ctx context.Context, cm handler.Object) []reconcile.Request {
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, d := range list.Items {
			if d.Namespace == cm.GetNamespace() && d.Annotations["config"] == cm.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}})
			}
		}
		return reqs
	}
	err = builder.ControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Owns(&appsv1.ReplicaSet{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(readers)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
	if err != nil {
		panic(err)
	}
	mctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(mctx) }()

	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{"config": "web-config"}},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}
	if err := c.Create(ctx, web); err != nil {
		panic(err)
	}
	fmt.Println("For:    ", <-reconciled)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-config"}}
	if err := c.Create(ctx, cm); err != nil {
		panic(err)
	}
	fmt.Println("Watches:", <-reconciled)

	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: web.Name, UID: web.UID, Controller: new(true),
		}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}
	if err := c.Create(ctx, rs); err != nil {
		panic(err)
	}
	fmt.Println("Owns:   ", <-reconciled)

	fmt.Println("informers:", mgr.Factory().NumInformers())
	stop()
	fmt.Println("manager stopped:", <-stopped)
	cancel()
	fmt.Println("server stopped:", srv.Close())
	// Output:
	// For:     reconcile default/web (config web-config)
	// Watches: reconcile default/web (config web-config)
	// Owns:    reconcile default/web (config web-config)
	// informers: 3
	// manager stopped: <nil>
	// server stopped: <nil>
}
