package handler_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/reconcile"
)

// printer is an Enqueuer that prints what handlers add.
type printer string

func (p printer) Add(r reconcile.Request) { fmt.Printf("%s add %s\n", p, r) }
func (p printer) AddAfter(r reconcile.Request, d time.Duration) {
	fmt.Printf("%s add %s after %s\n", p, r, d)
}

// A ReplicaSet event wakes the Deployment that controls it; a ConfigMap
// event wakes every Widget that reads it; an object of the initial list is
// queued at low priority.
func Example() {
	ctx := context.Background()
	live, low := printer("live"), printer("low")
	isController := true

	owner, err := handler.EnqueueRequestForOwner(schema.GroupKind{Group: "apps", Kind: "Deployment"}, handler.OwnerOptions{})
	if err != nil {
		panic(err)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-5d4f", ResourceVersion: "7",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: &isController}}}}
	handler.Dispatch(ctx, owner, handler.CreateEvent{Object: rs}, live, low)
	handler.Dispatch(ctx, owner, handler.CreateEvent{Object: rs, IsInInitialList: true}, live, low)

	readers := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o handler.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, w := range []string{"blue", "green"} { // from an index of widgets by ConfigMap, in a real controller
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: w}})
		}
		return out
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
	handler.Dispatch(ctx, readers, handler.DeleteEvent{Object: cm}, live, low)
	// Output:
	// live add default/web
	// low add default/web
	// live add default/blue
	// live add default/green
}
