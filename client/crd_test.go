package client

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/informer"
)

// Widget is a user's CRD type, as kubebuilder would generate it.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Color string `json:"color"`
	Size  int64  `json:"size,omitempty"`
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
							"color": map[string]any{"type": "string"},
							"size":  map[string]any{"type": "integer"},
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

// A user's CRD struct works end to end: typed informer from the factory,
// cached reads, writes and the status subresource.
func TestCRDTypes(t *testing.T) {
	ctx := timeout(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(widgetGV, &Widget{}, &WidgetList{})
	e := newEnvScheme(t, scheme)
	c := e.c
	if err := c.Create(ctx, widgetCRD()); err != nil {
		t.Fatal(err)
	}
	w := &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w1"}, Spec: WidgetSpec{Color: "red", Size: 3}}
	eventually(t, ctx, "the CRD served", func() error {
		err := c.Create(ctx, w)
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return err
		}
		if err != nil {
			t.Fatal(err)
		}
		return nil
	})
	if w.UID == "" || w.Kind != "Widget" {
		t.Fatalf("created %+v", w)
	}
	w.Status.State = "ready"
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}

	widgets, err := informer.InformerFor[*Widget](e.factory, informer.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if err := widgets.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	var got Widget
	eventually(t, ctx, "the status in the cache", func() error {
		if err := c.Get(ctx, KeyOf(w), &got); err != nil {
			return err
		}
		if got.Status.State != "ready" {
			return apierrors.NewConflict(schema.GroupResource{}, "", nil)
		}
		return nil
	})
	if got.Spec.Color != "red" || got.Spec.Size != 3 {
		t.Fatalf("cached %+v", got)
	}
	if n := e.factory.NumInformers(); n != 1 {
		t.Fatalf("%d informers: the client and InformerFor should share one", n)
	}
	var list WidgetList
	if err := c.List(ctx, &list, InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "w1" || list.Items[0].Kind != "Widget" {
		t.Fatalf("list %+v", list.Items)
	}
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the delete in the cache", func() error {
		if _, ok := widgets.Get("default", "w1"); ok {
			return apierrors.NewConflict(schema.GroupResource{}, "", nil)
		}
		return nil
	})
}
