package rbac

import (
	"cmp"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate returns the rules of target, a ClusterRole with an
// aggregationRule, as kube-controller-manager's clusterrole-aggregation
// controller computes them from all: for each selector in turn, the rules
// of the other ClusterRoles it selects, by name, each rule once. ok is
// false when target has no aggregationRule; err is a selector's error.
func Aggregate(target *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) (rules []rbacv1.PolicyRule, ok bool, err error) {
	if target.AggregationRule == nil {
		return nil, false, nil
	}
	sorted := slices.SortedFunc(slices.Values(all), func(a, b *rbacv1.ClusterRole) int { return cmp.Compare(a.Name, b.Name) })
	rules = []rbacv1.PolicyRule{}
	for i := range target.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&target.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, true, err
		}
		for _, cr := range sorted {
			if cr.Name == target.Name || !sel.Matches(labels.Set(cr.Labels)) {
				continue
			}
			for _, r := range cr.Rules {
				if !slices.ContainsFunc(rules, func(x rbacv1.PolicyRule) bool { return RuleEqual(&x, &r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, true, nil
}

// RuleEqual reports whether two rules are the same (nil and empty lists
// alike, as the aggregation controller's semantic equality).
func RuleEqual(a, b *rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// RulesEqual is RuleEqual of two lists, element by element.
func RulesEqual(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool { return RuleEqual(&x, &y) })
}
