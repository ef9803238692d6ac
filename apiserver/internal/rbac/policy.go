package rbac

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Objects are the RBAC objects a Policy is built from.
type Objects struct {
	ClusterRoles        []*rbacv1.ClusterRole
	Roles               []*rbacv1.Role
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	RoleBindings        []*rbacv1.RoleBinding
}

// Policy is an immutable snapshot of the RBAC objects, indexed for
// authorization. Its methods are safe for concurrent use.
type Policy struct {
	// clusterBindings are the ClusterRoleBindings, by name; bindings the
	// RoleBindings by namespace, each by name. Each has its role's rules
	// resolved.
	clusterBindings []binding
	bindings        map[string][]binding
	clusterRoles    map[string]*rbacv1.ClusterRole
	roles           map[string]map[string]*rbacv1.Role // namespace, name
}

// binding is a RoleBinding or ClusterRoleBinding with the rules of its role.
type binding struct {
	name      string
	namespace string // "" for a ClusterRoleBinding
	roleRef   rbacv1.RoleRef
	subjects  []rbacv1.Subject
	// rules are the role's; when the role is missing, rules is nil and
	// missing is set.
	rules   []rbacv1.PolicyRule
	missing bool
}

// NewPolicy indexes objs. The objects are not copied: they must not change
// afterwards.
func NewPolicy(objs Objects) *Policy {
	p := &Policy{
		bindings:     map[string][]binding{},
		clusterRoles: make(map[string]*rbacv1.ClusterRole, len(objs.ClusterRoles)),
		roles:        map[string]map[string]*rbacv1.Role{},
	}
	for _, cr := range objs.ClusterRoles {
		p.clusterRoles[cr.Name] = cr
	}
	for _, r := range objs.Roles {
		if p.roles[r.Namespace] == nil {
			p.roles[r.Namespace] = map[string]*rbacv1.Role{}
		}
		p.roles[r.Namespace][r.Name] = r
	}
	for _, b := range objs.ClusterRoleBindings {
		p.clusterBindings = append(p.clusterBindings, p.resolve(b.Name, "", b.RoleRef, b.Subjects))
	}
	for _, b := range objs.RoleBindings {
		p.bindings[b.Namespace] = append(p.bindings[b.Namespace], p.resolve(b.Name, b.Namespace, b.RoleRef, b.Subjects))
	}
	byName := func(a, b binding) int { return cmp.Compare(a.name, b.name) }
	slices.SortFunc(p.clusterBindings, byName)
	for _, bs := range p.bindings {
		slices.SortFunc(bs, byName)
	}
	return p
}

func (p *Policy) resolve(name, ns string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) binding {
	b := binding{name: name, namespace: ns, roleRef: ref, subjects: subjects}
	rules, ok := p.roleRules(ref, ns)
	b.rules, b.missing = rules, !ok
	return b
}

// roleRules returns the rules of the role a binding in namespace ns (""
// for a ClusterRoleBinding) refers to; ok is false when there is no such
// role.
func (p *Policy) roleRules(ref rbacv1.RoleRef, ns string) (rules []rbacv1.PolicyRule, ok bool) {
	switch ref.Kind {
	case "ClusterRole":
		if cr := p.clusterRoles[ref.Name]; cr != nil {
			return cr.Rules, true
		}
	case "Role":
		if r := p.roles[ns][ref.Name]; r != nil {
			return r.Rules, true
		}
	}
	return nil, false
}

// ErrorStyle says how resolution errors name a missing role. kube's
// authorizer reads roles from its informers' listers: "role.rbac..." and
// "clusterrole.rbac..." (ListerErrors). Its escalation checks read them
// from the registry within the request, whose resource names the error:
// "rolebindings.rbac..." for a role missing while a RoleBinding is written
// (RegistryErrors with that resource).
type ErrorStyle struct {
	// Resource is the request's resource; "" for the listers' style.
	Resource string
}

// ListerErrors is the authorizer's error style.
var ListerErrors = ErrorStyle{}

// RegistryErrors is the error style of a request writing resource.
func RegistryErrors(resource string) ErrorStyle { return ErrorStyle{Resource: resource} }

// resolutionError is kube's error for a binding whose role cannot be read.
func (b *binding) resolutionError(style ErrorStyle) error {
	return RoleRefError(b.roleRef, style)
}

// RoleRefError is the error of reading the missing role ref refers to.
func RoleRefError(ref rbacv1.RoleRef, style ErrorStyle) error {
	var resource string
	switch ref.Kind {
	case "ClusterRole":
		resource = "clusterrole"
	case "Role":
		resource = "role"
	default:
		return fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
	if style.Resource != "" {
		resource = style.Resource
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}, ref.Name)
}

// RoleRefRules returns the rules of the role a binding in namespace ns
// ("" for a ClusterRoleBinding) refers to, or the error of the given style
// when it is missing.
func (p *Policy) RoleRefRules(ref rbacv1.RoleRef, ns string, style ErrorStyle) ([]rbacv1.PolicyRule, error) {
	if rules, ok := p.roleRules(ref, ns); ok {
		return rules, nil
	}
	return nil, RoleRefError(ref, style)
}

// ClusterRole returns the ClusterRole named name, or nil.
func (p *Policy) ClusterRole(name string) *rbacv1.ClusterRole { return p.clusterRoles[name] }

// Allows reports whether RBAC allows a request of u: Authorize's decision,
// without its reason (and without allocating).
func (p *Policy) Allows(u User, a *Attributes) bool {
	return allowedBy(u, a, p.clusterBindings) || a.Namespace != "" && allowedBy(u, a, p.bindings[a.Namespace])
}

func allowedBy(u User, a *Attributes, bs []binding) bool {
	for i := range bs {
		b := &bs[i]
		if _, ok := appliesTo(u, b.subjects, b.namespace); ok && !b.missing && RulesAllow(a, b.rules) {
			return true
		}
	}
	return false
}

// Authorize decides a request of u, as kube's RBAC authorizer: allowed with
// the reason "RBAC: allowed by <binding>", or not, with the resolution
// errors of the bindings of u whose role is missing ("RBAC: ...") or no
// reason. ClusterRoleBindings are visited first, then the RoleBindings of
// the request's namespace, each by name.
func (p *Policy) Authorize(u User, a *Attributes) (allowed bool, reason string) {
	var errs []error
	visit := func(bs []binding) bool {
		for i := range bs {
			b := &bs[i]
			j, ok := appliesTo(u, b.subjects, b.namespace)
			if !ok {
				continue
			}
			if b.missing {
				errs = append(errs, b.resolutionError(ListerErrors))
				continue
			}
			if RulesAllow(a, b.rules) {
				reason = "RBAC: allowed by " + b.describe(&b.subjects[j])
				return true
			}
		}
		return false
	}
	if visit(p.clusterBindings) {
		return true, reason
	}
	if a.Namespace != "" && visit(p.bindings[a.Namespace]) {
		return true, reason
	}
	if len(errs) > 0 {
		return false, "RBAC: " + utilerrors.NewAggregate(errs).Error()
	}
	return false, ""
}

// RulesFor returns the rules u holds in namespace ns (cluster-wide ones
// only when ns is ""), in visiting order, and the errors of the bindings
// whose role is missing, in the given style; err is nil when there are
// none.
func (p *Policy) RulesFor(u User, ns string, style ErrorStyle) (rules []rbacv1.PolicyRule, err error) {
	var errs []error
	visit := func(bs []binding) {
		for i := range bs {
			b := &bs[i]
			if _, ok := appliesTo(u, b.subjects, b.namespace); !ok {
				continue
			}
			if b.missing {
				errs = append(errs, b.resolutionError(style))
				continue
			}
			rules = append(rules, b.rules...)
		}
	}
	visit(p.clusterBindings)
	if ns != "" {
		visit(p.bindings[ns])
	}
	return rules, utilerrors.NewAggregate(errs)
}

// describe names a binding and the subject it applied through, as kube's
// authorizer does in its reasons.
func (b *binding) describe(s *rbacv1.Subject) string {
	subject := fmt.Sprintf("%s %q", s.Kind, s.Name)
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = b.namespace
		}
		subject = fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	if b.namespace == "" {
		return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.name, b.roleRef.Kind, b.roleRef.Name, subject)
	}
	return fmt.Sprintf("RoleBinding %q of %s %q to %s", b.name+"/"+b.namespace, b.roleRef.Kind, b.roleRef.Name, subject)
}

// appliesTo returns the index of the first subject that is u, as kube's
// RBAC: a User by name, a Group by membership, a ServiceAccount by its user
// name (system:serviceaccount:<namespace>:<name>; the namespace defaults to
// the binding's).
func appliesTo(u User, subjects []rbacv1.Subject, bindingNS string) (int, bool) {
	for i := range subjects {
		s := &subjects[i]
		switch s.Kind {
		case rbacv1.UserKind:
			if u.Name == s.Name {
				return i, true
			}
		case rbacv1.GroupKind:
			if slices.Contains(u.Groups, s.Name) {
				return i, true
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNS
			}
			if ns != "" && IsServiceAccount(u.Name, ns, s.Name) {
				return i, true
			}
		}
	}
	return 0, false
}

// ServiceAccountPrefix starts the user names of ServiceAccounts.
const ServiceAccountPrefix = "system:serviceaccount:"

// IsServiceAccount reports whether user is the user name of the
// ServiceAccount ns/name, without building it.
func IsServiceAccount(user, ns, name string) bool {
	rest, ok := strings.CutPrefix(user, ServiceAccountPrefix)
	if !ok || len(rest) != len(ns)+1+len(name) {
		return false
	}
	return strings.HasPrefix(rest, ns) && rest[len(ns)] == ':' && strings.HasSuffix(rest, name)
}

// RoleRef is kube-apiserver's internal form of a role ref, as its
// validation errors quote it (rbac.RoleRef{APIGroup:..., Kind:..., Name:...}).
type RoleRef struct {
	APIGroup string
	Kind     string
	Name     string
}
