package builder_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/client"
	"kloop.dev/kloop/handler/predicate"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

// Widget is a user's CRD type, as kubebuilder would generate it.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Image string `json:"image"`
}

type WidgetStatus struct {
	State string `json:"state,omitempty"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return &out
}

var widgetGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

func widgetCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{
							"image": map[string]any{"type": "string"},
						}},
						"status": map[string]any{"type": "object", "properties": map[string]any{
							"state": map[string]any{"type": "string"},
						}},
					},
				}},
			}},
		},
	}}
}

// widgetReconciler keeps one Deployment per Widget, owned by it, and
// records the Widget's state only when it changes.
type widgetReconciler struct {
	c          *client.Client
	reconciles atomic.Int32
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.reconciles.Add(1)
	var w Widget
	if err := r.c.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	d := deployment(w.Name, nil)
	d.Spec.Template.Spec.Containers[0].Image = w.Spec.Image
	d.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: widgetGV.String(), Kind: "Widget", Name: w.Name, UID: w.UID, Controller: new(true),
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
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(widgetGV, &Widget{}, &WidgetList{})
	srv := apiservertest.NewServer(t, apiservertest.Options{})
	mgr, err := manager.New(srv.Config(), manager.Options{Cache: informer.FactoryOptions{Scheme: scheme}})
	if err != nil {
		t.Fatal(err)
	}
	c := mgr.Client()
	create(t, c, widgetCRD())
	r := &widgetReconciler{c: c}
	eventually(t, "the Widget kind to be served", func() bool {
		err := builder.ControllerManagedBy(mgr).
			For(&Widget{}, builder.WithPredicates(predicate.GenerationChanged{})).
			Owns(&appsv1.Deployment{}).
			Complete(r)
		if err != nil && !meta.IsNoMatchError(err) {
			t.Fatal(err)
		}
		return err == nil
	})
	start(t, mgr)

	w := &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1"}, Spec: WidgetSpec{Image: "nginx:1"}}
	create(t, c, w)
	key := client.ObjectKey{Namespace: ns, Name: "w1"}
	eventually(t, "the Widget's state", func() bool {
		var got Widget
		return c.Get(context.Background(), key, &got) == nil && got.Status.State == "ready"
	})
	var d appsv1.Deployment
	eventually(t, "the owned Deployment", func() bool { return c.Get(context.Background(), key, &d) == nil })
	if ref := metav1.GetControllerOf(&d); ref == nil || ref.UID != w.UID {
		t.Fatalf("the Deployment's controller is %v, want the Widget", ref)
	}
	// No hot loop: the status write does not wake the Widget again, so the
	// reconciles stop.
	eventually(t, "the controller to settle", func() bool {
		n := r.reconciles.Load()
		time.Sleep(200 * time.Millisecond)
		return r.reconciles.Load() == n
	})

	// Someone deletes the Deployment: Owns wakes the Widget, which recreates it.
	if err := c.Delete(context.Background(), &d); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment recreated", func() bool {
		var again appsv1.Deployment
		err := c.Uncached().Get(context.Background(), key, &again)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil && again.UID != d.UID
	})
}
