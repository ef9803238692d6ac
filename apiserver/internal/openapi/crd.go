package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	objectMetaName = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	listMetaName   = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
)

var (
	typeMetaDocs          = metav1.TypeMeta{}.SwaggerDoc()
	partialMetaDocs       = metav1.PartialObjectMetadata{}.SwaggerDoc()
	partialMetaListDocs   = metav1.PartialObjectMetadataList{}.SwaggerDoc()
	embeddedAPIVersionDoc = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	embeddedKindDoc       = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)

// crdSchema builds the published schema of one custom resource version the
// way kube-apiserver's CRD OpenAPI builder does: the structural schema with
// x-kubernetes-int-or-string unfolded, metadata as a reference to ObjectMeta,
// apiVersion and kind from TypeMeta, embedded resources completed; for v2
// additionally the OpenAPI-v2 restrictions (no junctors, no nullable, no
// defaults, preserve-unknown-fields nodes left untyped).
func (g *gen) crdSchema(s *apiextensionsv1.JSONSchemaProps) (map[string]any, error) {
	if s == nil {
		return map[string]any{"type": "object"}, nil
	}
	c := s.DeepCopy()
	if !g.v3 && c.XPreserveUnknownFields != nil && *c.XPreserveUnknownFields {
		return map[string]any{"type": "object"}, nil
	}
	unfold(c)
	if !g.v3 {
		toV2(c)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("marshalling schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("unmarshalling schema: %w", err)
	}
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		m["properties"] = props
	}
	props["metadata"] = g.ref(g.define(reflect.TypeFor[metav1.ObjectMeta]()), partialMetaDocs["metadata"])
	props["apiVersion"] = map[string]any{"type": "string", "description": typeMetaDocs["apiVersion"]}
	props["kind"] = map[string]any{"type": "string", "description": typeMetaDocs["kind"]}
	g.addEmbedded(m, true)
	return m, nil
}

// addEmbedded adds apiVersion, kind and metadata to every
// x-kubernetes-embedded-resource node below m.
func (g *gen) addEmbedded(m map[string]any, root bool) {
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			if root && (k == "metadata" || k == "apiVersion" || k == "kind") {
				continue
			}
			if vm, ok := v.(map[string]any); ok {
				g.addEmbedded(vm, false)
			}
		}
	}
	if it, ok := m["items"].(map[string]any); ok {
		g.addEmbedded(it, false)
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		g.addEmbedded(ap, false)
	}
	if root {
		return
	}
	if p, _ := m["x-kubernetes-preserve-unknown-fields"].(bool); p && !g.v3 {
		return
	}
	if e, _ := m["x-kubernetes-embedded-resource"].(bool); !e {
		return
	}
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		m["properties"] = props
	}
	props["apiVersion"] = map[string]any{"type": "string", "description": embeddedAPIVersionDoc}
	props["kind"] = map[string]any{"type": "string", "description": embeddedKindDoc}
	props["metadata"] = g.ref(g.define(reflect.TypeFor[metav1.ObjectMeta]()), partialMetaDocs["metadata"])
	req, _ := m["required"].([]any)
	for _, k := range []string{"kind", "apiVersion"} {
		if !slices.Contains(req, any(k)) {
			req = append(req, k)
		}
	}
	m["required"] = req
}

// unfold makes x-kubernetes-int-or-string explicit as kube-apiserver does:
// anyOf [integer, string], or a leading allOf entry when anyOf is taken.
func unfold(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	for k, p := range s.Properties {
		unfold(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		unfold(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		unfold(s.AdditionalProperties.Schema)
	}
	if !s.XIntOrString {
		return
	}
	intOrString := []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}
	isPattern := func(a []apiextensionsv1.JSONSchemaProps) bool {
		return len(a) == 2 && a[0].Type == "integer" && a[1].Type == "string"
	}
	if isPattern(s.AnyOf) || (len(s.AllOf) > 0 && isPattern(s.AllOf[0].AnyOf)) {
		return
	}
	if s.AnyOf == nil {
		s.AnyOf = intOrString
		return
	}
	s.AllOf = append([]apiextensionsv1.JSONSchemaProps{{AnyOf: intOrString}}, s.AllOf...)
}

// toV2 applies kube-apiserver's ToStructuralOpenAPIV2 and drops defaults.
func toV2(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.AllOf, s.OneOf, s.AnyOf, s.Not = nil, nil, nil, nil
	s.Default = nil
	preserve := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	if s.Nullable {
		s.Type, s.Nullable = "", false
		s.Items, s.Properties = nil, nil
	}
	if preserve {
		s.Items, s.Properties = nil, nil
	}
	if s.Items == nil && s.Type == "array" {
		s.Type = ""
	}
	if preserve && s.Type == "object" {
		s.Type = ""
	}
	for k, p := range s.Properties {
		if p.Nullable {
			s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == k })
		}
		toV2(&p)
		s.Properties[k] = p
	}
	if len(s.Required) == 0 {
		s.Required = nil
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		if s.AdditionalProperties.Schema.Nullable {
			s.Required = nil
		}
		toV2(s.AdditionalProperties.Schema)
	}
	if s.Items != nil {
		toV2(s.Items.Schema)
	}
}
