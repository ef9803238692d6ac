package apiext

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"
)

// APIApprovedAnnotation must be set on CRDs of the protected groups
// (*.k8s.io, *.kubernetes.io).
const APIApprovedAnnotation = "api-approved.kubernetes.io"

// MaxSelectableFields is the maximum number of selectable fields per version.
const MaxSelectableFields = 8

var (
	printerColumnTypes   = []string{"boolean", "date", "integer", "number", "string"}
	printerColumnFormats = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
	openAPIV3Types       = []string{"array", "boolean", "integer", "number", "object", "string"}
	allowedAtRoot        = []string{"Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum", "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems", "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs", "Example", "XPreserveUnknownFields", "XValidations"}
)

// SetDefaults fills what kube-apiserver defaults on a CRD: names.singular
// (lowercase kind), names.listKind (kind + "List"), conversion strategy None,
// the webhook service port 443, and status.storedVersions (the storage
// version) when empty.
func SetDefaults(crd *CustomResourceDefinition) {
	if crd == nil {
		return
	}
	n := &crd.Spec.Names
	if n.Singular == "" {
		n.Singular = strings.ToLower(n.Kind)
	}
	if n.ListKind == "" && n.Kind != "" {
		n.ListKind = n.Kind + "List"
	}
	if crd.Spec.Conversion == nil {
		crd.Spec.Conversion = &CustomResourceConversion{Strategy: NoneConverter}
	}
	if w := crd.Spec.Conversion.Webhook; w != nil && w.ClientConfig != nil && w.ClientConfig.Service != nil && w.ClientConfig.Service.Port == nil {
		port := int32(443)
		w.ClientConfig.Service.Port = &port
	}
	if len(crd.Status.StoredVersions) == 0 {
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
				break
			}
		}
	}
}

// ValidateCRD validates a CRD being created, with kube-apiserver's rules and
// messages: metadata (name must be <plural>.<group>), group, names, scope,
// versions (DNS-1035 names, unique, exactly one storage version), a
// structural openAPIV3Schema for every version, defaults valid and pruned,
// subresources, printer columns, selectable fields, conversion, stored
// versions and the API approval annotation of protected groups. Call
// SetDefaults first, as the server does.
//
// Differences from kube-apiserver: conversion strategy Webhook is rejected
// (kloop cannot call webhooks), CEL rules are only checked for shape (rule
// present, message without line breaks), not compiled.
func ValidateCRD(crd *CustomResourceDefinition) field.ErrorList {
	if crd == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "object is required")}
	}
	nameFn := func(name string, prefix bool) []string {
		ret := apivalidation.NameIsDNSSubdomain(name, prefix)
		if name != crd.Spec.Names.Plural+"."+crd.Spec.Group {
			ret = append(ret, `must be spec.names.plural+"."+spec.group`)
		}
		return ret
	}
	errs := apivalidation.ValidateObjectMeta(&crd.ObjectMeta, false, nameFn, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&crd.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateStatus(crd)...)
	errs = append(errs, validateAPIApproval(crd, nil)...)
	if crd.Spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(field.NewPath("spec", "preserveUnknownFields"), true, "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
	}
	return errs
}

// ValidateCRDUpdate validates an update of old to crd: everything ValidateCRD
// checks plus the immutable fields (group and plural always; scope and kind
// once old is Established) and metadata update rules.
func ValidateCRDUpdate(crd, old *CustomResourceDefinition) field.ErrorList {
	if crd == nil || old == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "object is required")}
	}
	errs := apivalidation.ValidateObjectMetaUpdate(&crd.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	errs = append(errs, validateSpec(&crd.Spec, sp)...)
	if IsEstablished(old) {
		errs = append(errs, apivalidation.ValidateImmutableField(crd.Spec.Scope, old.Spec.Scope, sp.Child("scope"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(crd.Spec.Names.Kind, old.Spec.Names.Kind, sp.Child("names", "kind"))...)
	}
	errs = append(errs, apivalidation.ValidateImmutableField(crd.Spec.Group, old.Spec.Group, sp.Child("group"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(crd.Spec.Names.Plural, old.Spec.Names.Plural, sp.Child("names", "plural"))...)
	errs = append(errs, validateStatus(crd)...)
	errs = append(errs, validateAPIApproval(crd, old)...)
	if crd.Spec.PreserveUnknownFields && !old.Spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(field.NewPath("spec", "preserveUnknownFields"), true, "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
	}
	return errs
}

// IsEstablished reports whether crd has the condition Established=True.
func IsEstablished(crd *CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == Established {
			return c.Status == ConditionTrue
		}
	}
	return false
}

func validateStatus(crd *CustomResourceDefinition) field.ErrorList {
	sp := field.NewPath("status")
	errs := validateNames(&crd.Status.AcceptedNames, sp.Child("acceptedNames"))
	stored := crd.Status.StoredVersions
	p := sp.Child("storedVersions")
	if len(stored) == 0 {
		return append(errs, field.Invalid(p, stored, "must have at least one stored version"))
	}
	idx := map[string]int{}
	for i, v := range stored {
		idx[v] = i
	}
	for _, v := range crd.Spec.Versions {
		_, ok := idx[v.Name]
		if v.Storage && !ok {
			errs = append(errs, field.Invalid(p, stored, "must have the storage version "+v.Name))
		}
		delete(idx, v.Name)
	}
	missing := make([]string, 0, len(idx))
	for v := range idx {
		missing = append(missing, v)
	}
	sort.Strings(missing)
	for _, v := range missing {
		errs = append(errs, field.Invalid(p.Index(idx[v]), v, fmt.Sprintf("missing from spec.versions; %[1]s was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in %[1]s and removes %[1]s from status.storedVersions", v)))
	}
	return errs
}

func isProtectedGroup(group string) bool {
	return group == "k8s.io" || strings.HasSuffix(group, ".k8s.io") ||
		group == "kubernetes.io" || strings.HasSuffix(group, ".kubernetes.io")
}

func approvalState(annotations map[string]string) (state int, reason string) {
	a := annotations[APIApprovedAnnotation]
	u, err := url.ParseRequestURI(a)
	switch {
	case a == "":
		return 0, fmt.Sprintf("protected groups must have approval annotation %q, see https://github.com/kubernetes/enhancements/pull/1111", APIApprovedAnnotation)
	case strings.HasPrefix(a, "unapproved"):
		return 2, ""
	case err == nil && u.Host != "" && u.Scheme != "":
		return 2, ""
	default:
		return 1, fmt.Sprintf("protected groups must have approval annotation %q with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111", APIApprovedAnnotation)
	}
}

func validateAPIApproval(crd, old *CustomResourceDefinition) field.ErrorList {
	if !isProtectedGroup(crd.Spec.Group) {
		return nil
	}
	state, reason := approvalState(crd.Annotations)
	if old != nil {
		if oldState, _ := approvalState(old.Annotations); oldState == state {
			return nil
		}
	}
	p := field.NewPath("metadata", "annotations").Key(APIApprovedAnnotation)
	switch state {
	case 0:
		return field.ErrorList{field.Required(p, reason)}
	case 1:
		return field.ErrorList{field.Invalid(p, crd.Annotations[APIApprovedAnnotation], reason)}
	}
	return nil
}

func validateSpec(spec *CustomResourceDefinitionSpec, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case spec.Group == "":
		errs = append(errs, field.Required(fp.Child("group"), ""))
	case len(utilvalidation.IsDNS1123Subdomain(spec.Group)) > 0:
		errs = append(errs, field.Invalid(fp.Child("group"), spec.Group, strings.Join(utilvalidation.IsDNS1123Subdomain(spec.Group), ",")))
	case len(strings.Split(spec.Group, ".")) < 2:
		errs = append(errs, field.Invalid(fp.Child("group"), spec.Group, "should be a domain with at least one dot"))
	}
	errs = append(errs, validateEnumString(fp.Child("scope"), string(spec.Scope), []string{string(ClusterScoped), string(NamespaceScoped)})...)

	storage := 0
	seen := map[string]bool{}
	unique := true
	for i := range spec.Versions {
		v := &spec.Versions[i]
		vp := fp.Child("versions").Index(i)
		if v.Storage {
			storage++
		}
		if seen[v.Name] {
			unique = false
		}
		seen[v.Name] = true
		if e := utilvalidation.IsDNS1035Label(v.Name); len(e) > 0 {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, strings.Join(e, ",")))
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Required(vp.Child("schema", "openAPIV3Schema"), ""))
		}
		errs = append(errs, validateVersion(v, vp)...)
	}
	if !unique {
		errs = append(errs, field.Invalid(fp.Child("versions"), versionNames(spec.Versions), "must contain unique version names"))
	}
	if storage != 1 {
		errs = append(errs, field.Invalid(fp.Child("versions"), versionNames(spec.Versions), "must have exactly one version marked as storage version"))
	}

	np := fp.Child("names")
	if spec.Names.Plural == "" {
		errs = append(errs, field.Required(np.Child("plural"), ""))
	}
	if spec.Names.Singular == "" {
		errs = append(errs, field.Required(np.Child("singular"), ""))
	}
	if spec.Names.Kind == "" {
		errs = append(errs, field.Required(np.Child("kind"), ""))
	}
	if spec.Names.ListKind == "" {
		errs = append(errs, field.Required(np.Child("listKind"), ""))
	}
	errs = append(errs, validateNames(&spec.Names, np)...)
	errs = append(errs, validateConversion(spec.Conversion, fp.Child("conversion"))...)
	return errs
}

func versionNames(vs []CustomResourceDefinitionVersion) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

func validateEnumString(p *field.Path, value string, accepted []string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if slices.Contains(accepted, value) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, value, accepted)}
}

func validateNames(n *CustomResourceDefinitionNames, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e := utilvalidation.IsDNS1035Label(n.Plural); n.Plural != "" && len(e) > 0 {
		errs = append(errs, field.Invalid(p.Child("plural"), n.Plural, strings.Join(e, ",")))
	}
	if e := utilvalidation.IsDNS1035Label(n.Singular); n.Singular != "" && len(e) > 0 {
		errs = append(errs, field.Invalid(p.Child("singular"), n.Singular, strings.Join(e, ",")))
	}
	if e := utilvalidation.IsDNS1035Label(strings.ToLower(n.Kind)); n.Kind != "" && len(e) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), n.Kind, "may have mixed case, but should otherwise match: "+strings.Join(e, ",")))
	}
	if e := utilvalidation.IsDNS1035Label(strings.ToLower(n.ListKind)); n.ListKind != "" && len(e) > 0 {
		errs = append(errs, field.Invalid(p.Child("listKind"), n.ListKind, "may have mixed case, but should otherwise match: "+strings.Join(e, ",")))
	}
	for i, s := range n.ShortNames {
		if e := utilvalidation.IsDNS1035Label(s); len(e) > 0 {
			errs = append(errs, field.Invalid(p.Child("shortNames").Index(i), s, strings.Join(e, ",")))
		}
	}
	if n.Kind != "" && n.Kind == n.ListKind {
		errs = append(errs, field.Invalid(p.Child("listKind"), n.ListKind, "kind and listKind may not be the same"))
	}
	for i, c := range n.Categories {
		if e := utilvalidation.IsDNS1035Label(c); len(e) > 0 {
			errs = append(errs, field.Invalid(p.Child("categories").Index(i), c, strings.Join(e, ",")))
		}
	}
	return errs
}

func validateConversion(c *CustomResourceConversion, p *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	switch c.Strategy {
	case NoneConverter:
		if c.Webhook != nil && c.Webhook.ClientConfig != nil {
			errs = append(errs, field.Forbidden(p.Child("webhookClientConfig"), "should not be set when strategy is not set to Webhook"))
		}
		if c.Webhook != nil && len(c.Webhook.ConversionReviewVersions) > 0 {
			errs = append(errs, field.Forbidden(p.Child("conversionReviewVersions"), "should not be set when strategy is not set to Webhook"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("strategy"), ""))
	default:
		// Webhook is valid in Kubernetes, but kloop cannot call webhooks.
		errs = append(errs, field.NotSupported(p.Child("strategy"), c.Strategy, []string{string(NoneConverter)}))
	}
	return errs
}

func validateVersion(v *CustomResourceDefinitionVersion, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, e := range validateDeprecationWarning(v.Deprecated, v.DeprecationWarning) {
		errs = append(errs, field.Invalid(p.Child("deprecationWarning"), v.DeprecationWarning, e))
	}
	statusEnabled := v.Subresources != nil && v.Subresources.Status != nil
	var compiled *Structural
	if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		var schemaErrs field.ErrorList
		compiled, schemaErrs = validateSchema(v.Schema.OpenAPIV3Schema, statusEnabled, p.Child("schema"))
		errs = append(errs, schemaErrs...)
	}
	errs = append(errs, validateSubresources(v.Subresources, p.Child("subresources"))...)
	for i := range v.AdditionalPrinterColumns {
		errs = append(errs, validateColumn(&v.AdditionalPrinterColumns[i], p.Child("additionalPrinterColumns").Index(i))...)
	}
	if len(v.SelectableFields) > 0 {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Invalid(p.Child("selectableFields"), "", "may only be set when `version.schema.openAPIV3Schema` is not included"))
		} else {
			errs = append(errs, validateSelectableFields(v.SelectableFields, compiled, p.Child("selectableFields"))...)
		}
	}
	return errs
}

func validateDeprecationWarning(deprecated bool, w *string) []string {
	if !deprecated && w != nil {
		return []string{"can only be set for deprecated versions"}
	}
	if w == nil {
		return nil
	}
	var out []string
	if len(*w) > 256 {
		out = append(out, "must be <= 256 characters long")
	}
	if len(*w) == 0 {
		out = append(out, "must not be an empty string")
	}
	for i, r := range *w {
		if !unicode.IsPrint(r) {
			out = append(out, fmt.Sprintf("must only contain printable UTF-8 characters; non-printable character found at index %d", i))
			break
		}
		if unicode.IsControl(r) {
			out = append(out, fmt.Sprintf("must only contain printable UTF-8 characters; control character found at index %d", i))
			break
		}
	}
	if !utf8.ValidString(*w) {
		out = append(out, "must only contain printable UTF-8 characters")
	}
	return out
}

func validateSubresources(s *CustomResourceSubresources, p *field.Path) field.ErrorList {
	if s == nil || s.Scale == nil {
		return nil
	}
	var errs field.ErrorList
	sc := s.Scale
	if sc.SpecReplicasPath == "" {
		errs = append(errs, field.Required(p.Child("scale.specReplicasPath"), ""))
	} else if e := validateSimpleJSONPath(sc.SpecReplicasPath, p.Child("scale.specReplicasPath")); len(e) > 0 {
		errs = append(errs, e...)
	} else if !strings.HasPrefix(sc.SpecReplicasPath, ".spec.") {
		errs = append(errs, field.Invalid(p.Child("scale.specReplicasPath"), sc.SpecReplicasPath, "should be a json path under .spec"))
	}
	if sc.StatusReplicasPath == "" {
		errs = append(errs, field.Required(p.Child("scale.statusReplicasPath"), ""))
	} else if e := validateSimpleJSONPath(sc.StatusReplicasPath, p.Child("scale.statusReplicasPath")); len(e) > 0 {
		errs = append(errs, e...)
	} else if !strings.HasPrefix(sc.StatusReplicasPath, ".status.") {
		errs = append(errs, field.Invalid(p.Child("scale.statusReplicasPath"), sc.StatusReplicasPath, "should be a json path under .status"))
	}
	if sc.LabelSelectorPath != nil && *sc.LabelSelectorPath != "" {
		lp := *sc.LabelSelectorPath
		if e := validateSimpleJSONPath(lp, p.Child("scale.labelSelectorPath")); len(e) > 0 {
			errs = append(errs, e...)
		} else if !strings.HasPrefix(lp, ".spec.") && !strings.HasPrefix(lp, ".status.") {
			errs = append(errs, field.Invalid(p.Child("scale.labelSelectorPath"), lp, "should be a json path under either .spec or .status"))
		}
	}
	return errs
}

func validateSimpleJSONPath(s string, p *field.Path) field.ErrorList {
	switch {
	case s == "":
		return field.ErrorList{field.Invalid(p, s, "must not be empty")}
	case s[0] != '.':
		return field.ErrorList{field.Invalid(p, s, "must be a simple json path starting with .")}
	case s != ".":
		for _, c := range strings.Split(s[1:], ".") {
			if c == "" {
				return field.ErrorList{field.Invalid(p, s, "must be a json path in the dot notation")}
			}
		}
	}
	return nil
}

func validateColumn(c *CustomResourceColumnDefinition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch {
	case c.Type == "":
		errs = append(errs, field.Required(p.Child("type"), "must be one of "+strings.Join(printerColumnTypes, ",")))
	case !slices.Contains(printerColumnTypes, c.Type):
		errs = append(errs, field.Invalid(p.Child("type"), c.Type, "must be one of "+strings.Join(printerColumnTypes, ",")))
	}
	if c.Format != "" && !slices.Contains(printerColumnFormats, c.Format) {
		errs = append(errs, field.Invalid(p.Child("format"), c.Format, "must be one of "+strings.Join(printerColumnFormats, ",")))
	}
	if c.JSONPath == "" {
		errs = append(errs, field.Required(p.Child("JSONPath"), ""))
	} else if e := validateSimpleJSONPath(c.JSONPath, p.Child("JSONPath")); len(e) > 0 {
		errs = append(errs, e...)
	} else if err := jsonpath.New(c.Name).Parse("{" + c.JSONPath + "}"); err != nil {
		errs = append(errs, field.Invalid(p.Child("JSONPath"), c.JSONPath, fmt.Sprintf("is an invalid path: %v", err)))
	}
	return errs
}

func validateSelectableFields(fields []SelectableField, s *Structural, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, f := range fields {
		ip := p.Index(i).Child("jsonPath")
		if f.JSONPath == "" {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		if e := validateSimpleJSONPath(f.JSONPath, ip); len(e) > 0 || f.JSONPath == "." {
			errs = append(errs, field.Invalid(ip, f.JSONPath, "is an invalid path: must be a simple path of field names starting with ."))
			continue
		}
		parts := strings.Split(f.JSONPath[1:], ".")
		if parts[0] == "metadata" {
			errs = append(errs, field.Invalid(ip, f.JSONPath, "must not point to fields in metadata"))
		}
		var n *node
		if s != nil {
			n = s.root
		}
		for _, part := range parts {
			if n == nil {
				break
			}
			n = n.properties[part]
		}
		if n == nil {
			if s != nil && parts[0] != "metadata" {
				errs = append(errs, field.Invalid(ip, f.JSONPath, fmt.Sprintf("is an invalid path: does not refer to a valid field")))
			}
		} else if n.typ != "string" && n.typ != "boolean" && n.typ != "integer" {
			errs = append(errs, field.Invalid(ip, f.JSONPath, "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."))
		}
		if seen[f.JSONPath] {
			errs = append(errs, field.Duplicate(ip, f.JSONPath))
		}
		seen[f.JSONPath] = true
	}
	if len(seen) > MaxSelectableFields {
		errs = append(errs, field.TooMany(p, len(seen), MaxSelectableFields))
	}
	return errs
}

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

type level int

const (
	levelRoot level = iota
	levelItem
	levelField
)

// validateStructural is kube-apiserver's ValidateStructural on the compiled
// tree: types everywhere in the skeleton, junctors free of structure, and
// metadata restricted to name and generateName.
func validateStructural(n *node, lvl level, p *field.Path) field.ErrorList {
	if n == nil {
		return nil
	}
	var errs field.ErrorList
	if n.typ == "array" && n.items == nil {
		errs = append(errs, field.Required(p.Child("items"), "must be specified"))
	}
	errs = append(errs, validateStructural(n.items, levelItem, p.Child("items"))...)
	for _, k := range n.propNames {
		errs = append(errs, validateStructural(n.properties[k], levelField, p.Child("properties").Key(k))...)
	}
	if n.additionalSet {
		if lvl == levelRoot {
			errs = append(errs, field.Forbidden(p.Child("additionalProperties"), "must not be used at the root"))
		}
		errs = append(errs, validateStructural(n.additional, levelField, p.Child("additionalProperties"))...)
	}
	if n.intOrString && n.preserveUnknown {
		errs = append(errs, field.Invalid(p.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	if n.intOrString && n.embedded {
		errs = append(errs, field.Invalid(p.Child("x-kubernetes-embedded-resource"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	skipAnyOf := isIntOrStringAnyOf(n.anyOf)
	skipFirstAllOfAnyOf := len(n.allOf) > 0 && isIntOrStringAnyOf(n.allOf[0].anyOf)
	errs = append(errs, validateJunctorsStructural(n, skipAnyOf, skipFirstAllOfAnyOf, p)...)
	errs = append(errs, validateCompleteness(n, n, p, p)...)

	if n.embedded && n.typ != "object" {
		if n.typ == "" {
			errs = append(errs, field.Required(p.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
		} else {
			errs = append(errs, field.Invalid(p.Child("type"), n.typ, "must be object if x-kubernetes-embedded-resource is true"))
		}
	} else if n.typ == "" && !n.intOrString && !n.preserveUnknown {
		switch lvl {
		case levelRoot:
			errs = append(errs, field.Required(p.Child("type"), "must not be empty at the root"))
		case levelItem:
			errs = append(errs, field.Required(p.Child("type"), "must not be empty for specified array items"))
		case levelField:
			errs = append(errs, field.Required(p.Child("type"), "must not be empty for specified object fields"))
		}
	}
	if n.embedded && n.additionalSet {
		errs = append(errs, field.Forbidden(p.Child("additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"))
	}
	if lvl == levelRoot && n.typ != "" && n.typ != "object" {
		errs = append(errs, field.Invalid(p.Child("type"), n.typ, "must be object at the root"))
	}
	checkMeta := lvl == levelRoot || n.embedded
	if checkMeta {
		if k, ok := n.properties["kind"]; ok && k.typ != "string" {
			errs = append(errs, field.Invalid(p.Child("properties").Key("kind").Child("type"), k.typ, "must be string"))
		}
		if a, ok := n.properties["apiVersion"]; ok && a.typ != "string" {
			errs = append(errs, field.Invalid(p.Child("properties").Key("apiVersion").Child("type"), a.typ, "must be string"))
		}
	}
	if m, ok := n.properties["metadata"]; ok {
		mp := p.Child("properties").Key("metadata")
		if checkMeta && m.typ != "object" {
			errs = append(errs, field.Invalid(mp.Child("type"), m.typ, "must be object"))
		}
		if lvl == levelRoot && !metadataOnlyNames(m) {
			errs = append(errs, field.Forbidden(mp, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
		}
	}
	if n.embedded && !n.preserveUnknown && len(n.properties) == 0 {
		errs = append(errs, field.Required(p.Child("properties"), "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))
	}
	return errs
}

// metadataOnlyNames reports whether a root metadata schema restricts at most
// name and generateName (type and default are ignored, as in Kubernetes).
func metadataOnlyNames(m *node) bool {
	c := *m
	if len(c.properties) > 0 {
		for k := range c.properties {
			if k != "name" && k != "generateName" {
				return false
			}
		}
		c.properties, c.propNames = nil, nil
	}
	c.typ, c.hasDefault, c.def = "", false, nil
	return reflect.DeepEqual(c, node{})
}

func isIntOrStringAnyOf(anyOf []*node) bool {
	return len(anyOf) == 2 && isOnlyType(anyOf[0], "integer") && isOnlyType(anyOf[1], "string")
}

func isOnlyType(n *node, t string) bool {
	c := *n
	if c.typ != t {
		return false
	}
	c.typ = ""
	return reflect.DeepEqual(c, node{})
}

func validateJunctorsStructural(n *node, skipAnyOf, skipFirstAllOfAnyOf bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !skipAnyOf {
		for i, a := range n.anyOf {
			errs = append(errs, validateNested(a, false, p.Child("anyOf").Index(i))...)
		}
	}
	for i, a := range n.allOf {
		errs = append(errs, validateNested(a, skipFirstAllOfAnyOf && i == 0, p.Child("allOf").Index(i))...)
	}
	for i, a := range n.oneOf {
		errs = append(errs, validateNested(a, false, p.Child("oneOf").Index(i))...)
	}
	if n.not != nil {
		errs = append(errs, validateNested(n.not, false, p.Child("not"))...)
	}
	return errs
}

// validateNested checks a schema under allOf/anyOf/oneOf/not: it may only
// carry value validations.
func validateNested(n *node, skipAnyOf bool, p *field.Path) field.ErrorList {
	errs := validateJunctorsStructural(n, skipAnyOf, false, p)
	if n.items != nil {
		errs = append(errs, validateNested(n.items, false, p.Child("items"))...)
	}
	for _, k := range n.propNames {
		errs = append(errs, validateNested(n.properties[k], false, p.Child("properties").Key(k))...)
	}
	if n.typ != "" {
		errs = append(errs, field.Forbidden(p.Child("type"), "must be empty to be structural"))
	}
	if n.additionalSet {
		errs = append(errs, field.Forbidden(p.Child("additionalProperties"), "must be undefined to be structural"))
	}
	if n.hasDefault {
		errs = append(errs, field.Forbidden(p.Child("default"), "must be undefined to be structural"))
	}
	if n.nullable {
		errs = append(errs, field.Forbidden(p.Child("nullable"), "must be false to be structural"))
	}
	if n.preserveUnknown {
		errs = append(errs, field.Forbidden(p.Child("x-kubernetes-preserve-unknown-fields"), "must be false to be structural"))
	}
	if n.embedded {
		errs = append(errs, field.Forbidden(p.Child("x-kubernetes-embedded-resource"), "must be false to be structural"))
	}
	if n.intOrString {
		errs = append(errs, field.Forbidden(p.Child("x-kubernetes-int-or-string"), "must be false to be structural"))
	}
	if len(n.listMapKeys) > 0 {
		errs = append(errs, field.Forbidden(p.Child("x-kubernetes-list-map-keys"), "must be empty to be structural"))
	}
	if n.listType != "" {
		errs = append(errs, field.Forbidden(p.Child("x-kubernetes-list-type"), "must be undefined to be structural"))
	}
	if _, ok := n.properties["metadata"]; ok {
		errs = append(errs, field.Forbidden(p.Child("properties").Key("metadata"), "must not be specified in a nested context"))
	}
	return errs
}

// validateCompleteness requires every property or items mentioned inside a
// junctor to also be specified in the structural part.
func validateCompleteness(n, s *node, sp, vp *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(v *node, vpath *field.Path) {
		errs = append(errs, nestedCompleteness(v, s, sp, vpath)...)
	}
	for i, a := range n.allOf {
		check(a, vp.Child("allOf").Index(i))
	}
	for i, a := range n.anyOf {
		check(a, vp.Child("anyOf").Index(i))
	}
	for i, a := range n.oneOf {
		check(a, vp.Child("oneOf").Index(i))
	}
	if n.not != nil {
		check(n.not, vp.Child("not"))
	}
	return errs
}

func nestedCompleteness(v, s *node, sp, vp *field.Path) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(sp, fmt.Sprintf("because it is defined in %s", vp.String()))}
	}
	var errs field.ErrorList
	if v.items != nil {
		errs = append(errs, nestedCompleteness(v.items, s.items, sp.Child("items"), vp.Child("items"))...)
	}
	for _, k := range v.propNames {
		sc, ok := s.properties[k]
		if !ok && s.additional != nil {
			sc, ok = s.additional, true
		}
		if !ok {
			errs = append(errs, field.Required(sp.Child("properties").Key(k), fmt.Sprintf("because it is defined in %s", vp.Child("properties").Key(k))))
			continue
		}
		errs = append(errs, nestedCompleteness(v.properties[k], sc, sp.Child("properties").Key(k), vp.Child("properties").Key(k))...)
	}
	errs = append(errs, validateCompleteness(v, s, sp, vp)...)
	return errs
}

// validateDefaults checks every default along the skeleton: it must validate
// against its own schema and be pruned (contain no unknown fields). Defaults
// inside the root metadata are forbidden by validateOpenAPI already.
func validateDefaults(n *node, p *field.Path) field.ErrorList {
	if n == nil {
		return nil
	}
	var errs field.ErrorList
	if n.hasDefault {
		dp := p.Child("default")
		sub := &Structural{root: n}
		for _, e := range sub.ValidateValue(deepCopyJSON(n.def), "") {
			switch {
			case e.Field == "":
				e.Field = dp.String()
			case strings.HasPrefix(e.Field, "["):
				e.Field = dp.String() + e.Field
			default:
				e.Field = dp.String() + "." + e.Field
			}
			errs = append(errs, e)
		}
		if m, ok := n.def.(map[string]any); ok && !n.preserveUnknown {
			pruned, _ := deepCopyJSON(m).(map[string]any)
			c := *n
			pr := &pruner{}
			pr.prune(pruned, &c)
			if len(pr.pruned) > 0 {
				errs = append(errs, field.Invalid(dp, n.def, "must not have unknown fields"))
			}
		}
	}
	errs = append(errs, validateDefaults(n.items, p.Child("items"))...)
	for _, k := range n.propNames {
		errs = append(errs, validateDefaults(n.properties[k], p.Child("properties").Key(k))...)
	}
	errs = append(errs, validateDefaults(n.additional, p.Child("additionalProperties"))...)
	return errs
}
