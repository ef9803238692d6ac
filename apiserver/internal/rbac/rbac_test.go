package rbac

import (
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func res(verb, group, resource, sub, ns, name string) *Attributes {
	return &Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func nonRes(verb, path string) *Attributes { return &Attributes{Verb: verb, Path: path} }

func TestRuleAllows(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule rbacv1.PolicyRule
		a    *Attributes
		want bool
	}{
		{"exact", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, res("get", "", "pods", "", "ns", "p"), true},
		{"other verb", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, res("list", "", "pods", "", "ns", ""), false},
		{"any verb", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}}, res("escalate", "", "pods", "", "", ""), true},
		{"other group", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"deployments"}}, res("get", "apps", "deployments", "", "", ""), false},
		{"any group", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"deployments"}}, res("get", "apps", "deployments", "", "", ""), true},
		{"resource does not cover its subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, res("get", "", "pods", "log", "ns", "p"), false},
		{"subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, res("get", "", "pods", "log", "ns", "p"), true},
		{"subresource does not cover its resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, res("get", "", "pods", "", "ns", "p"), false},
		{"other subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, res("get", "", "pods", "exec", "ns", "p"), false},
		{"subresource of another resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"podx/log"}}, res("get", "", "pods", "log", "ns", "p"), false},
		{"star subresource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}}, res("update", "apps", "deployments", "scale", "ns", "d"), true},
		{"star subresource, main resource", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}}, res("update", "apps", "deployments", "", "ns", "d"), false},
		{"star resource covers subresources", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}}, res("get", "", "pods", "log", "ns", "p"), true},
		{"named", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}, res("get", "", "configmaps", "", "ns", "a"), true},
		{"other name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}, res("get", "", "configmaps", "", "ns", "b"), false},
		{"named rule, list without name", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}}, res("list", "", "configmaps", "", "ns", ""), false},
		{"resource rule, non-resource request", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, nonRes("get", "/healthz"), false},
		{"url", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, nonRes("get", "/healthz"), true},
		{"url other verb", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, nonRes("post", "/healthz"), false},
		{"url is not a prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, nonRes("get", "/healthz/etcd"), false},
		{"url prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, nonRes("get", "/healthz/etcd"), true},
		{"url prefix without the slash", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api*"}}, nonRes("get", "/apis"), true},
		{"url prefix needs its slash", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, nonRes("get", "/healthz"), false},
		{"any url", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, nonRes("delete", "/anything"), true},
		{"url rule, resource request", rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, res("get", "", "pods", "", "", ""), false},
	} {
		if got := RuleAllows(tc.a, &tc.rule); got != tc.want {
			t.Errorf("%s: RuleAllows = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func crole(name string, rs ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rs}
}

func TestAuthorize(t *testing.T) {
	getPods := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	p := NewPolicy(Objects{
		ClusterRoles: []*rbacv1.ClusterRole{crole("pod-reader", getPods), crole("nodes", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}})},
		Roles: []*rbacv1.Role{{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
		}}},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "nodes"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "nodes"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "ops"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "gone"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}},
		},
		RoleBindings: []*rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "alice-cm"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "pods"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "op"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "pods"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "op", Namespace: "a"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "missing"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cm"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}},
		},
	})
	alice := User{Name: "alice", Groups: []string{"system:authenticated"}}
	op := User{Name: "system:serviceaccount:a:op"}
	for _, tc := range []struct {
		name   string
		u      User
		a      *Attributes
		want   bool
		reason string
	}{
		{"role in its namespace", alice, res("get", "", "configmaps", "", "a", "x"), true, `RBAC: allowed by RoleBinding "alice-cm/a" of Role "cm" to User "alice"`},
		{"role in another namespace", alice, res("get", "", "configmaps", "", "b", "x"), false, ""},
		{"role, cluster-wide", alice, res("list", "", "configmaps", "", "", ""), false, ""},
		{"group", User{Name: "bob", Groups: []string{"ops"}}, res("get", "", "nodes", "", "", "n"), true, `RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "nodes" to Group "ops"`},
		{"service account of the binding's namespace", op, res("list", "", "pods", "", "a", ""), true, `RBAC: allowed by RoleBinding "pods/a" of ClusterRole "pod-reader" to ServiceAccount "op/a"`},
		{"service account of another namespace", op, res("list", "", "pods", "", "b", ""), true, `RBAC: allowed by RoleBinding "pods/b" of ClusterRole "pod-reader" to ServiceAccount "op/a"`},
		{"not that service account", User{Name: "system:serviceaccount:b:op"}, res("list", "", "pods", "", "b", ""), false, ""},
		{"missing roles", User{Name: "carol"}, res("get", "", "configmaps", "", "b", "x"), false, `RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "cm" not found]`},
		{"missing cluster role only", User{Name: "carol"}, nonRes("get", "/version"), false, `RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
	} {
		got, reason := p.Authorize(tc.u, tc.a)
		if got != tc.want || reason != tc.reason {
			t.Errorf("%s: Authorize = %v %q, want %v %q", tc.name, got, reason, tc.want, tc.reason)
		}
	}
	rules, err := p.RulesFor(User{Name: "carol"}, "b", RegistryErrors("rolebindings"))
	if len(rules) != 0 || err == nil || err.Error() != `[rolebindings.rbac.authorization.k8s.io "gone" not found, rolebindings.rbac.authorization.k8s.io "cm" not found]` {
		t.Errorf("RulesFor(carol) = %v, %v", rules, err)
	}
	if rules, err := p.RulesFor(op, "a", ListerErrors); err != nil || !slices.EqualFunc(rules, []rbacv1.PolicyRule{getPods}, ruleEqual) {
		t.Errorf("RulesFor(op) = %v, %v", rules, err)
	}
}

func ruleEqual(a, b rbacv1.PolicyRule) bool { return a.String() == b.String() }

func TestIsServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		user, ns, name string
		want           bool
	}{
		{"system:serviceaccount:a:b", "a", "b", true},
		{"system:serviceaccount:a:bb", "a", "b", false},
		{"system:serviceaccount:aa:b", "a", "b", false},
		{"system:serviceaccount:a:b", "a:b", "", false},
		{"system:serviceaccount::b", "", "b", true},
		{"system:serviceaccounts:a:b", "a", "b", false},
	} {
		if got := IsServiceAccount(tc.user, tc.ns, tc.name); got != tc.want {
			t.Errorf("IsServiceAccount(%q, %q, %q) = %v", tc.user, tc.ns, tc.name, got)
		}
	}
}

func TestCoversAndEscalation(t *testing.T) {
	owner := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}},
		{Verbs: []string{"update"}, APIGroups: []string{"apps"}, Resources: []string{"*/scale"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a", "b"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs/*"}},
	}
	for _, tc := range []struct {
		name    string
		servant []rbacv1.PolicyRule
		missing int
	}{
		{"subset", []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, 0},
		{"star subresource", []rbacv1.PolicyRule{{Verbs: []string{"update"}, APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}}}, 0},
		{"names within", []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}}}, 0},
		{"all names of a named owner", []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}, 1},
		{"more verbs", []rbacv1.PolicyRule{{Verbs: []string{"get", "create", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, 2},
		{"url prefix", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs/x", "/metrics"}}}, 1},
		{"star verb", []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, 1},
	} {
		ok, missing := Covers(owner, tc.servant)
		if ok != (tc.missing == 0) || len(missing) != tc.missing {
			t.Errorf("%s: Covers = %v, missing %v; want %d missing", tc.name, ok, missing, tc.missing)
		}
	}

	u := User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}
	err := EscalationError(u, owner, []rbacv1.PolicyRule{
		{Verbs: []string{"get", "create", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}},
	}, nil)
	want := "user \"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n" +
		"{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"create\" \"delete\"]}\n{NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
	if err == nil || err.Error() != want {
		t.Errorf("EscalationError =\n%v\nwant\n%s", err, want)
	}
	if err := EscalationError(u, owner, owner, nil); err != nil {
		t.Errorf("EscalationError of the owner's own rules: %v", err)
	}
}

func TestBootstrapAggregation(t *testing.T) {
	roles := BootstrapClusterRoles()
	all := make([]*rbacv1.ClusterRole, len(roles))
	for i := range roles {
		all[i] = &roles[i]
	}
	find := func(name string) *rbacv1.ClusterRole {
		i := slices.IndexFunc(all, func(r *rbacv1.ClusterRole) bool { return r.Name == name })
		if i < 0 {
			t.Fatalf("no bootstrap role %s", name)
		}
		return all[i]
	}
	// The controller's order: view first (edit selects it), then edit, then admin.
	for _, name := range []string{"view", "edit", "admin"} {
		rules, ok, err := Aggregate(find(name), all)
		if !ok || err != nil {
			t.Fatalf("Aggregate(%s): %v %v", name, ok, err)
		}
		find(name).Rules = rules
	}
	view, edit, admin := find("view").Rules, find("edit").Rules, find("admin").Rules
	if !slices.EqualFunc(view, find("system:aggregate-to-view").Rules, ruleEqual) {
		t.Errorf("view's rules are not system:aggregate-to-view's")
	}
	if ok, missing := Covers(edit, view); !ok || len(edit) != len(view)+len(find("system:aggregate-to-edit").Rules) {
		t.Errorf("edit does not hold view and system:aggregate-to-edit: missing %v", missing)
	}
	if ok, _ := Covers(admin, edit); !ok {
		t.Errorf("admin does not cover edit")
	}
	if ok, _ := Covers(edit, admin); ok {
		t.Errorf("edit covers admin")
	}
	if _, ok, _ := Aggregate(find("cluster-admin"), all); ok {
		t.Errorf("cluster-admin aggregates")
	}
	bindings := BootstrapClusterRoleBindings()
	for _, b := range bindings {
		find(b.RoleRef.Name)
		if !strings.HasPrefix(b.Name, "system:") && b.Name != "cluster-admin" {
			t.Errorf("unexpected binding %s", b.Name)
		}
	}
}
