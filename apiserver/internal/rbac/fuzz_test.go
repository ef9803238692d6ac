package rbac

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gen draws small values from fuzz input, so that random RBAC objects and
// requests often meet (a handful of names per field).
type gen struct{ b []byte }

func (g *gen) next() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *gen) pick(vs ...string) string { return vs[int(g.next())%len(vs)] }

func (g *gen) some(vs ...string) []string {
	n := int(g.next()) % 3
	out := make([]string, 0, n)
	for range n {
		out = append(out, g.pick(vs...))
	}
	return out
}

var (
	fuzzVerbs     = []string{"get", "list", "create", "*", "impersonate"}
	fuzzGroups    = []string{"", "apps", "*"}
	fuzzResources = []string{"pods", "pods/log", "*/status", "deployments", "*", "deployments/status"}
	fuzzNames     = []string{"a", "b"}
	fuzzURLs      = []string{"/healthz", "/healthz/*", "/api*", "*", "/version"}
	fuzzNS        = []string{"", "x", "y"}
	fuzzUsers     = []string{"alice", "bob", "system:serviceaccount:x:sa", "system:serviceaccount:y:sa"}
	fuzzGroupSet  = []string{"devs", "ops", "system:authenticated"}
)

func (g *gen) rule() rbacv1.PolicyRule {
	if g.next()%4 == 0 {
		return rbacv1.PolicyRule{Verbs: g.some(fuzzVerbs...), NonResourceURLs: g.some(fuzzURLs...)}
	}
	r := rbacv1.PolicyRule{Verbs: g.some(fuzzVerbs...), APIGroups: g.some(fuzzGroups...), Resources: g.some(fuzzResources...)}
	if g.next()%3 == 0 {
		r.ResourceNames = g.some(fuzzNames...)
	}
	return r
}

func (g *gen) rules() []rbacv1.PolicyRule {
	n := int(g.next()) % 3
	var out []rbacv1.PolicyRule
	for range n {
		out = append(out, g.rule())
	}
	return out
}

func (g *gen) subjects() []rbacv1.Subject {
	n := int(g.next())%2 + 1
	var out []rbacv1.Subject
	for range n {
		switch g.next() % 3 {
		case 0:
			out = append(out, rbacv1.Subject{Kind: rbacv1.UserKind, Name: g.pick(fuzzUsers...)})
		case 1:
			out = append(out, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: g.pick(fuzzGroupSet...)})
		default:
			out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "sa", Namespace: g.pick(fuzzNS...)})
		}
	}
	return out
}

func (g *gen) objects() Objects {
	var o Objects
	for i := range int(g.next())%3 + 1 {
		o.ClusterRoles = append(o.ClusterRoles, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("c", i)}, Rules: g.rules()})
	}
	for i := range int(g.next()) % 3 {
		o.Roles = append(o.Roles, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: g.pick("x", "y"), Name: fmt.Sprint("r", i)}, Rules: g.rules()})
	}
	ref := func() rbacv1.RoleRef {
		if g.next()%2 == 0 {
			return rbacv1.RoleRef{Kind: "ClusterRole", Name: g.pick("c0", "c1", "c2", "c3")}
		}
		return rbacv1.RoleRef{Kind: "Role", Name: g.pick("r0", "r1", "r2")}
	}
	for i := range int(g.next()) % 3 {
		o.ClusterRoleBindings = append(o.ClusterRoleBindings, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cb", i)}, RoleRef: ref(), Subjects: g.subjects()})
	}
	for i := range int(g.next()) % 4 {
		o.RoleBindings = append(o.RoleBindings, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: g.pick("x", "y"), Name: fmt.Sprint("b", i)}, RoleRef: ref(), Subjects: g.subjects()})
	}
	return o
}

func (g *gen) attributes() *Attributes {
	if g.next()%4 == 0 {
		return &Attributes{Verb: g.pick("get", "post", "list"), Path: g.pick("/healthz", "/healthz/etcd", "/apis", "/api", "/version", "/x")}
	}
	resource, sub, _ := strings.Cut(g.pick("pods", "pods/log", "pods/status", "deployments", "deployments/status", "secrets"), "/")
	return &Attributes{
		ResourceRequest: true, Verb: g.pick("get", "list", "create", "impersonate"), APIGroup: g.pick("", "apps"),
		Resource: resource, Subresource: sub, Namespace: g.pick(fuzzNS...), Name: g.pick("", "a", "b", "c"),
	}
}

// referenceAuthorize is RBAC written plainly from the API's definitions:
// every binding, its role looked up by a scan, every rule expanded into the
// requests it allows.
func referenceAuthorize(o Objects, u User, a *Attributes) (bool, []string) {
	var missing []string
	applies := func(subjects []rbacv1.Subject, ns string) bool {
		for _, s := range subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				if s.Name == u.Name {
					return true
				}
			case rbacv1.GroupKind:
				if slices.Contains(u.Groups, s.Name) {
					return true
				}
			case rbacv1.ServiceAccountKind:
				sns := s.Namespace
				if sns == "" {
					sns = ns
				}
				if sns != "" && u.Name == "system:serviceaccount:"+sns+":"+s.Name {
					return true
				}
			}
		}
		return false
	}
	rulesOf := func(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, bool) {
		if ref.Kind == "ClusterRole" {
			for _, r := range o.ClusterRoles {
				if r.Name == ref.Name {
					return r.Rules, true
				}
			}
			return nil, false
		}
		for _, r := range o.Roles {
			if r.Namespace == ns && r.Name == ref.Name {
				return r.Rules, true
			}
		}
		return nil, false
	}
	in := func(set []string, v string) bool { return slices.Contains(set, v) || slices.Contains(set, "*") }
	allows := func(r rbacv1.PolicyRule) bool {
		if !in(r.Verbs, a.Verb) {
			return false
		}
		if !a.ResourceRequest {
			for _, p := range r.NonResourceURLs {
				if p == "*" || p == a.Path || strings.HasSuffix(p, "*") && strings.HasPrefix(a.Path, p[:len(p)-1]) {
					return true
				}
			}
			return false
		}
		want := a.Resource
		if a.Subresource != "" {
			want += "/" + a.Subresource
		}
		resOK := slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, want) || a.Subresource != "" && slices.Contains(r.Resources, "*/"+a.Subresource)
		nameOK := len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.Name)
		return in(r.APIGroups, a.APIGroup) && resOK && nameOK
	}
	check := func(ref rbacv1.RoleRef, ns string) bool {
		rules, ok := rulesOf(ref, ns)
		if !ok {
			missing = append(missing, ref.Kind+"/"+ref.Name)
			return false
		}
		return slices.ContainsFunc(rules, allows)
	}
	for _, b := range o.ClusterRoleBindings {
		if applies(b.Subjects, "") && check(b.RoleRef, "") {
			return true, nil
		}
	}
	if a.Namespace != "" {
		for _, b := range o.RoleBindings {
			if b.Namespace == a.Namespace && applies(b.Subjects, b.Namespace) && check(b.RoleRef, b.Namespace) {
				return true, nil
			}
		}
	}
	return false, missing
}

// FuzzAuthorize compares Policy.Authorize with referenceAuthorize on random
// RBAC objects and requests, and RuleAllows with Covers (a request allowed
// by a rule is a rule the rule covers).
func FuzzAuthorize(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []byte("rbac rules and requests"),
		{2, 1, 1, 0, 0, 1, 1, 1, 0, 2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		objs := g.objects()
		p := NewPolicy(objs)
		for range 4 {
			u := User{Name: g.pick(fuzzUsers...), Groups: g.some(fuzzGroupSet...)}
			a := g.attributes()
			got, reason := p.Authorize(u, a)
			want, missing := referenceAuthorize(objs, u, a)
			if got != want {
				t.Fatalf("Authorize(%+v, %+v) = %v (%q), reference %v\nobjects: %s", u, a, got, reason, want, describeObjects(objs))
			}
			if !got && (len(missing) > 0) != (reason != "") {
				t.Fatalf("Authorize(%+v, %+v) denied with reason %q; missing roles %v", u, a, reason, missing)
			}
			rules, _ := p.RulesFor(u, a.Namespace, ListerErrors)
			if got != RulesAllow(a, rules) {
				t.Fatalf("Authorize(%+v, %+v) = %v but the rules of RulesFor say otherwise: %v", u, a, got, rules)
			}
			for _, r := range rules {
				if RuleAllows(a, &r) != coversRequest(r, a) {
					t.Fatalf("RuleAllows(%+v, %v) = %v, Covers says otherwise", a, r, RuleAllows(a, &r))
				}
			}
		}
	})
}

// coversRequest is RuleAllows through Covers: the request as a rule of one
// verb, group, resource and name (or URL) is covered by r. Both implement
// kube's semantics, RuleAllows for requests, Covers for escalation checks.
func coversRequest(r rbacv1.PolicyRule, a *Attributes) bool {
	if !a.ResourceRequest {
		if len(r.NonResourceURLs) == 0 {
			return false
		}
		ok, _ := Covers([]rbacv1.PolicyRule{r}, []rbacv1.PolicyRule{{Verbs: []string{a.Verb}, NonResourceURLs: []string{a.Path}}})
		return ok
	}
	if len(r.Resources) == 0 {
		return false
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	req := rbacv1.PolicyRule{Verbs: []string{a.Verb}, APIGroups: []string{a.APIGroup}, Resources: []string{resource}}
	if a.Name != "" {
		req.ResourceNames = []string{a.Name}
	}
	ok, _ := Covers([]rbacv1.PolicyRule{r}, []rbacv1.PolicyRule{req})
	return ok
}

func describeObjects(o Objects) string {
	var b strings.Builder
	for _, r := range o.ClusterRoles {
		fmt.Fprintf(&b, "ClusterRole %s %v\n", r.Name, r.Rules)
	}
	for _, r := range o.Roles {
		fmt.Fprintf(&b, "Role %s/%s %v\n", r.Namespace, r.Name, r.Rules)
	}
	for _, x := range o.ClusterRoleBindings {
		fmt.Fprintf(&b, "ClusterRoleBinding %s -> %v %v\n", x.Name, x.RoleRef, x.Subjects)
	}
	for _, x := range o.RoleBindings {
		fmt.Fprintf(&b, "RoleBinding %s/%s -> %v %v\n", x.Namespace, x.Name, x.RoleRef, x.Subjects)
	}
	return b.String()
}
