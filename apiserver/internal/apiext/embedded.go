package apiext

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEmbedded checks the TypeMeta and ObjectMeta of every
// x-kubernetes-embedded-resource value below the root, as kube-apiserver
// does: apiVersion and kind are required and well-formed, metadata must be a
// valid ObjectMeta (name optional).
func validateEmbedded(n *node, v any, p *field.Path, root bool, errs *field.ErrorList) {
	if n == nil {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if n.embedded && !root {
			*errs = append(*errs, validateEmbeddedResource(t, p)...)
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if c, ok := n.properties[k]; ok {
				validateEmbedded(c, t[k], p.Child(k), false, errs)
			} else if n.additional != nil {
				validateEmbedded(n.additional, t[k], p.Key(k), false, errs)
			}
		}
	case []any:
		for i, e := range t {
			validateEmbedded(n.items, e, p.Index(i), false, errs)
		}
	}
}

func validateEmbeddedResource(x map[string]any, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, ok := x["apiVersion"]; !ok {
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	}
	if _, ok := x["kind"]; !ok {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	}
	if v, ok := x["apiVersion"]; ok {
		switch s, isString := v.(string); {
		case !isString:
			errs = append(errs, field.Invalid(p.Child("apiVersion"), v, "must be a string"))
		case s == "":
			errs = append(errs, field.Invalid(p.Child("apiVersion"), s, "must not be empty"))
		default:
			if _, err := schema.ParseGroupVersion(s); err != nil {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), s, err.Error()))
			}
		}
	}
	if v, ok := x["kind"]; ok {
		switch s, isString := v.(string); {
		case !isString:
			errs = append(errs, field.Invalid(p.Child("kind"), v, "must be a string"))
		case s == "":
			errs = append(errs, field.Invalid(p.Child("kind"), s, "must not be empty"))
		default:
			if e := utilvalidation.IsDNS1035Label(strings.ToLower(s)); len(e) > 0 {
				errs = append(errs, field.Invalid(p.Child("kind"), s, "may have mixed case, but should otherwise match: "+strings.Join(e, ",")))
			}
		}
	}
	if v, ok := x["metadata"]; ok {
		var meta metav1.ObjectMeta
		raw, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(raw, &meta)
		}
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("metadata"), v, err.Error()))
		} else {
			if meta.Name == "" {
				meta.Name = "fakename" // a name is optional in embedded resources
			}
			errs = append(errs, apivalidation.ValidateObjectMeta(&meta, meta.Namespace != "", path.ValidatePathSegmentName, p.Child("metadata"))...)
		}
	}
	return errs
}
