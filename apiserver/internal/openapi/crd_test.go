package openapi

import (
	"encoding/json"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func schemaJSON(t *testing.T, js string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var s apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestCRDSchemaTransforms(t *testing.T) {
	tests := []struct {
		name string
		v3   bool
		in   string
		path []string // property path below the root
		want string   // JSON of the node at path
	}{
		{"v3 int-or-string unfolded", true, `{"type":"object","properties":{"p":{"x-kubernetes-int-or-string":true}}}`, []string{"p"},
			`{"anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true}`},
		{"v3 int-or-string with other anyOf", true, `{"type":"object","properties":{"p":{"x-kubernetes-int-or-string":true,"anyOf":[{"maxLength":3},{"minimum":1}]}}}`, []string{"p"},
			`{"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]}],"anyOf":[{"maxLength":3},{"minimum":1}],"x-kubernetes-int-or-string":true}`},
		{"v3 keeps defaults and nullable", true, `{"type":"object","properties":{"p":{"type":"string","default":"x","nullable":true}}}`, []string{"p"},
			`{"default":"x","nullable":true,"type":"string"}`},
		{"v2 drops junctors and defaults", false, `{"type":"object","properties":{"p":{"type":"string","default":"x","anyOf":[{"maxLength":1}],"not":{"enum":["a"]}}}}`, []string{"p"},
			`{"type":"string"}`},
		{"v2 nullable becomes untyped", false, `{"type":"object","properties":{"p":{"type":"object","nullable":true,"properties":{"a":{"type":"string"}}}}}`, []string{"p"},
			`{}`},
		{"v2 nullable not required", false, `{"type":"object","properties":{"s":{"type":"object","required":["a","b"],"properties":{"a":{"type":"string","nullable":true},"b":{"type":"string"}}}}}`, []string{"s"},
			`{"properties":{"a":{},"b":{"type":"string"}},"required":["b"],"type":"object"}`},
		{"v2 preserve unknown fields untyped", false, `{"type":"object","properties":{"p":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string"}}}}}`, []string{"p"},
			`{"x-kubernetes-preserve-unknown-fields":true}`},
		{"v3 embedded resource completed", true, `{"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}`, []string{"t", "properties", "kind", "type"},
			`"string"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGen(tt.v3)
			m, err := g.crdSchema(schemaJSON(t, tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var node any = m
			for i, k := range tt.path {
				mm, _ := node.(map[string]any)
				if i == 0 {
					mm, _ = mm["properties"].(map[string]any)
				}
				node = mm[k]
			}
			var want any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(node, want) {
				got, _ := json.Marshal(node)
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			props := m["properties"].(map[string]any)
			if props["apiVersion"] == nil || props["kind"] == nil || props["metadata"] == nil {
				t.Fatal("TypeMeta/ObjectMeta not added at the root")
			}
		})
	}
	// A root with x-kubernetes-preserve-unknown-fields is a bare object in v2.
	g := newGen(false)
	m, err := g.crdSchema(schemaJSON(t, `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`))
	if err != nil || !reflect.DeepEqual(m, map[string]any{"type": "object"}) {
		t.Fatalf("v2 preserve root %v %v", m, err)
	}
}
