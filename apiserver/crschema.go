package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/registry/rest"
)

// The schema work of a custom resource's writes, by kube-apiserver's own
// code (k8s.io/apiextensions-apiserver), wired as its custom resource
// handler and strategy wire it (pkg/apiserver/customresource_handler.go,
// pkg/registry/customresource/strategy.go, status_strategy.go,
// validator.go), whose registry package is not imported (it brings the
// etcd storage):
//
//   - decoding a body: unknown fields pruned (their paths for the
//     fieldValidation warnings or errors), nulls of non-nullable fields
//     without a default dropped, the metadata of embedded resources coerced,
//     the root's metadata read as an ObjectMeta, then the defaults applied
//     (unstructuredSchemaCoercer, unstructuredDefaulter);
//   - validating a write: the OpenAPI schema (kube-openapi's validator,
//     ratcheting unchanged values on updates), the scale subresource's
//     replicas, embedded resources' TypeMeta and ObjectMeta, list-type set
//     and map uniqueness (ratcheted), then the x-kubernetes-validations
//     rules unless an error blocks them; a write to /status validates only
//     the status.
//
// The root's metadata is validated by the server's generic checks (as the
// strategy's ValidateObjectMeta), the kind and apiVersion when the body is
// decoded.

// crSchema is the schema of one custom resource version, compiled at the
// first write that needs it (so that a CRD's create, and New with many
// CRDs, stay fast).
type crSchema struct {
	// props is the version's openAPIV3Schema; nil without one.
	props *apiextensionsv1.JSONSchemaProps

	once sync.Once
	// err is why the schema does not compile (a CRD kube-apiserver would
	// not have accepted, or one written before a rule of validation):
	// every write of the kind's objects fails with it, as kube-apiserver's
	// "the server could not properly serve the CR schema".
	err error
	// structural is the structural schema with its defaults pruned, as
	// kube-apiserver serves it; nil without a schema.
	structural *structuralschema.Structural
	// validator checks objects, statusValidator their status (nil when
	// the schema has no status property).
	validator, statusValidator schemavalidation.SchemaValidator
	// rules evaluates the x-kubernetes-validations rules; nil without any.
	rules *cel.Validator
}

// compile builds what the writes need, once.
func (c *crSchema) compile() error {
	c.once.Do(func() {
		if c.props == nil {
			return
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(c.props, internal, nil); err != nil {
			c.err = fmt.Errorf("converting the schema: %w", err)
			return
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			c.err = fmt.Errorf("the schema is not structural: %w", err)
			return
		}
		// NewStructural shares the defaults with internal: prune a copy.
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			c.err = fmt.Errorf("pruning the defaults: %w", err)
			return
		}
		if c.validator, _, err = schemavalidation.NewSchemaValidator(internal); err != nil {
			c.err = err
			return
		}
		if status, ok := internal.Properties["status"]; ok {
			if c.statusValidator, _, err = schemavalidation.NewSchemaValidator(&status); err != nil {
				c.err = err
				return
			}
		}
		c.structural = s
		if hasCELRules(c.props) {
			c.rules = cel.NewValidator(s, true, celconfig.PerCallLimit)
		}
	})
	return c.err
}

// decode does to a custom resource of this version (served form, its
// apiVersion and kind checked) what kube-apiserver's decoding of a request
// body does: it prunes the fields the schema does not know, drops the
// nulls of non-nullable fields without a default, coerces the metadata of
// embedded resources and reads the root's as an ObjectMeta, then applies
// the defaults. It returns the paths of the unknown fields it dropped, for
// the fieldValidation warnings or errors, sorted as kube-apiserver gives
// them; err is a body kube-apiserver cannot decode (400).
func (c *crSchema) decode(obj map[string]any) (unknown []string, err error) {
	if err := c.compile(); err != nil {
		return nil, schemaError(err)
	}
	kind, hasKind := obj["kind"]
	apiVersion, hasAPIVersion := obj["apiVersion"]
	meta, hasMeta, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, err
	}
	unknown = append(unknown, metaUnknown...)
	if c.structural != nil { // without a schema, kube-apiserver preserves unknown fields
		unknown = append(unknown, structuralpruning.PruneWithOptions(obj, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, c.structural)
		fieldErr, coerced := schemaobjectmeta.CoerceWithOptions(nil, obj, c.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
		if fieldErr != nil {
			return nil, fieldErr
		}
		unknown = append(unknown, coerced...)
	}
	if hasKind {
		obj["kind"] = kind
	}
	if hasAPIVersion {
		obj["apiVersion"] = apiVersion
	}
	if hasMeta {
		// In the same map: the callers hold it.
		m, _ := obj["metadata"].(map[string]any)
		if err := schemaobjectmeta.SetObjectMeta(obj, meta); err != nil {
			return nil, err
		}
		if fresh, ok := obj["metadata"].(map[string]any); ok && m != nil {
			clear(m)
			maps.Copy(m, fresh)
			obj["metadata"] = m
		}
	}
	if c.structural != nil {
		structuraldefaulting.Default(obj, c.structural)
	}
	return unknown, nil
}

// validate validates a custom resource of this version being created (old
// nil) or updated, through its main resource or its status subresource,
// as kube-apiserver's strategies do once the metadata is checked (prior:
// the errors found so far, which may keep the CEL rules from being
// evaluated). scale is the version's scale subresource, nil without one.
func (c *crSchema) validate(obj, old map[string]any, subresource string, scale *scaleInfo, prior field.ErrorList) field.ErrorList {
	if err := c.compile(); err != nil {
		return field.ErrorList{field.InternalError(nil, schemaError(err))}
	}
	var errs field.ErrorList
	var correlated *common.CorrelatedObject
	var opts []schemavalidation.ValidationOption
	var celOpts []cel.Option
	if old != nil {
		correlated = common.NewCorrelatedObject(obj, old, &model.Structural{Structural: c.structural})
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
	}
	switch {
	case subresource == "status":
		if status, ok := obj["status"]; ok {
			if c.structural != nil {
				opts = append(opts, schemavalidation.WithRatcheting(correlated.Key("status")))
			}
			errs = append(errs, schemavalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, old["status"], c.statusValidator, opts...)...)
		}
		if scale != nil {
			errs = append(errs, scale.checkStatus(obj)...)
		}
		if newErrs := listtype.ValidateListSetsAndMaps(nil, c.structural, obj); len(newErrs) > 0 {
			if oldErrs := listtype.ValidateListSetsAndMaps(nil, c.structural, old); len(oldErrs) == 0 {
				errs = append(errs, newErrs...)
			}
		}
	case old == nil:
		errs = append(errs, schemavalidation.ValidateCustomResource(nil, obj, c.validator)...)
		if scale != nil {
			errs = append(errs, scale.check(obj)...)
		}
		errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, c.structural, false)...)
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, c.structural, obj)...)
	default:
		opts = append(opts, schemavalidation.WithRatcheting(correlated))
		errs = append(errs, schemavalidation.ValidateCustomResourceUpdate(nil, obj, old, c.validator, opts...)...)
		if scale != nil {
			errs = append(errs, scale.check(obj)...)
		}
		errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, c.structural, false)...)
		if oldErrs := listtype.ValidateListSetsAndMaps(nil, c.structural, old); len(oldErrs) == 0 {
			errs = append(errs, listtype.ValidateListSetsAndMaps(nil, c.structural, obj)...)
		}
	}
	if c.rules != nil {
		if blocking(prior) || blocking(errs) {
			errs = append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		} else {
			var oldObj any
			if old != nil {
				oldObj = old
			}
			ruleErrs, _ := c.rules.Validate(context.Background(), nil, c.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, celOpts...)
			errs = append(errs, ruleErrs...)
		}
	}
	return errs
}

// hasCELRules reports whether a schema has x-kubernetes-validations
// anywhere, cheaply (its JSON).
func hasCELRules(props *apiextensionsv1.JSONSchemaProps) bool {
	b, err := json.Marshal(props)
	return err == nil && bytes.Contains(b, []byte(`"x-kubernetes-validations"`))
}

// schemaError is kube-apiserver's answer to a custom resource whose schema
// it cannot serve (500).
func schemaError(err error) error {
	return apierrors.NewInternalError(fmt.Errorf("the server could not properly serve the CR schema: %w", err))
}

// crDecodeError is the answer to a custom resource of k that decode
// refuses: kube-apiserver's 400 for a body it cannot decode.
func crDecodeError(k *kind, err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &decodeFailure{gvk: k.gvr.GroupVersion().WithKind(k.kind), target: k.kind, err: err}
}

// blocking reports whether errs hold an error that keeps kube-apiserver
// from evaluating the CEL rules: a wrong type, a missing required field, an
// unsupported enum value, too long or too many.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// crColumns is kube-apiserver's table convertor of a custom resource
// version's printer columns, or of its Age column without any. A column
// whose JSONPath does not parse (which CRD validation refuses) ends the
// columns there, as kube-apiserver's convertor does.
func crColumns(cols []apiextensionsv1.CustomResourceColumnDefinition) rest.TableConvertor {
	if len(cols) == 0 {
		cols = []apiextensionsv1.CustomResourceColumnDefinition{{
			Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
		}}
	}
	c, _ := tableconvertor.New(cols)
	return c
}

// columnDefinitions are the Table columns of the custom resource, Name
// first.
func (c *crdServing) columnDefinitions() []metav1.TableColumnDefinition {
	t, err := c.columns.ConvertToTable(context.Background(), &unstructured.UnstructuredList{}, nil)
	if err != nil {
		return nil
	}
	return t.ColumnDefinitions
}

// cells are the Table cells of one custom resource (served form).
func (c *crdServing) cells(obj map[string]any) ([]any, error) {
	t, err := c.columns.ConvertToTable(context.Background(), &unstructured.Unstructured{Object: obj}, nil)
	if err != nil {
		return nil, err
	}
	if len(t.Rows) != 1 {
		return nil, fmt.Errorf("table of one custom resource has %d rows", len(t.Rows))
	}
	return t.Rows[0].Cells, nil
}
