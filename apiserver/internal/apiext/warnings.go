package apiext

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Warnings lists what kloop accepts in crd but does not enforce, one message
// per place, for the Warning headers of the create or update response:
// x-kubernetes-validations (CEL) rules.
func Warnings(crd *CustomResourceDefinition) []string {
	if crd == nil {
		return nil
	}
	var out []string
	for i, v := range crd.Spec.Versions {
		if v.Schema == nil {
			continue
		}
		p := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		celRules(v.Schema.OpenAPIV3Schema, p, &out)
	}
	return out
}

func celRules(s *JSONSchemaProps, p *field.Path, out *[]string) {
	if s == nil {
		return
	}
	if len(s.XValidations) > 0 {
		*out = append(*out, p.Child("x-kubernetes-validations").String()+": CEL validation rules are stored but not enforced by kloop")
	}
	for _, k := range sortedKeys(s.Properties) {
		ps := s.Properties[k]
		celRules(&ps, p.Child("properties").Key(k), out)
	}
	if s.Items != nil {
		celRules(s.Items.Schema, p.Child("items"), out)
	}
	if s.AdditionalProperties != nil {
		celRules(s.AdditionalProperties.Schema, p.Child("additionalProperties"), out)
	}
	for i := range s.AllOf {
		celRules(&s.AllOf[i], p.Child("allOf").Index(i), out)
	}
}
