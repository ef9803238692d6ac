package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/internal/rbac"
	"kloop.dev/kloop/apiserver/storage"
)

// The RBAC kinds (rbac.authorization.k8s.io/v1: Roles, ClusterRoles,
// RoleBindings, ClusterRoleBindings), served with kube-apiserver's
// validation, and the policy the authorizer (authz.go) reads: a snapshot of
// them rebuilt on each of their writes, read without a lock. ClusterRoles
// with an aggregationRule get their rules on each ClusterRole write, as
// kube-controller-manager's aggregation controller gives them (here
// before the write returns).

var (
	clusterRoleGVR        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	roleGVR               = rbacv1.SchemeGroupVersion.WithResource("roles")
	clusterRoleBindingGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	roleBindingGVR        = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
)

// rbacState holds the RBAC objects as the authorizer sees them.
type rbacState struct {
	mu sync.Mutex // guards objs; held while a policy is built from them and stored
	// objs are the decoded RBAC objects by store resource, namespace and name.
	objs map[rbacKey]any
	// policy is the snapshot of objs the authorizer reads; replaced, never
	// changed.
	policy atomic.Pointer[rbac.Policy]

	aggMu sync.Mutex // held by the goroutine aggregating ClusterRoles
	// aggPending asks the aggregating goroutine for one more round.
	aggPending atomic.Bool
}

type rbacKey struct{ resource, namespace, name string }

// policy returns the current RBAC snapshot.
func (s *Server) policy() *rbac.Policy { return s.rbac.policy.Load() }

// setupRBAC returns the setup of the RBAC kind at gvr (its row in
// kinds.go).
func setupRBAC(gvr schema.GroupVersionResource) func(k *kind) {
	return func(k *kind) {
		sync := func(s *Server, o *storage.Object) { s.syncRBAC(gvr, o) }
		k.nameValidation = func(name string, _ bool) []string { return content.IsPathSegmentName(name) }
		k.afterWrite, k.afterDelete, k.normalize, k.stored = sync, sync, normalizeRBAC, storedRBAC
		switch gvr {
		case roleGVR:
			k.validate = func(o map[string]any) field.ErrorList { return validateRules(o, true) }
			k.columns = []column{createdAtColumn()}
			k.checkWrite = (*Server).checkRoleEscalation
		case clusterRoleGVR:
			k.validate = validateClusterRole
			k.columns = []column{createdAtColumn()}
			k.checkWrite = (*Server).checkRoleEscalation
		case roleBindingGVR:
			k.validate = func(o map[string]any) field.ErrorList { return validateBinding(o, true) }
			k.validateUpdate = validateRoleRefUpdate
			k.columns = bindingColumns("roleBinding", rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"])
			k.checkWrite = (*Server).checkBinding
		case clusterRoleBindingGVR:
			k.validate = func(o map[string]any) field.ErrorList { return validateBinding(o, false) }
			k.validateUpdate = validateRoleRefUpdate
			k.columns = bindingColumns("clusterRoleBinding", rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"])
			k.checkWrite = (*Server).checkBinding
		}
	}
}

// createdAtColumn is the column of kube-apiserver's default Table for kinds
// without a printer (which has no Age).
func createdAtColumn() column {
	return column{def("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]), func(o map[string]any, _ time.Time) any {
		return jsontree.Str(o, "metadata", "creationTimestamp")
	}}
}

// bindingColumns are kube-apiserver's printer columns of RoleBindings and
// ClusterRoleBindings.
func bindingColumns(what, roleRefDoc string) []column {
	subjects := func(kind string) func(o map[string]any, _ time.Time) any {
		return func(o map[string]any, _ time.Time) any {
			var out []string
			ss, _ := o["subjects"].([]any)
			for _, s := range ss {
				if jsontree.Str(s, "kind") != kind {
					continue
				}
				name := jsontree.Str(s, "name")
				if kind == rbacv1.ServiceAccountKind {
					name = jsontree.Str(s, "namespace") + "/" + name
				}
				out = append(out, name)
			}
			return strings.Join(out, ", ")
		}
	}
	wide := func(name, desc string) metav1.TableColumnDefinition {
		return metav1.TableColumnDefinition{Name: name, Type: "string", Priority: 1, Description: desc}
	}
	return []column{
		{def("Role", "string", roleRefDoc), func(o map[string]any, _ time.Time) any {
			return jsontree.Str(o, "roleRef", "kind") + "/" + jsontree.Str(o, "roleRef", "name")
		}},
		ageColumn(),
		{wide("Users", "Users in the "+what), subjects(rbacv1.UserKind)},
		{wide("Groups", "Groups in the "+what), subjects(rbacv1.GroupKind)},
		{wide("ServiceAccounts", "ServiceAccounts in the "+what), subjects(rbacv1.ServiceAccountKind)},
	}
}

// storedRBAC is what kube's storage (protobuf) keeps of an RBAC object:
// no empty rule list. It runs after the field manager, which sees the list.
func storedRBAC(o map[string]any) {
	if rules, ok := o["rules"].([]any); ok && len(rules) == 0 {
		o["rules"] = nil
	}
}

// normalizeRBAC applies kube's defaults of the RBAC kinds (the API group
// of role refs and of User and Group subjects).
func normalizeRBAC(o map[string]any) (map[string]any, error) {
	if ref, ok := o["roleRef"].(map[string]any); ok && jsontree.Str(ref, "apiGroup") == "" {
		ref["apiGroup"] = rbacv1.GroupName
	}
	ss, _ := o["subjects"].([]any)
	for _, s := range ss {
		m, ok := s.(map[string]any)
		if !ok || jsontree.Str(m, "apiGroup") != "" {
			continue
		}
		switch jsontree.Str(m, "kind") {
		case rbacv1.UserKind, rbacv1.GroupKind:
			m["apiGroup"] = rbacv1.GroupName
		}
	}
	return o, nil
}

// validateRules is kube's validation of a Role's or ClusterRole's rules.
func validateRules(o map[string]any, namespaced bool) field.ErrorList {
	rules, err := rulesOf(o)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("rules"), nil, err.Error())}
	}
	var errs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "")) // kube's declarative validation's message
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func validateClusterRole(o map[string]any) field.ErrorList {
	errs := validateRules(o, false)
	raw, ok := o["aggregationRule"].(map[string]any)
	if !ok {
		return errs
	}
	var agg rbacv1.AggregationRule
	if err := fromMap(raw, &agg); err != nil {
		return append(errs, field.Invalid(field.NewPath("aggregationRule"), nil, err.Error()))
	}
	if len(agg.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(field.NewPath("aggregationRule", "clusterRoleSelectors"), "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range agg.ClusterRoleSelectors {
		p := field.NewPath("aggregationRule", "clusterRoleSelectors").Index(i)
		errs = append(errs, metav1validation.ValidateLabelSelector(&agg.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, p)...)
		if sel, err := metav1.LabelSelectorAsSelector(&agg.ClusterRoleSelectors[i]); err != nil {
			errs = append(errs, field.Invalid(p, sel, "invalid label selector."))
		}
	}
	return errs
}

// validateBinding is kube's validation of a RoleBinding's (namespaced) or
// ClusterRoleBinding's role ref and subjects.
func validateBinding(o map[string]any, namespaced bool) field.ErrorList {
	var b struct {
		RoleRef  rbacv1.RoleRef   `json:"roleRef"`
		Subjects []rbacv1.Subject `json:"subjects"`
	}
	if err := fromMap(map[string]any{"roleRef": o["roleRef"], "subjects": o["subjects"]}, &b); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), nil, err.Error())}
	}
	var errs field.ErrorList
	ref := field.NewPath("roleRef")
	if b.RoleRef.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(ref.Child("apiGroup"), b.RoleRef.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if b.RoleRef.Kind != "ClusterRole" && (!namespaced || b.RoleRef.Kind != "Role") {
		errs = append(errs, field.NotSupported(ref.Child("kind"), b.RoleRef.Kind, kinds))
	}
	if b.RoleRef.Name == "" {
		errs = append(errs, field.Required(ref.Child("name"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(b.RoleRef.Name) {
			errs = append(errs, field.Invalid(ref.Child("name"), b.RoleRef.Name, msg))
		}
	}
	for i, s := range b.Subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

// rulesOf decodes the rules of a Role or ClusterRole.
func rulesOf(o map[string]any) ([]rbacv1.PolicyRule, error) {
	var r struct {
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	if raw, ok := o["rules"].([]any); ok {
		if err := fromMap(map[string]any{"rules": raw}, &r); err != nil {
			return nil, err
		}
	}
	return r.Rules, nil
}

// roleRefOf decodes the role ref of a binding.
func roleRefOf(o map[string]any) rbacv1.RoleRef {
	var ref rbacv1.RoleRef
	if m, ok := o["roleRef"].(map[string]any); ok {
		_ = fromMap(m, &ref) // validated: a string field of another type is a decoding error before
	}
	return ref
}

// validateRoleRefUpdate: a binding's role ref cannot change. The value is
// quoted as kube-apiserver quotes its internal type.
func validateRoleRefUpdate(o, old map[string]any) field.ErrorList {
	if jsontree.Equal(o["roleRef"], old["roleRef"]) {
		return nil
	}
	ref := roleRefOf(o)
	return field.ErrorList{field.Invalid(field.NewPath("roleRef"), rbac.RoleRef{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name}, apivalidation.FieldImmutableErrorMsg)}
}

// syncRBAC brings the policy up to date with the stored state of o's
// object (written or deleted), then aggregates ClusterRoles if o is one.
func (s *Server) syncRBAC(gvr schema.GroupVersionResource, o *storage.Object) {
	k := s.reg.get(gvr)
	s.rbac.mu.Lock()
	key := rbacKey{k.storageResource, o.Namespace, o.Name}
	cur, err := s.store.Get(k.storageResource, o.Namespace, o.Name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		delete(s.rbac.objs, key)
	case err != nil:
		s.opts.Logger.Error("apiserver: reading an RBAC object", "resource", k.gvr.Resource, "namespace", o.Namespace, "name", o.Name, "err", err)
	default:
		typed := k.newTyped()
		if err := json.Unmarshal(cur.Data, typed); err != nil {
			s.opts.Logger.Error("apiserver: decoding an RBAC object", "resource", k.gvr.Resource, "namespace", o.Namespace, "name", o.Name, "err", err)
			break
		}
		s.rbac.objs[key] = typed
	}
	s.rbac.policy.Store(s.buildPolicy())
	s.rbac.mu.Unlock()
	if k.gvr == clusterRoleGVR {
		s.aggregateClusterRoles()
	}
}

// buildPolicy indexes the decoded objects; the caller holds rbac.mu.
func (s *Server) buildPolicy() *rbac.Policy {
	var objs rbac.Objects
	for _, o := range s.rbac.objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			objs.ClusterRoles = append(objs.ClusterRoles, o)
		case *rbacv1.Role:
			objs.Roles = append(objs.Roles, o)
		case *rbacv1.ClusterRoleBinding:
			objs.ClusterRoleBindings = append(objs.ClusterRoleBindings, o)
		case *rbacv1.RoleBinding:
			objs.RoleBindings = append(objs.RoleBindings, o)
		}
	}
	return rbac.NewPolicy(objs)
}

// bootstrapRBAC stores kube-apiserver's default ClusterRoles and
// ClusterRoleBindings (see rbac.BootstrapClusterRoles), aggregated. They
// are valid by construction: stored as they are, without the write path's
// checks, and put in the policy as they are.
func (s *Server) bootstrapRBAC() error {
	roles := rbac.BootstrapClusterRoles()
	all := make([]*rbacv1.ClusterRole, len(roles))
	for i := range roles {
		all[i] = &roles[i]
	}
	// Until nothing changes; backwards, the one pass the bootstrap roles
	// need (view, then edit, which selects view, then admin) and its check.
	for changed := true; changed; {
		changed = false
		for i := len(all) - 1; i >= 0; i-- {
			if rules, ok, err := rbac.Aggregate(all[i], all); ok && err == nil && !rbac.RulesEqual(rules, all[i].Rules) {
				all[i].Rules, changed = rules, true
			}
		}
	}
	now := metav1.NewTime(s.opts.Now().UTC().Truncate(time.Second))
	put := func(gvr schema.GroupVersionResource, obj any, om *metav1.ObjectMeta) error {
		k := s.reg.get(gvr)
		om.UID, om.CreationTimestamp = uuid.NewUUID(), now
		om.ManagedFields = bootstrapManagedFields(obj, now)
		encode := func(rev int64) (*storage.Object, error) {
			om.ResourceVersion = formatRV(rev)
			data, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			return &storage.Object{Name: om.Name, UID: string(om.UID), Data: data, APIVersion: k.apiVersion(), Labels: om.Labels,
				Fields: map[string]string{"metadata.name": om.Name, "metadata.namespace": ""}}, nil
		}
		if _, err := s.store.Create(k.storageResource, "", om.Name, encode); err != nil {
			return fmt.Errorf("apiserver: bootstrap %s %s: %w", k.kind, om.Name, err)
		}
		s.rbac.objs[rbacKey{k.storageResource, "", om.Name}] = obj
		return nil
	}
	for _, cr := range all {
		if err := put(clusterRoleGVR, cr, &cr.ObjectMeta); err != nil {
			return err
		}
	}
	bindings := rbac.BootstrapClusterRoleBindings()
	for i := range bindings {
		if err := put(clusterRoleBindingGVR, &bindings[i], &bindings[i].ObjectMeta); err != nil {
			return err
		}
	}
	s.rbac.policy.Store(s.buildPolicy())
	return nil
}

// aggregateClusterRoles sets the rules of every ClusterRole with an
// aggregationRule to what its selectors select, until nothing changes. A
// call while another goroutine aggregates (or from within its own writes)
// leaves that goroutine one more round to do.
func (s *Server) aggregateClusterRoles() {
	s.rbac.aggPending.Store(true)
	for s.rbac.aggPending.Load() {
		if !s.rbac.aggMu.TryLock() {
			return // the holder sees aggPending
		}
		for round := 0; s.rbac.aggPending.Swap(false); round++ {
			if round == 100 {
				s.opts.Logger.Error("apiserver: ClusterRole aggregation does not settle; giving up this round")
				break
			}
			s.aggregateOnce()
		}
		s.rbac.aggMu.Unlock()
	}
}

// aggregateOnce updates the aggregated ClusterRoles whose rules differ from
// their selection, from the current policy's ClusterRoles.
func (s *Server) aggregateOnce() {
	s.rbac.mu.Lock()
	var all []*rbacv1.ClusterRole
	for _, o := range s.rbac.objs {
		if cr, ok := o.(*rbacv1.ClusterRole); ok {
			all = append(all, cr)
		}
	}
	s.rbac.mu.Unlock()
	k := s.reg.get(clusterRoleGVR)
	for _, cr := range all {
		rules, ok, err := rbac.Aggregate(cr, all)
		if !ok || err != nil || rbac.RulesEqual(rules, cr.Rules) {
			continue
		}
		encoded, err := toMap(struct {
			Rules []rbacv1.PolicyRule `json:"rules"`
		}{rules})
		if err != nil {
			continue
		}
		ri := requestInfo{gv: clusterRoleGVR.GroupVersion(), resource: clusterRoleGVR.Resource, name: cr.Name}
		// Recorded as kube's aggregation controller is: a client-go
		// program without a user agent of its own.
		wo := &writeOpts{manage: true, manager: "Go-http-client"}
		_, err = s.update(k, ri, wo, func(cur *storage.Object) (map[string]any, error) {
			obj, err := decodeMap(cur.Data)
			if err != nil {
				return nil, err
			}
			obj["rules"] = encoded["rules"]
			return obj, nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			s.opts.Logger.Error("apiserver: aggregating a ClusterRole", "name", cr.Name, "err", err)
		}
	}
}

// fullAuthority is cluster-admin's: what an aggregationRule may gather.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// checkRoleEscalation is kube's escalation check of a Role or ClusterRole
// being created (old nil) or updated by u in namespace ns: unless u may
// escalate that role, its rules must be among u's own, and an
// aggregationRule needs every right. An update of the fields the garbage
// collector writes alone is not checked.
func (s *Server) checkRoleEscalation(u *identity, k *kind, ns string, obj, old map[string]any) error {
	if old != nil && onlyGCFieldsChange(obj, old) {
		return nil
	}
	a := rbac.Attributes{ResourceRequest: true, Verb: "escalate", APIGroup: rbacv1.GroupName, Resource: k.gvr.Resource, Namespace: ns}
	if old != nil {
		a.Name = jsontree.Str(old, "metadata", "name")
	}
	if s.allows(u, &a) {
		return nil
	}
	rules, err := rulesOf(obj)
	if err != nil {
		return badRequest("%v", err)
	}
	name := jsontree.Str(obj, "metadata", "name")
	ru := rbac.User{Name: u.Name, Groups: u.Groups}
	owner, resolveErr := s.policy().RulesFor(ru, ns, rbac.RegistryErrors(k.gvr.Resource))
	if err := rbac.EscalationError(ru, owner, rules, resolveErr); err != nil {
		return apierrors.NewForbidden(k.groupResource(), name, err)
	}
	if k.gvr == clusterRoleGVR && (hasAggregationRule(obj) || old != nil && hasAggregationRule(old)) {
		if rbac.EscalationError(ru, owner, fullAuthority, resolveErr) != nil {
			return apierrors.NewForbidden(k.groupResource(), name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

func hasAggregationRule(o map[string]any) bool {
	return jsontree.Len(o, "aggregationRule", "clusterRoleSelectors") > 0
}

// checkBinding is kube's check of a RoleBinding or ClusterRoleBinding being
// created or updated by u in namespace ns: u may bind the role (the bind
// verb on it), or holds every rule of it.
func (s *Server) checkBinding(u *identity, k *kind, ns string, obj, old map[string]any) error {
	if old != nil && onlyGCFieldsChange(obj, old) {
		return nil
	}
	ref := roleRefOf(obj)
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName // its default, applied after this check
	}
	a := rbac.Attributes{ResourceRequest: true, Verb: "bind", APIGroup: ref.APIGroup, Name: ref.Name, Namespace: ns}
	switch ref.Kind {
	case "ClusterRole":
		a.Resource = clusterRoleGVR.Resource
	case "Role":
		a.Resource = roleGVR.Resource
	}
	if a.Resource != "" && s.allows(u, &a) {
		return nil
	}
	p := s.policy()
	rules, err := p.RoleRefRules(ref, ns, rbac.RegistryErrors(k.gvr.Resource))
	if err != nil {
		return err
	}
	ru := rbac.User{Name: u.Name, Groups: u.Groups}
	owner, resolveErr := p.RulesFor(ru, ns, rbac.RegistryErrors(k.gvr.Resource))
	if err := rbac.EscalationError(ru, owner, rules, resolveErr); err != nil {
		return apierrors.NewForbidden(k.groupResource(), jsontree.Str(obj, "metadata", "name"), err)
	}
	return nil
}

// onlyGCFieldsChange reports whether obj differs from old in nothing but
// the fields the garbage collector writes (owner references, finalizers),
// and managed fields (kube's IsOnlyMutatingGCFields).
func onlyGCFieldsChange(obj, old map[string]any) bool {
	cp := make(map[string]any, len(obj))
	for k, v := range obj {
		cp[k] = v
	}
	m := make(map[string]any, len(meta(obj)))
	for k, v := range meta(obj) {
		m[k] = v
	}
	om, _ := old["metadata"].(map[string]any)
	for _, f := range []string{"ownerReferences", "finalizers", "selfLink", "managedFields"} {
		if v, ok := om[f]; ok {
			m[f] = v
		} else {
			delete(m, f)
		}
	}
	cp["metadata"] = m
	return jsontree.Equal(cp, old)
}

// checkWrite runs the kind's check of a write by its user (see
// kind.checkWrite).
func (s *Server) checkWrite(k *kind, wo *writeOpts, ns string, obj, old map[string]any) error {
	if k.checkWrite == nil || wo == nil || wo.user == nil || wo.user.masters {
		return nil
	}
	return k.checkWrite(s, wo.user, k, ns, obj, old)
}

// bootstrapManagedFields are the managedFields of a bootstrap ClusterRole
// or ClusterRoleBinding as kube-apiserver records them: its own Update of
// the metadata and content it wrote, and the aggregation controller's of
// an aggregated role's rules. Written by hand (the objects' fields are
// few and their lists atomic) so that New needs no schema.
func bootstrapManagedFields(obj any, at metav1.Time) []metav1.ManagedFieldsEntry {
	set := map[string]any{}
	var om *metav1.ObjectMeta
	aggregated := false
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		om = &o.ObjectMeta
		if o.AggregationRule != nil {
			aggregated = true
			set["f:aggregationRule"] = map[string]any{".": map[string]any{}, "f:clusterRoleSelectors": map[string]any{}}
		} else if len(o.Rules) > 0 {
			set["f:rules"] = map[string]any{}
		}
	case *rbacv1.ClusterRoleBinding:
		om = &o.ObjectMeta
		set["f:roleRef"] = map[string]any{}
		if len(o.Subjects) > 0 {
			set["f:subjects"] = map[string]any{}
		}
	default:
		return nil
	}
	md := map[string]any{}
	for field, m := range map[string]map[string]string{"f:annotations": om.Annotations, "f:labels": om.Labels} {
		if len(m) == 0 {
			continue
		}
		keys := map[string]any{".": map[string]any{}}
		for key := range m {
			keys["f:"+key] = map[string]any{}
		}
		md[field] = keys
	}
	if len(md) > 0 {
		set["f:metadata"] = md
	}
	entry := func(manager string, fields map[string]any) metav1.ManagedFieldsEntry {
		raw, _ := json.Marshal(fields) // maps of maps: cannot fail
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: rbacv1.SchemeGroupVersion.String(),
			Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}
	}
	out := []metav1.ManagedFieldsEntry{entry("kube-apiserver", set)}
	if cr, ok := obj.(*rbacv1.ClusterRole); ok && aggregated && len(cr.Rules) > 0 {
		// Sorted as kube-apiserver sorts them: same operation and second, by manager.
		out = append([]metav1.ManagedFieldsEntry{entry("Go-http-client", map[string]any{"f:rules": map[string]any{}})}, out...)
	}
	return out
}
