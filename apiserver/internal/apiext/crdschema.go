package apiext

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks ValidateCRD makes of each version's openAPIV3Schema: the
// OpenAPI restrictions kube-apiserver applies, valid patterns, and list and
// map types; then the compiled schema's structural rules (crdstructural.go).

// validateSchema validates one version's openAPIV3Schema: the standard
// OpenAPI restrictions, structurality, and defaults. It returns the compiled
// schema when it compiles.
func validateSchema(schema *JSONSchemaProps, statusEnabled bool, p *field.Path) (*Structural, field.ErrorList) {
	var errs field.ErrorList
	sp := p.Child("openAPIV3Schema")
	if statusEnabled {
		v := reflect.ValueOf(schema).Elem()
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				continue
			}
			name := v.Type().Field(i).Name
			if name == "Type" {
				if schema.Type != "object" {
					errs = append(errs, field.Invalid(p.Child("openAPIV3Schema.type"), schema.Type, `only "object" is allowed as the type at the root of the schema if the status subresource is enabled`))
					break
				}
				continue
			}
			if !slices.Contains(allowedAtRoot, name) {
				errs = append(errs, field.Invalid(sp, "", fmt.Sprintf("only %v fields are allowed at the root of the schema if the status subresource is enabled", allowedAtRoot)))
				break
			}
		}
	}
	if schema.Nullable {
		errs = append(errs, field.Forbidden(p.Child("openAPIV3Schema.nullable"), "nullable cannot be true at the root"))
	}
	// As kube-apiserver: structural errors, then default errors, then the
	// OpenAPI restrictions; errors compiling the schema only when nothing
	// else was found (they repeat the OpenAPI ones).
	var compiled *Structural
	var initErrs field.ErrorList
	if perrs := patternErrors(schema, sp); len(perrs) > 0 {
		errs = append(errs, perrs...)
	} else if st, err := NewStructural(schema); err != nil {
		initErrs = field.ErrorList{field.Invalid(sp, "", err.Error())}
	} else {
		compiled = st
		serrs := validateStructural(st.root, levelRoot, sp)
		sort.Slice(serrs, func(i, j int) bool { return serrs[i].Error() < serrs[j].Error() })
		if len(serrs) > 0 {
			errs = append(errs, serrs...)
		} else {
			errs = append(errs, validateDefaults(st.root, sp)...)
		}
	}
	errs = append(errs, validateOpenAPI(schema, sp, true, false, "")...)
	if len(errs) == 0 {
		errs = initErrs
	}
	return compiled, errs
}

// patternErrors reports every pattern that is not a valid Go regular
// expression, with kube-apiserver's message.
func patternErrors(s *JSONSchemaProps, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			errs = append(errs, field.Invalid(p.Child("pattern"), s.Pattern, fmt.Sprintf("must be a valid regular expression, but isn't: %v", err)))
		}
	}
	for _, k := range sortedKeys(s.Properties) {
		ps := s.Properties[k]
		errs = append(errs, patternErrors(&ps, p.Child("properties").Key(k))...)
	}
	if s.Items != nil {
		errs = append(errs, patternErrors(s.Items.Schema, p.Child("items"))...)
	}
	if s.AdditionalProperties != nil {
		errs = append(errs, patternErrors(s.AdditionalProperties.Schema, p.Child("additionalProperties"))...)
	}
	for i := range s.AllOf {
		errs = append(errs, patternErrors(&s.AllOf[i], p.Child("allOf").Index(i))...)
	}
	for i := range s.AnyOf {
		errs = append(errs, patternErrors(&s.AnyOf[i], p.Child("anyOf").Index(i))...)
	}
	for i := range s.OneOf {
		errs = append(errs, patternErrors(&s.OneOf[i], p.Child("oneOf").Index(i))...)
	}
	errs = append(errs, patternErrors(s.Not, p.Child("not"))...)
	return errs
}

// validateOpenAPI is kube-apiserver's ValidateCustomResourceDefinitionOpenAPISchema
// without CEL compilation. forbidDefaults is the reason defaults are
// forbidden here ("" when allowed).
func validateOpenAPI(s *JSONSchemaProps, p *field.Path, isRoot, insideMeta bool, forbidDefaults string) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Type != "" && !slices.Contains(openAPIV3Types, s.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type, openAPIV3Types))
	}
	if s.Default != nil && forbidDefaults != "" {
		errs = append(errs, field.Forbidden(p.Child("default"), "must not be set "+forbidDefaults))
	}
	if s.ID != "" {
		errs = append(errs, field.Forbidden(p.Child("id"), "id is not supported"))
	}
	if s.AdditionalItems != nil {
		errs = append(errs, field.Forbidden(p.Child("additionalItems"), "additionalItems is not supported"))
	}
	if len(s.PatternProperties) != 0 {
		errs = append(errs, field.Forbidden(p.Child("patternProperties"), "patternProperties is not supported"))
	}
	if len(s.Definitions) != 0 {
		errs = append(errs, field.Forbidden(p.Child("definitions"), "definitions is not supported"))
	}
	if s.Dependencies != nil {
		errs = append(errs, field.Forbidden(p.Child("dependencies"), "dependencies is not supported"))
	}
	if s.Ref != nil {
		errs = append(errs, field.Forbidden(p.Child("$ref"), "$ref is not supported"))
	}
	if s.Type == "null" {
		errs = append(errs, field.Forbidden(p.Child("type"), "type cannot be set to null, use nullable as an alternative"))
	}
	if s.Items != nil && len(s.Items.JSONSchemas) != 0 {
		errs = append(errs, field.Forbidden(p.Child("items"), "items must be a schema object and not an array"))
	}
	if insideMeta && s.XEmbeddedResource {
		errs = append(errs, field.Forbidden(p.Child("x-kubernetes-embedded-resource"), "must not be used inside of resource meta"))
	}
	if s.UniqueItems {
		errs = append(errs, field.Forbidden(p.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	if s.AdditionalProperties != nil {
		if len(s.Properties) != 0 && (!s.AdditionalProperties.Allows || s.AdditionalProperties.Schema != nil) {
			errs = append(errs, field.Forbidden(p.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
		}
		sub := forbidDefaults
		if insideMeta {
			sub = "inside additionalProperties applying to object metadata"
		}
		errs = append(errs, validateOpenAPI(s.AdditionalProperties.Schema, p.Child("additionalProperties"), false, insideMeta, sub)...)
	}
	for _, k := range sortedKeys(s.Properties) {
		ps := s.Properties[k]
		subMeta, sub := insideMeta, forbidDefaults
		if (isRoot || s.XEmbeddedResource) && metaField(k) {
			subMeta = true
			if isRoot {
				sub = "in top-level " + k
			}
		}
		errs = append(errs, validateOpenAPI(&ps, p.Child("properties").Key(k), false, subMeta, sub)...)
	}
	errs = append(errs, validateOpenAPI(s.Not, p.Child("not"), false, insideMeta, forbidDefaults)...)
	for i := range s.AllOf {
		errs = append(errs, validateOpenAPI(&s.AllOf[i], p.Child("allOf").Index(i), false, insideMeta, forbidDefaults)...)
	}
	for i := range s.OneOf {
		errs = append(errs, validateOpenAPI(&s.OneOf[i], p.Child("oneOf").Index(i), false, insideMeta, forbidDefaults)...)
	}
	for i := range s.AnyOf {
		errs = append(errs, validateOpenAPI(&s.AnyOf[i], p.Child("anyOf").Index(i), false, insideMeta, forbidDefaults)...)
	}
	if s.Items != nil {
		errs = append(errs, validateOpenAPI(s.Items.Schema, p.Child("items"), false, insideMeta, forbidDefaults)...)
	}
	if s.XPreserveUnknownFields != nil && !*s.XPreserveUnknownFields {
		errs = append(errs, field.Invalid(p.Child("x-kubernetes-preserve-unknown-fields"), *s.XPreserveUnknownFields, "must be true or undefined"))
	}
	errs = append(errs, validateListAndMapTypes(s, p)...)
	for i, r := range s.XValidations {
		rp := p.Child("x-kubernetes-validations").Index(i)
		if strings.TrimSpace(r.Rule) == "" {
			errs = append(errs, field.Required(rp.Child("rule"), "rule is not specified"))
		}
		if r.Message != "" && strings.TrimSpace(r.Message) == "" {
			errs = append(errs, field.Invalid(rp.Child("message"), r.Message, "must be non-empty if specified"))
		} else if strings.Contains(r.Message, "\n") {
			errs = append(errs, field.Invalid(rp.Child("message"), r.Message, "must not contain line breaks"))
		} else if r.Message == "" && strings.Contains(r.Rule, "\n") {
			errs = append(errs, field.Required(rp.Child("message"), "message must be specified if rule contains line breaks"))
		}
		if r.Reason != nil && !slices.Contains([]string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}, *r.Reason) {
			errs = append(errs, field.NotSupported(rp.Child("reason"), *r.Reason, []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}))
		}
	}
	return errs
}

func validateListAndMapTypes(s *JSONSchemaProps, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.XMapType != nil {
		if s.Type != "object" {
			if s.Type == "" {
				errs = append(errs, field.Required(p.Child("type"), "must be object if x-kubernetes-map-type is specified"))
			} else {
				errs = append(errs, field.Invalid(p.Child("type"), s.Type, "must be object if x-kubernetes-map-type is specified"))
			}
		}
		if *s.XMapType != "atomic" && *s.XMapType != "granular" {
			errs = append(errs, field.NotSupported(p.Child("x-kubernetes-map-type"), *s.XMapType, []string{"atomic", "granular"}))
		}
	}
	if s.XListType != nil {
		if s.Type != "array" {
			if s.Type == "" {
				errs = append(errs, field.Required(p.Child("type"), "must be array if x-kubernetes-list-type is specified"))
			} else {
				errs = append(errs, field.Invalid(p.Child("type"), s.Type, "must be array if x-kubernetes-list-type is specified"))
			}
		} else if *s.XListType == "set" && s.Items != nil && s.Items.Schema != nil {
			is := s.Items.Schema
			if is.XListType != nil && *is.XListType != "atomic" {
				errs = append(errs, field.Invalid(p.Child("items").Child("x-kubernetes-list-type"), is.XListType, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
			if is.XMapType != nil && *is.XMapType != "atomic" {
				errs = append(errs, field.Invalid(p.Child("items").Child("x-kubernetes-map-type"), is.XListType, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
		}
		if lt := *s.XListType; lt != "atomic" && lt != "set" && lt != "map" {
			errs = append(errs, field.NotSupported(p.Child("x-kubernetes-list-type"), lt, []string{"atomic", "set", "map"}))
		}
	}
	if len(s.XListMapKeys) > 0 {
		if s.XListType == nil {
			errs = append(errs, field.Required(p.Child("x-kubernetes-list-type"), "must be map if x-kubernetes-list-map-keys is non-empty"))
		} else if *s.XListType != "map" {
			errs = append(errs, field.Invalid(p.Child("x-kubernetes-list-type"), *s.XListType, "must be map if x-kubernetes-list-map-keys is non-empty"))
		}
	}
	if s.XListType != nil && *s.XListType == "map" {
		switch {
		case len(s.XListMapKeys) == 0:
			errs = append(errs, field.Required(p.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
		case s.Items == nil:
			errs = append(errs, field.Required(p.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
		case s.Items.Schema == nil:
			errs = append(errs, field.Invalid(p.Child("items"), "", "must only have a single schema if x-kubernetes-list-type is map"))
		case s.Items.Schema.Type != "object":
			errs = append(errs, field.Invalid(p.Child("items").Child("type"), s.Items.Schema.Type, "must be object if parent array's x-kubernetes-list-type is map"))
		default:
			keys := map[string]bool{}
			for _, k := range s.XListMapKeys {
				ks, ok := s.Items.Schema.Properties[k]
				if !ok {
					errs = append(errs, field.Invalid(p.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "entries must all be names of item properties"))
					break
				}
				if ks.Type != "string" && ks.Type != "integer" && ks.Type != "number" && ks.Type != "boolean" {
					errs = append(errs, field.Invalid(p.Child("items").Child("properties").Key(k).Child("type"), ks.Type, "must be a scalar type if parent array's x-kubernetes-list-type is map"))
				}
				if keys[k] {
					errs = append(errs, field.Invalid(p.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "must not contain duplicate entries"))
				}
				keys[k] = true
				if ks.Default == nil && !slices.Contains(s.Items.Schema.Required, k) {
					errs = append(errs, field.Required(p.Child("items").Child("properties").Key(k).Child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))
				}
				if ks.Nullable {
					errs = append(errs, field.Forbidden(p.Child("items").Child("properties").Key(k).Child("nullable"), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
				}
			}
		}
	}
	if s.XListType != nil && (*s.XListType == "set" || *s.XListType == "map") && s.Items != nil && s.Items.Schema != nil && s.Items.Schema.Nullable {
		errs = append(errs, field.Forbidden(p.Child("items").Child("nullable"), "cannot be nullable when x-kubernetes-list-type is "+*s.XListType))
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
