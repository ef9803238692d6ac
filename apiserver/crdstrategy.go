package apiserver

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The CustomResourceDefinition kind's strategy: what kube-apiserver's CRD
// registry (k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition)
// does around a write, on the libraries it calls. A CRD is decoded into
// apiextensions.k8s.io/v1 with its defaults (SetObjectDefaults, as
// kube-apiserver's decoding applies them), converted to the internal type
// and validated by ValidateCustomResourceDefinition or
// ValidateCustomResourceDefinitionUpdate, which choose the options
// kube-apiserver runs with (structural schemas, pruned defaults, the CEL
// rules compiled, what an update ratchets). The registry package itself is
// not imported: it brings kube-apiserver's etcd storage with it (≈ 300
// packages); what its strategy adds is here.

// decodeCRD decodes a CRD (stored or served form) into
// apiextensions.k8s.io/v1, with the defaults kube-apiserver's decoding
// applies.
func decodeCRD(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := fromMap(obj, crd); err != nil {
		return nil, fmt.Errorf("decoding CustomResourceDefinition: %w", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	return crd, nil
}

// internalCRD converts a CRD to apiextensions' internal type, the one
// kube-apiserver validates.
func internalCRD(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, out, nil); err != nil {
		return nil, fmt.Errorf("converting CustomResourceDefinition: %w", err)
	}
	return out, nil
}

// decodeInternalCRD is decodeCRD, then internalCRD.
func decodeInternalCRD(obj map[string]any) (*apiextensions.CustomResourceDefinition, error) {
	crd, err := decodeCRD(obj)
	if err != nil {
		return nil, err
	}
	return internalCRD(crd)
}

// validateCRD validates a CRD (stored form) being created (old nil) or
// updated, as kube-apiserver's CRD strategies do: metadata included; an
// update of /status validates the metadata and the status alone.
func validateCRD(obj, old map[string]any, subresource string) field.ErrorList {
	crd, err := decodeInternalCRD(obj)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	if old == nil {
		return crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd)
	}
	prev, err := decodeInternalCRD(old)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	if subresource == "status" {
		return crdvalidation.ValidateUpdateCustomResourceDefinitionStatus(context.Background(), crd, prev)
	}
	return crdvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), crd, prev)
}

// crdWarnings are the warnings of a CRD's write (old nil on create), as
// kube-apiserver's CRD strategy gives them: formats it does not recognize
// and sets of objects or arrays in the schemas; an update warns only of
// those it brings.
func crdWarnings(obj, old map[string]any) []string {
	crd, err := decodeInternalCRD(obj)
	if err != nil {
		return nil
	}
	formats, sets := unrecognizedFormats(&crd.Spec), setWarnings(&crd.Spec)
	if old != nil {
		prev, err := decodeInternalCRD(old)
		if err != nil {
			return nil
		}
		known, warned := unrecognizedFormats(&prev.Spec), setWarnings(&prev.Spec)
		formats = slices.DeleteFunc(formats, func(f string) bool { return slices.Contains(known, f) })
		sets = slices.DeleteFunc(sets, func(w string) bool { return slices.Contains(warned, w) })
	}
	var out []string
	for _, f := range formats {
		out = append(out, fmt.Sprintf("unrecognized format %q", f))
	}
	return append(out, sets...)
}

// forEachSchema calls f on every schema of spec, each node of each.
func forEachSchema(spec *apiextensions.CustomResourceDefinitionSpec, f func(*apiextensions.JSONSchemaProps)) {
	walk := func(s *apiextensions.JSONSchemaProps) {
		crdvalidation.SchemaHas(s, func(s *apiextensions.JSONSchemaProps) bool {
			f(s)
			return false
		})
	}
	if spec.Validation != nil && spec.Validation.OpenAPIV3Schema != nil {
		walk(spec.Validation.OpenAPIV3Schema)
	}
	for _, v := range spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			walk(v.Schema.OpenAPIV3Schema)
		}
	}
}

// unrecognizedFormats lists the formats of crdSpec's schemas that
// kube-apiserver does not check, in order, once each per schema node.
func unrecognizedFormats(crdSpec *apiextensions.CustomResourceDefinitionSpec) []string {
	version := environment.DefaultCompatibilityVersion()
	var out []string
	forEachSchema(crdSpec, func(s *apiextensions.JSONSchemaProps) {
		if s.Format != "" {
			out = append(out, schemavalidation.GetUnrecognizedFormats(&spec.Schema{SchemaProps: spec.SchemaProps{Format: s.Format, Type: []string{s.Type}}}, version)...)
		}
	})
	return out
}

// setWarnings warns, once each, of lists of type set whose items are
// objects or arrays.
func setWarnings(spec *apiextensions.CustomResourceDefinitionSpec) []string {
	seen := sets.New[string]()
	forEachSchema(spec, func(s *apiextensions.JSONSchemaProps) {
		if s.XListType != nil && *s.XListType == "set" && s.Items != nil && s.Items.Schema != nil {
			switch s.Items.Schema.Type {
			case "object", "array":
				seen.Insert(fmt.Sprintf("x-kubernetes-list-type: set for items of type %q is not supported by server-side apply or CEL validation rules", s.Items.Schema.Type))
			}
		}
	})
	return sets.List(seen)
}
