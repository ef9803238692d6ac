package rbac

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Covers reports whether the owner's rules allow everything the servant
// rules allow, as kube's escalation check (component-helpers' Covers): each
// servant rule is broken down into rules of one verb, one group, one
// resource and at most one name (or one non-resource URL), and each of those
// must be covered by one owner rule. missing are the ones that are not.
func Covers(owner, servant []rbacv1.PolicyRule) (ok bool, missing []rbacv1.PolicyRule) {
	for _, s := range servant {
		for _, sub := range BreakdownRule(s) {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return ruleCovers(&o, &sub) }) {
				missing = append(missing, sub)
			}
		}
	}
	return len(missing) == 0, missing
}

// BreakdownRule splits a rule into rules of one verb and one group, one
// resource and at most one name, or one non-resource URL.
func BreakdownRule(rule rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range rule.APIGroups {
		for _, r := range rule.Resources {
			for _, v := range rule.Verbs {
				if len(rule.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{r}, Verbs: []string{v}})
					continue
				}
				for _, n := range rule.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{r}, Verbs: []string{v}, ResourceNames: []string{n}})
				}
			}
		}
	}
	for _, u := range rule.NonResourceURLs {
		for _, v := range rule.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return out
}

func hasAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// ruleCovers reports whether owner covers sub, a rule of BreakdownRule.
func ruleCovers(owner, sub *rbacv1.PolicyRule) bool {
	verbs := slices.Contains(owner.Verbs, rbacv1.VerbAll) || hasAll(owner.Verbs, sub.Verbs)
	groups := slices.Contains(owner.APIGroups, rbacv1.APIGroupAll) || hasAll(owner.APIGroups, sub.APIGroups)
	names := len(owner.ResourceNames) == 0 || len(sub.ResourceNames) > 0 && hasAll(owner.ResourceNames, sub.ResourceNames)
	return verbs && groups && names && resourcesCovered(owner.Resources, sub.Resources) && urlsCovered(owner.NonResourceURLs, sub.NonResourceURLs)
}

// resourcesCovered: "*", the resource itself, or "*/<subresource>" for a
// subresource.
func resourcesCovered(set, want []string) bool {
	if slices.Contains(set, rbacv1.ResourceAll) || hasAll(set, want) {
		return true
	}
	for _, r := range want {
		if slices.Contains(set, r) {
			continue
		}
		_, sub, ok := strings.Cut(r, "/")
		if !ok || !slices.Contains(set, "*/"+sub) {
			return false
		}
	}
	return true
}

func urlsCovered(set, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(set, func(o string) bool {
			return o == w || strings.HasSuffix(o, "*") && strings.HasPrefix(w, strings.TrimRight(o, "*"))
		}) {
			return false
		}
	}
	return true
}

// CompactRules merges the rules that name one group, one resource and at
// most one name and differ only in their verbs (kube's CompactRules, for
// the escalation message).
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type simple struct {
		group, resource string
		named           bool
		name            string
	}
	var out []rbacv1.PolicyRule
	var order []simple
	merged := map[simple]*rbacv1.PolicyRule{}
	for _, r := range rules {
		key, ok := simple{}, len(r.ResourceNames) <= 1 && len(r.NonResourceURLs) == 0 && len(r.APIGroups) == 1 && len(r.Resources) == 1
		if ok {
			plain := rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs, ResourceNames: r.ResourceNames}
			ok = reflect.DeepEqual(plain, r)
			key = simple{group: r.APIGroups[0], resource: r.Resources[0]}
			if len(r.ResourceNames) == 1 {
				key.named, key.name = true, r.ResourceNames[0]
			}
		}
		if !ok {
			out = append(out, r)
			continue
		}
		if m := merged[key]; m != nil {
			m.Verbs = append(m.Verbs, r.Verbs...)
			continue
		}
		merged[key] = r.DeepCopy()
		order = append(order, key)
	}
	for _, k := range order {
		out = append(out, *merged[k])
	}
	return out
}

// CompactString is kube's short form of a rule in escalation messages:
// {APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name string
		v    []string
	}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"NonResourceURLs", r.NonResourceURLs}, {"ResourceNames", r.ResourceNames}, {"Verbs", r.Verbs}} {
		if len(f.v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// EscalationError is kube's refusal of a write that grants rules its user
// does not hold (ConfirmNoEscalation): nil when owner covers rules.
// resolutionErr is the error of resolving the user's own rules, if any.
func EscalationError(u User, owner, rules []rbacv1.PolicyRule, resolutionErr error) error {
	ok, missing := Covers(owner, rules)
	if ok {
		return nil
	}
	var descs []string
	for _, m := range CompactRules(missing) {
		if d := CompactString(m); !slices.Contains(descs, d) {
			descs = append(descs, d)
		}
	}
	slices.Sort(descs)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(descs, "\n"))
	if resolutionErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolutionErr})
	}
	return escalationError(msg)
}

type escalationError string

func (e escalationError) Error() string { return string(e) }
