package testcrd

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the Widget's group and version.
var GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1"}

// Widget is a user's CRD type.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec"`
	Status            WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is what the user wants.
type WidgetSpec struct {
	Color string `json:"color,omitempty"`
	Size  int64  `json:"size,omitempty"`
	Image string `json:"image,omitempty"`
}

// WidgetStatus is what a controller observed.
type WidgetStatus struct {
	State string `json:"state,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return &out
}

// AddToScheme registers Widget and WidgetList under GroupVersion.
func AddToScheme(s *runtime.Scheme) {
	s.AddKnownTypes(GroupVersion, &Widget{}, &WidgetList{})
}

// CRD returns the Widgets' CustomResourceDefinition, ready to create.
func CRD() *unstructured.Unstructured {
	str := map[string]any{"type": "string"}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": GroupVersion.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": GroupVersion.Version, "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{
							"color": str, "image": str, "size": map[string]any{"type": "integer"},
						}},
						"status": map[string]any{"type": "object", "properties": map[string]any{"state": str}},
					},
				}},
			}},
		},
	}}
}
