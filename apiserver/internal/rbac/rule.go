package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Attributes are what a request asks, as kube-apiserver's authorizer
// attributes: a resource request (verb, API group, resource, subresource,
// namespace, name) or a non-resource one (verb and path).
type Attributes struct {
	Verb            string
	ResourceRequest bool
	APIGroup        string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	// Path is the URL path of a non-resource request.
	Path string
}

// User is who asks: a user name and groups (kube's user.Info; UID and extra
// play no part in RBAC).
type User struct {
	Name   string
	Groups []string
}

// RuleAllows reports whether rule allows a request, as kube's RBAC
// RuleAllows: a resource request matches the verb, the API group, the
// resource ("pods", "pods/log" for a subresource, "*/log" for the
// subresource of every resource, "*") and the name when the rule names
// some; a non-resource request matches the verb and the path ("/healthz",
// a prefix ending in "*", "*").
func RuleAllows(a *Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule, a.Path)
	}
	return apiGroupMatches(rule, a.APIGroup) &&
		resourceMatches(rule, a.Resource, a.Subresource) &&
		resourceNameMatches(rule, a.Name)
}

// RulesAllow reports whether any of rules allows the request.
func RulesAllow(a *Attributes, rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches matches "resource" or "resource/subresource" (without
// building the combined string) and "*/subresource".
func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		if len(r) == len(resource)+1+len(subresource) && strings.HasPrefix(r, resource) && r[len(resource)] == '/' && strings.HasSuffix(r, subresource) {
			return true
		}
		if len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
