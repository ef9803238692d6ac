package apiext

import (
	"fmt"
	"net/url"
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
// Differences from kube-apiserver: CEL rules are only checked for shape
// (rule present, message without line breaks), not compiled here.
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
	var cc *WebhookClientConfig
	var reviewVersions []string
	if c.Webhook != nil {
		cc, reviewVersions = c.Webhook.ClientConfig, c.Webhook.ConversionReviewVersions
	}
	switch c.Strategy {
	case NoneConverter:
		if cc != nil {
			errs = append(errs, field.Forbidden(p.Child("webhookClientConfig"), "should not be set when strategy is not set to Webhook"))
		}
		if len(reviewVersions) > 0 {
			errs = append(errs, field.Forbidden(p.Child("conversionReviewVersions"), "should not be set when strategy is not set to Webhook"))
		}
	case WebhookConverter:
		if cc == nil {
			errs = append(errs, field.Required(p.Child("webhookClientConfig"), "required when strategy is set to Webhook"))
		} else {
			errs = append(errs, ValidateClientConfig(cc.URL, cc.Service, cc.CABundle, p.Child("webhookClientConfig"), "exactly one of url or service is required")...)
		}
		errs = append(errs, ValidateReviewVersions(reviewVersions, []string{"v1", "v1beta1"}, p.Child("conversionReviewVersions"))...)
	case "":
		errs = append(errs, field.Required(p.Child("strategy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("strategy"), c.Strategy, []string{string(NoneConverter), string(WebhookConverter)}))
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
