package apiext

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// kube-apiserver's structural-schema rules and its check of defaults, on a
// version's compiled schema (see crdschema.go).

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
