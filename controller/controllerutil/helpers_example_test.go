package controllerutil_test

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/controller/controllerutil"
)

// The helpers in one reconcile, run twice against the embedded API server:
// the first run adds the finalizer, creates the owned ConfigMap under a
// deterministic name and writes the status; the second finds everything in
// place and writes nothing (no hot loop).
func Example() {
	srv, err := apiservertest.New(apiservertest.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.New(srv.RESTConfig(), client.Options{})
	if err != nil {
		panic(err)
	}

	labels := map[string]string{"app": "web"}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	if err := c.Create(ctx, web); err != nil {
		panic(err)
	}

	const finalizer = "example.com/cleanup"
	reconcile := func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.KeyOf(web), &d); err != nil {
			return client.IgnoreNotFound(err)
		}
		if changed, err := controllerutil.AddFinalizer(&d, finalizer); err != nil {
			return err
		} else if changed {
			if err := c.Update(ctx, &d); err != nil {
				return err
			}
			fmt.Println("  added the finalizer")
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: controllerutil.Name(d.Name, "config")},
			Data:       map[string]string{"replicas": "1"},
		}
		if err := controllerutil.SetControllerReference(&d, cm, c.Scheme()); err != nil {
			return err
		}
		if err := c.Create(ctx, cm); err == nil {
			fmt.Println("  created ConfigMap", cm.Name)
		} else if client.IgnoreAlreadyExists(err) != nil {
			return err
		}
		changed, err := controllerutil.UpdateStatus(ctx, c.Status(), &d, func() error {
			d.Status.ObservedGeneration = d.Generation
			return nil
		})
		if changed {
			fmt.Println("  wrote the status")
		}
		return err
	}

	for i := 1; i <= 2; i++ {
		fmt.Printf("reconcile %d:\n", i)
		if err := reconcile(); err != nil {
			fmt.Println("  error:", err)
		}
	}

	// Deleting holds the object by its finalizer; no new finalizer may join.
	if err := c.Delete(ctx, web); err != nil {
		panic(err)
	}
	var d appsv1.Deployment
	if err := c.Get(ctx, client.KeyOf(web), &d); err != nil {
		panic(err)
	}
	_, err = controllerutil.AddFinalizer(&d, "example.com/another")
	fmt.Println("being deleted:", d.DeletionTimestamp != nil, "add:", errors.Is(err, controllerutil.ErrBeingDeleted))
	fmt.Println("removed:", controllerutil.RemoveFinalizer(&d, finalizer), "update:", c.Update(ctx, &d))

	cancel()
	fmt.Println("server stopped:", srv.Close())
	// Output:
	// reconcile 1:
	//   added the finalizer
	//   created ConfigMap web-config
	//   wrote the status
	// reconcile 2:
	// being deleted: true add: true
	// removed: true update: <nil>
	// server stopped: <nil>
}
