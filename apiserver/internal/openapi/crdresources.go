package openapi

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResourcesForCRD describes every served version of crd as a Resource: its
// scope, list kind, status and scale subresources and the version's schema.
// Versions with served: false are left out, as kube-apiserver does.
func ResourcesForCRD(crd *apiextensionsv1.CustomResourceDefinition) []Resource {
	if crd == nil {
		return nil
	}
	var out []Resource
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		r := Resource{
			GVK:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind},
			ListKind:   crd.Spec.Names.ListKind,
			Plural:     crd.Spec.Names.Plural,
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		}
		if v.Schema != nil {
			r.Schema = v.Schema.OpenAPIV3Schema
		}
		if s := v.Subresources; s != nil {
			if s.Status != nil {
				r.Subresources = append(r.Subresources, "status")
			}
			if s.Scale != nil {
				r.Subresources = append(r.Subresources, "scale")
			}
		}
		out = append(out, r)
	}
	return out
}
