package openapi

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type testInner struct {
	Value string `json:"value"`
}

type testNode struct {
	Children []testNode `json:"children,omitempty"`
}

type testKind struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	When   metav1.Time           `json:"when,omitempty"`
	Size   resource.Quantity     `json:"size"`
	Port   intstr.IntOrString    `json:"port,omitempty"`
	Ptr    *int32                `json:"ptr,omitempty"`
	Count  int64                 `json:"count"`
	Ratio  float64               `json:"ratio,omitempty"`
	Flag   bool                  `json:"flag,omitempty"`
	Labels map[string]string     `json:"labels,omitempty"`
	Inners []testInner           `json:"inners,omitempty" patchStrategy:"merge" patchMergeKey:"value"`
	ByName map[string]*testInner `json:"byName,omitempty"`
	Data   []byte                `json:"data,omitempty"`
	Raw    runtime.RawExtension  `json:"raw,omitempty"`
	Any    any                   `json:"any,omitempty"`
	Tree   *testNode             `json:"tree,omitempty"`
	Phase  corev1.PodPhase       `json:"phase,omitempty"`
	Anon   struct {
		X int `json:"x"`
	} `json:"anon"`
	Skipped  string `json:"-"`
	internal string
}

func TestReflectedSchema(t *testing.T) {
	for _, v3 := range []bool{false, true} {
		g := newGen(v3)
		name := g.define(reflect.TypeFor[testKind]())
		ref := func(n string) string { return g.refPrefix() + n }
		// refOf digs the $ref out of {"$ref"} or {"allOf":[{"$ref"}]}.
		refOf := func(s any) string {
			m, _ := s.(map[string]any)
			if r, ok := m["$ref"].(string); ok {
				return r
			}
			if all, ok := m["allOf"].([]any); ok && len(all) == 1 {
				r, _ := all[0].(map[string]any)["$ref"].(string)
				return r
			}
			return ""
		}
		def := g.defs[name]
		props := def["properties"].(map[string]any)
		prop := func(k string) map[string]any { return props[k].(map[string]any) }
		tests := []struct {
			name      string
			got, want any
		}{
			{"name", name, "dev.kloop.kloop.apiserver.internal.openapi.testKind"},
			{"inline TypeMeta", prop("apiVersion")["type"], "string"},
			{"kind description", prop("kind")["description"], metav1.TypeMeta{}.SwaggerDoc()["kind"]},
			{"metadata ref", refOf(prop("metadata")), ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")},
			{"time ref", refOf(prop("when")), ref("io.k8s.apimachinery.pkg.apis.meta.v1.Time")},
			{"time def", g.defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"], "date-time"},
			{"quantity int-or-string", g.defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["x-kubernetes-int-or-string"], true},
			{"intorstr int-or-string", g.defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["x-kubernetes-int-or-string"], true},
			{"intorstr format", g.defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"], "int-or-string"},
			{"pointer", prop("ptr")["format"], "int32"},
			{"int64", prop("count")["format"], "int64"},
			{"float", prop("ratio")["type"], "number"},
			{"bool", prop("flag")["type"], "boolean"},
			{"map", prop("labels")["additionalProperties"], map[string]any{"type": "string"}},
			{"slice of structs", refOf(prop("inners")["items"]), ref("dev.kloop.kloop.apiserver.internal.openapi.testInner")},
			{"patch strategy", prop("inners")["x-kubernetes-patch-strategy"], "merge"},
			{"patch merge key", prop("inners")["x-kubernetes-patch-merge-key"], "value"},
			{"map of pointers", refOf(prop("byName")["additionalProperties"]), ref("dev.kloop.kloop.apiserver.internal.openapi.testInner")},
			{"bytes", prop("data")["format"], "byte"},
			{"raw extension", g.defs["io.k8s.apimachinery.pkg.runtime.RawExtension"]["type"], "object"},
			{"recursive type", refOf(g.defs["dev.kloop.kloop.apiserver.internal.openapi.testNode"]["properties"].(map[string]any)["children"].(map[string]any)["items"]), ref("dev.kloop.kloop.apiserver.internal.openapi.testNode")},
			{"named string", prop("phase")["type"], "string"},
			{"anonymous struct inline", prop("anon")["properties"], map[string]any{"x": map[string]any{"type": "integer", "format": "int32"}}},
			{"skipped", props["Skipped"] == nil && props["-"] == nil && props["internal"] == nil, true},
			{"required", def["required"], []string{"size", "count", "anon"}},
			{"fieldsV1 object", g.defs["io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"]["type"], "object"},
		}
		for _, tt := range tests {
			t.Run(map[bool]string{false: "v2/", true: "v3/"}[v3]+tt.name, func(t *testing.T) {
				if !reflect.DeepEqual(tt.got, tt.want) {
					t.Fatalf("got %#v, want %#v", tt.got, tt.want)
				}
			})
		}
		if v3 {
			oneOf, _ := g.defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"].([]any)
			if len(oneOf) != 2 {
				t.Fatalf("v3 Quantity oneOf %v", oneOf)
			}
		}
		if _, err := json.Marshal(g.defs); err != nil {
			t.Fatal(err)
		}
	}
}

func TestModelNames(t *testing.T) {
	tests := []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[corev1.Pod](), "io.k8s.api.core.v1.Pod"},
		{reflect.TypeFor[metav1.ObjectMeta](), "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
		{reflect.TypeFor[apiextensionsv1.CustomResourceDefinition](), "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"},
		{reflect.TypeFor[apiextensionsv1.JSONSchemaProps](), "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"},
	}
	for _, tt := range tests {
		if got := modelName(tt.t); got != tt.want {
			t.Errorf("modelName(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
	if got := gvkModelName("example.com", "v1", "Widget"); got != "com.example.v1.Widget" {
		t.Errorf("gvkModelName = %q", got)
	}
}

func TestReflectedCustomJSONTypes(t *testing.T) {
	g := newGen(true)
	g.define(reflect.TypeFor[apiextensionsv1.CustomResourceDefinition]())
	prefix := "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
	for _, n := range []string{"JSON", "JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool", "JSONSchemaPropsOrStringArray"} {
		d, ok := g.defs[prefix+n]
		if !ok {
			t.Fatalf("%s not defined", n)
		}
		if d["type"] != nil || d["properties"] != nil {
			t.Errorf("%s published with Go fields: %v", n, d)
		}
	}
	props := g.defs[prefix+"JSONSchemaProps"]["properties"].(map[string]any)
	for _, k := range []string{"x-kubernetes-preserve-unknown-fields", "$ref", "default", "items", "additionalProperties"} {
		if props[k] == nil {
			t.Errorf("JSONSchemaProps lacks %q", k)
		}
	}
}
