package openapi_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/openapi"
)

// A Builder publishes built-in kinds (by Go type) and custom resources (by
// schema); the v3 discovery document lists one document per group version.
func ExampleBuilder() {
	b, err := openapi.New(openapi.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = b.Set([]openapi.Resource{
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Plural: "pods", Namespaced: true,
			Type: reflect.TypeFor[corev1.Pod](), StrategicMergePatch: true},
		{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets",
			Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var disc struct {
		Paths map[string]any `json:"paths"`
	}
	_ = json.Unmarshal(b.V3Discovery().JSON, &disc)
	var keys []string
	for k := range disc.Paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println(keys)
	doc, _ := b.V3("example.com/v1")
	var v3 struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	_ = json.Unmarshal(doc.JSON, &v3)
	_, ok := v3.Components.Schemas["com.example.v1.Widget"]
	fmt.Println("com.example.v1.Widget:", ok)
	// Output:
	// [api/v1 apis/example.com/v1]
	// com.example.v1.Widget: true
}
