package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"

	"kloop.dev/kloop/apiserver/internal/apiext"
)

// CEL validation of custom resources: the x-kubernetes-validations rules
// of a CRD version's schema, evaluated on every write of its objects by
// kube-apiserver's own evaluator (k8s.io/apiextensions-apiserver's
// schema/cel, on Kubernetes' CEL libraries and cost limits), after the
// schema's validation and only when it found no error that blocks them,
// with transition rules (oldSelf) and ratcheting on updates, as
// kube-apiserver's custom resource strategy runs it.

// celRules holds the compiled rules of one CRD version, built at the
// first write that needs them.
type celRules struct {
	once       sync.Once
	structural *structuralschema.Structural
	validator  *cel.Validator // nil: no rules
	err        error
}

// build compiles the rules of props.
func (c *celRules) build(props *apiext.JSONSchemaProps) {
	c.once.Do(func() {
		if props == nil || !hasCELRules(props) {
			return
		}
		b, err := json.Marshal(props)
		if err != nil {
			c.err = err
			return
		}
		var v1 apiextensionsv1.JSONSchemaProps
		if err := json.Unmarshal(b, &v1); err != nil {
			c.err = err
			return
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
			c.err = err
			return
		}
		if c.structural, c.err = structuralschema.NewStructural(&internal); c.err != nil {
			return
		}
		c.validator = cel.NewValidator(c.structural, true, celconfig.PerCallLimit)
	})
}

// hasCELRules reports whether a schema has x-kubernetes-validations
// anywhere, cheaply (its JSON).
func hasCELRules(props *apiext.JSONSchemaProps) bool {
	b, err := json.Marshal(props)
	return err == nil && bytes.Contains(b, []byte(`"x-kubernetes-validations"`))
}

// validate evaluates the rules on obj (old: the object it replaces, nil on
// create), given the errors the schema's validation found.
func (c *celRules) validate(props *apiext.JSONSchemaProps, obj, old map[string]any, errs field.ErrorList) field.ErrorList {
	c.build(props)
	if c.err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("compiling the x-kubernetes-validations rules: %w", c.err))}
	}
	if c.validator == nil {
		return nil
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")}
		}
	}
	var opts []cel.Option
	var oldObj any
	if old != nil {
		oldObj = old
		opts = append(opts, cel.WithRatcheting(common.NewCorrelatedObject(obj, old, &model.Structural{Structural: c.structural})))
	}
	out, _ := c.validator.Validate(context.Background(), nil, c.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return out
}

// celRuleErrors are the errors kube-apiserver's CRD validation finds in
// the x-kubernetes-validations rules of a CRD (stored form): rules and
// messageExpressions that do not compile against their schema, at the
// paths and with the texts kube-apiserver gives (the internal form's:
// spec.validation.openAPIV3Schema when every version has the same schema).
// A CRD that does not convert has none (its other errors say why).
func celRuleErrors(obj map[string]any) field.ErrorList {
	if !bytesContainRules(obj) {
		return nil
	}
	crd, ok := internalCRD(obj)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	check := func(v *apiextensions.CustomResourceValidation, p *field.Path) {
		if v == nil || v.OpenAPIV3Schema == nil {
			return
		}
		s, err := structuralschema.NewStructural(v.OpenAPIV3Schema)
		if err != nil {
			return // not structural: the other checks report it
		}
		errs = append(errs, compileRules(s, model.SchemaDeclType(s, true), p.Child("openAPIV3Schema"))...)
	}
	check(crd.Spec.Validation, field.NewPath("spec", "validation"))
	for i := range crd.Spec.Versions {
		check(crd.Spec.Versions[i].Schema, field.NewPath("spec", "versions").Index(i).Child("schema"))
	}
	return errs
}

// compileRules compiles the rules of s and of what it holds.
func compileRules(s *structuralschema.Structural, declType *apiservercel.DeclType, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if len(s.XValidations) > 0 && declType != nil {
		results, err := cel.Compile(s, declType, celconfig.PerCallLimit, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.NewExpressionsEnvLoader())
		if err != nil {
			errs = append(errs, field.InternalError(p.Child("x-kubernetes-validations"), err))
		}
		for i, r := range results {
			rp := p.Child("x-kubernetes-validations").Index(i)
			// The rule as kube-apiserver quotes it: its internal type.
			var rule apiextensions.ValidationRule
			if i < len(s.XValidations) {
				_ = apiextensionsv1.Convert_v1_ValidationRule_To_apiextensions_ValidationRule(&s.XValidations[i], &rule, nil)
			}
			if r.Error != nil {
				errs = append(errs, field.Invalid(rp.Child("rule"), rule, r.Error.Detail))
			}
			if r.MessageExpressionError != nil {
				errs = append(errs, field.Invalid(rp.Child("messageExpression"), rule, r.MessageExpressionError.Detail))
			}
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		prop := s.Properties[name]
		var t *apiservercel.DeclType
		if declType != nil {
			if f, ok := declType.Fields[name]; ok {
				t = f.Type
			}
		}
		errs = append(errs, compileRules(&prop, t, p.Child("properties").Key(name))...)
	}
	var elem *apiservercel.DeclType
	if declType != nil {
		elem = declType.ElemType
	}
	errs = append(errs, compileRules(s.Items, elem, p.Child("items"))...)
	if s.AdditionalProperties != nil {
		errs = append(errs, compileRules(s.AdditionalProperties.Structural, elem, p.Child("additionalProperties"))...)
	}
	return errs
}

func bytesContainRules(obj map[string]any) bool {
	b, err := json.Marshal(obj["spec"])
	return err == nil && bytes.Contains(b, []byte(`"x-kubernetes-validations"`))
}

// internalCRD converts a CRD (stored form) to apiextensions' internal type.
func internalCRD(obj map[string]any) (*apiextensions.CustomResourceDefinition, bool) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(b, &v1); err != nil {
		return nil, false
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &internal, nil); err != nil {
		return nil, false
	}
	return &internal, true
}
