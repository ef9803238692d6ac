package testcrd

import (
	"encoding/base64"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/webhook/conversion"
)

// GroupVersionV1alpha1 is the Widget's older version.
var GroupVersionV1alpha1 = schema.GroupVersion{Group: "example.com", Version: "v1alpha1"}

// Hub makes Widget (v1) the hub of the Widget's versions
// (conversion.Hub).
func (*Widget) Hub() {}

// WidgetV1alpha1 is the Widget at v1alpha1, a spoke of v1: its spec
// spells color "colour".
type WidgetV1alpha1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV1alpha1Spec `json:"spec"`
	Status            WidgetStatus       `json:"status,omitempty"`
}

// WidgetV1alpha1Spec is the v1alpha1 spec.
type WidgetV1alpha1Spec struct {
	Colour string `json:"colour,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Image  string `json:"image,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (w *WidgetV1alpha1) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// WidgetV1alpha1List is a list of v1alpha1 Widgets.
type WidgetV1alpha1List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WidgetV1alpha1 `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *WidgetV1alpha1List) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]WidgetV1alpha1, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*WidgetV1alpha1)
	}
	return &out
}

// ConvertTo converts to the hub (v1).
func (w *WidgetV1alpha1) ConvertTo(dst conversion.Hub) error {
	hub, ok := dst.(*Widget)
	if !ok {
		return fmt.Errorf("testcrd: cannot convert to %T", dst)
	}
	w.ObjectMeta.DeepCopyInto(&hub.ObjectMeta)
	hub.Spec = WidgetSpec{Color: w.Spec.Colour, Size: w.Spec.Size, Image: w.Spec.Image}
	hub.Status = w.Status
	return nil
}

// ConvertFrom converts from the hub (v1).
func (w *WidgetV1alpha1) ConvertFrom(src conversion.Hub) error {
	hub, ok := src.(*Widget)
	if !ok {
		return fmt.Errorf("testcrd: cannot convert from %T", src)
	}
	hub.ObjectMeta.DeepCopyInto(&w.ObjectMeta)
	w.Spec = WidgetV1alpha1Spec{Colour: hub.Spec.Color, Size: hub.Spec.Size, Image: hub.Spec.Image}
	w.Status = hub.Status
	return nil
}

// AddVersionsToScheme registers both versions of the Widget (v1 and
// v1alpha1, and their lists).
func AddVersionsToScheme(s *runtime.Scheme) {
	AddToScheme(s)
	s.AddKnownTypeWithName(GroupVersionV1alpha1.WithKind("Widget"), &WidgetV1alpha1{})
	s.AddKnownTypeWithName(GroupVersionV1alpha1.WithKind("WidgetList"), &WidgetV1alpha1List{})
}

// VersionedCRD returns the Widgets' CustomResourceDefinition with two
// versions, v1alpha1 and v1 (stored), converted by the webhook at url
// (https, whose certificate caPEM verifies), ConversionReview v1.
func VersionedCRD(url string, caPEM []byte) *unstructured.Unstructured {
	crd := CRD()
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v1 := versions[0].(map[string]any)
	str := map[string]any{"type": "string"}
	v1alpha1 := map[string]any{
		"name": GroupVersionV1alpha1.Version, "served": true, "storage": false,
		"subresources": map[string]any{"status": map[string]any{}},
		"schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"spec": map[string]any{"type": "object", "properties": map[string]any{
					"colour": str, "image": str, "size": map[string]any{"type": "integer"},
				}},
				"status": map[string]any{"type": "object", "properties": map[string]any{"state": str}},
			},
		}},
	}
	_ = unstructured.SetNestedSlice(crd.Object, []any{v1alpha1, v1}, "spec", "versions")
	_ = unstructured.SetNestedField(crd.Object, map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"clientConfig":             map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(caPEM)},
			"conversionReviewVersions": []any{"v1"},
		},
	}, "spec", "conversion")
	return crd
}
