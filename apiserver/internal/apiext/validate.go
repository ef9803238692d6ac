package apiext

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// Validation of decoded objects against a compiled schema (Structural):
// kube-apiserver's value validations, paths and messages.

// Validate checks obj against the schema the way kube-apiserver does for a
// custom resource, returning errors with kube-apiserver's paths and messages,
// for example
//
//	spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
//	spec.name: Required value
//	spec.color: Unsupported value: "blue": supported values: "red", "green"
//
// It also enforces x-kubernetes-list-type set/map uniqueness (Duplicate
// value) and, inside x-kubernetes-embedded-resource values, required
// apiVersion/kind and a valid ObjectMeta, as kube-apiserver does. x-kubernetes-validations (CEL) rules are not evaluated. Patterns are
// Go RE2 expressions: ECMA-262 features RE2 lacks (lookahead/lookbehind,
// backreferences) make NewStructural fail; \d, \w, \s are ASCII-only in RE2.
// Errors are sorted by field path, then message, for a stable order.
func (s *Structural) Validate(obj map[string]any) field.ErrorList {
	if s == nil || s.root == nil {
		return nil
	}
	var errs field.ErrorList
	s.root.validate(obj, "", &errs)
	validateLists(s.root, obj, nil, &errs)
	validateEmbedded(s.root, obj, nil, true, &errs)
	fixRootPaths(errs)
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Field != errs[j].Field {
			return errs[i].Field < errs[j].Field
		}
		return errs[i].Error() < errs[j].Error()
	})
	return errs
}

// ValidateValue checks a single value against the schema, naming it path
// (which may be empty) in messages. It is used for defaults and for values
// that are not whole objects.
func (s *Structural) ValidateValue(v any, path string) field.ErrorList {
	if s == nil || s.root == nil {
		return nil
	}
	var errs field.ErrorList
	s.root.validate(v, path, &errs)
	validateLists(s.root, v, pathOf(path), &errs)
	fixRootPaths(errs)
	return errs
}

// fixRootPaths gives errors about the root value an empty field instead of
// field.Path's rendering of an empty name ("[]").
func fixRootPaths(errs field.ErrorList) {
	for _, e := range errs {
		if e.Field == "[]" {
			e.Field = ""
		}
	}
}

func pathOf(p string) *field.Path {
	if p == "" {
		return nil
	}
	return field.NewPath(p)
}

// errPath is the field path of an error about the value at path.
func errPath(p string) *field.Path {
	if p == "" {
		return field.NewPath("")
	}
	return field.NewPath(p)
}

func childPath(p, key string) string {
	if p == "" {
		return key
	}
	return p + "." + key
}

func (n *node) types() []string {
	if n.intOrString {
		return []string{"integer", "string"}
	}
	if n.typ != "" {
		return []string{n.typ}
	}
	return nil
}

func (n *node) validate(v any, p string, errs *field.ErrorList) {
	if v == nil {
		if t := n.types(); len(t) > 0 && !n.nullable {
			*errs = append(*errs, field.TypeInvalid(errPath(p), "null",
				fmt.Sprintf("%s in body must be of type %s: %q", p, strings.Join(t, ","), "null")))
		}
		n.validateEnum(v, p, errs)
		return
	}
	actual := jsonType(v)
	if t := n.types(); len(t) > 0 {
		ok := slices.Contains(t, actual) ||
			(actual == "integer" && slices.Contains(t, "number"))
		if !ok && actual == "number" && slices.Contains(t, "integer") {
			f, _, _ := number(v)
			ok = isIntegral(f)
		}
		if !ok {
			*errs = append(*errs, field.TypeInvalid(errPath(p), actual,
				fmt.Sprintf("%s in body must be of type %s: %q", p, strings.Join(t, ","), actual)))
		}
	}
	n.validateJunctors(v, p, errs)
	switch actual {
	case "array":
		n.validateArray(v.([]any), p, errs)
	case "object":
		n.validateObject(v.(map[string]any), p, errs)
	case "string":
		n.validateString(v.(string), p, errs)
	case "integer", "number":
		n.validateNumber(v, p, errs)
	}
	n.validateEnum(v, p, errs)
}

func (n *node) validateEnum(v any, p string, errs *field.ErrorList) {
	if !n.hasEnum || len(n.enum) == 0 {
		return
	}
	for _, e := range n.enum {
		if schemaEqual(v, e) {
			return
		}
	}
	values := make([]string, 0, len(n.enum))
	for _, e := range n.enum {
		if s, ok := e.(string); ok {
			values = append(values, s)
			continue
		}
		b, _ := json.Marshal(e)
		values = append(values, string(b))
	}
	*errs = append(*errs, field.NotSupported(errPath(p), v, values))
}

func (n *node) validateJunctors(v any, p string, errs *field.ErrorList) {
	if len(n.anyOf) > 0 {
		var best field.ErrorList
		ok := false
		for _, a := range n.anyOf {
			var e field.ErrorList
			a.validate(v, p, &e)
			if len(e) == 0 {
				ok = true
				break
			}
			if best == nil || len(e) < len(best) {
				best = e
			}
		}
		if !ok {
			*errs = append(*errs, field.Invalid(errPath(p), "", fmt.Sprintf("%q must validate at least one schema (anyOf)", p)))
			*errs = append(*errs, best...)
		}
	}
	if len(n.oneOf) > 0 {
		var best field.ErrorList
		valid := 0
		for _, a := range n.oneOf {
			var e field.ErrorList
			a.validate(v, p, &e)
			if len(e) == 0 {
				valid++
				continue
			}
			if valid == 0 && (best == nil || len(e) < len(best)) {
				best = e
			}
		}
		if valid != 1 {
			msg := "Found none valid"
			if valid > 1 {
				msg = fmt.Sprintf("Found %d valid alternatives", valid)
			}
			*errs = append(*errs, field.Invalid(errPath(p), "", fmt.Sprintf("%q must validate one and only one schema (oneOf). %s", p, msg)))
			if valid == 0 {
				*errs = append(*errs, best...)
			}
		}
	}
	if len(n.allOf) > 0 {
		valid := 0
		for _, a := range n.allOf {
			var e field.ErrorList
			a.validate(v, p, &e)
			if len(e) == 0 {
				valid++
			}
			*errs = append(*errs, e...)
		}
		if valid != len(n.allOf) {
			suffix := ""
			if valid == 0 {
				suffix = ". None validated"
			}
			*errs = append(*errs, field.Invalid(errPath(p), "", fmt.Sprintf("%q must validate all the schemas (allOf)%s", p, suffix)))
		}
	}
	if n.not != nil {
		var e field.ErrorList
		n.not.validate(v, p, &e)
		if len(e) == 0 {
			*errs = append(*errs, field.Invalid(errPath(p), "", fmt.Sprintf("%q must not validate the schema (not)", p)))
		}
	}
}

func (n *node) validateArray(a []any, p string, errs *field.ErrorList) {
	if n.items != nil {
		for i, e := range a {
			n.items.validate(e, p+"["+strconv.Itoa(i)+"]", errs)
		}
	}
	size := int64(len(a))
	if n.minItems != nil && size < *n.minItems {
		*errs = append(*errs, field.Invalid(errPath(p), size, fmt.Sprintf("%s in body should have at least %d items", p, *n.minItems)))
	}
	if n.maxItems != nil && size > *n.maxItems {
		*errs = append(*errs, field.TooMany(errPath(p), int(size), int(*n.maxItems)))
	}
	if n.uniqueItems {
		for i := 1; i < len(a); i++ {
			dup := false
			for j := 0; j < i; j++ {
				if schemaEqual(a[i], a[j]) {
					dup = true
					break
				}
			}
			if dup {
				*errs = append(*errs, field.Invalid(errPath(p), a, fmt.Sprintf("%s in body shouldn't contain duplicates", p)))
				break
			}
		}
	}
}

func (n *node) validateObject(m map[string]any, p string, errs *field.ErrorList) {
	nk := int64(len(m))
	if n.minProps != nil && nk < *n.minProps {
		*errs = append(*errs, field.Invalid(errPath(p), nk, fmt.Sprintf("%s in body should have at least %d properties", p, *n.minProps)))
	}
	if n.maxProps != nil && nk > *n.maxProps {
		*errs = append(*errs, field.TooMany(errPath(p), int(nk), int(*n.maxProps)))
	}
	for _, r := range n.required {
		if _, ok := m[r]; !ok {
			*errs = append(*errs, field.Required(errPath(childPath(p, r)), ""))
		}
	}
	for _, k := range n.propNames {
		if v, ok := m[k]; ok {
			n.properties[k].validate(v, childPath(p, k), errs)
		}
	}
	if !n.additionalSet {
		return
	}
	extra := make([]string, 0, len(m))
	for k := range m {
		if _, ok := n.properties[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		switch {
		case !n.additionalAllows:
			*errs = append(*errs, field.Invalid(errPath(p), k, fmt.Sprintf("%s.%s in body is a forbidden property", p, k)))
		case n.additional != nil:
			n.additional.validate(m[k], childPath(p, k), errs)
		}
	}
}

func (n *node) validateString(s string, p string, errs *field.ErrorList) {
	if n.maxLen != nil || n.minLen != nil {
		l := int64(utf8.RuneCountInString(s))
		if n.maxLen != nil && l > *n.maxLen {
			*errs = append(*errs, field.TooLong(errPath(p), "", int(*n.maxLen)))
		}
		if n.minLen != nil && l < *n.minLen {
			*errs = append(*errs, field.Invalid(errPath(p), s, fmt.Sprintf("%s in body should be at least %d chars long", p, *n.minLen)))
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		*errs = append(*errs, field.Invalid(errPath(p), s, fmt.Sprintf("%s in body should match '%s'", p, n.patternSrc)))
	}
	if n.format != "" && strfmt.Default.ContainsName(n.format) && !strfmt.Default.Validates(n.format, s) {
		*errs = append(*errs, field.TypeInvalid(errPath(p), s, fmt.Sprintf("%s in body must be of type %s: %q", p, n.format, s)))
	}
}

func (n *node) validateNumber(v any, p string, errs *field.ErrorList) {
	f, _, _ := number(v)
	if n.multipleOf != nil {
		factor := *n.multipleOf
		if factor <= 0 {
			*errs = append(*errs, field.Invalid(errPath(p), v, fmt.Sprintf("factor MultipleOf declared for %s must be positive: %v", p, factor)))
		} else {
			var mult float64
			if factor < 1 {
				mult = 1 / factor * f
			} else {
				mult = f / factor
			}
			if !almostIntegral(mult) {
				*errs = append(*errs, field.Invalid(errPath(p), v, fmt.Sprintf("%s in body should be a multiple of %v", p, factor)))
			}
		}
	}
	if n.max != nil {
		if (n.exclMax && f >= *n.max) || f > *n.max {
			msg := "%s in body should be less than or equal to %v"
			if n.exclMax {
				msg = "%s in body should be less than %v"
			}
			*errs = append(*errs, field.Invalid(errPath(p), v, fmt.Sprintf(msg, p, *n.max)))
		}
	}
	if n.min != nil {
		if (n.exclMin && f <= *n.min) || f < *n.min {
			msg := "%s in body should be greater than or equal to %v"
			if n.exclMin {
				msg = "%s in body should be greater than %v"
			}
			*errs = append(*errs, field.Invalid(errPath(p), v, fmt.Sprintf(msg, p, *n.min)))
		}
	}
}

// almostIntegral is swag.IsFloat64AJSONInteger: integral within a relative
// epsilon of 1e-9, so that 0.3/0.1 counts as a multiple.
func almostIntegral(f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	r := math.Round(f)
	if f == r {
		return true
	}
	diff := math.Abs(f - r)
	return diff/math.Min(math.Abs(f)+math.Abs(r), math.MaxFloat64) < 1e-9
}

// validateLists enforces x-kubernetes-list-type set and map uniqueness along
// the structural skeleton, with kube-apiserver's Duplicate value errors.
func validateLists(n *node, v any, p *field.Path, errs *field.ErrorList) {
	if n == nil {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if c, ok := n.properties[k]; ok {
				validateLists(c, t[k], p.Child(k), errs)
			} else if n.additional != nil {
				validateLists(n.additional, t[k], p.Key(k), errs)
			}
		}
	case []any:
		switch n.listType {
		case "set":
			for i := 1; i < len(t); i++ {
				for j := 0; j < i; j++ {
					if schemaEqual(t[i], t[j]) {
						*errs = append(*errs, field.Duplicate(p.Index(i), t[i]))
						break
					}
				}
			}
		case "map":
			seen := map[string]bool{}
			for i, e := range t {
				m, ok := e.(map[string]any)
				if !ok {
					*errs = append(*errs, field.Invalid(p.Index(i), e, "must be an object for an array of list-type map"))
					continue
				}
				key := map[string]any{}
				for _, k := range n.listMapKeys {
					if kv, ok := m[k]; ok {
						key[k] = kv
					} else if c := n.items; c != nil {
						if kc, ok := c.properties[k]; ok && kc.hasDefault {
							key[k] = kc.def
						}
					}
				}
				b, _ := json.Marshal(key)
				if seen[string(b)] {
					*errs = append(*errs, field.Duplicate(p.Index(i), key))
				}
				seen[string(b)] = true
			}
		}
		for i, e := range t {
			validateLists(n.items, e, p.Index(i), errs)
		}
	}
}
