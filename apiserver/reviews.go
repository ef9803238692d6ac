package apiserver

import (
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/internal/rbac"
)

// apiAudience is the audience of the server's tokens in TokenReviews:
// kube-apiserver's API audiences default to its ServiceAccount issuer,
// this one in most clusters (and in apiservertest's kube-apiserver).
const apiAudience = "https://kubernetes.default.svc.cluster.local"

// reviewCall is a create of a review kind: the decoded review, who asks,
// and the request's namespace (LocalSubjectAccessReviews).
type reviewCall struct {
	s    *Server
	user *identity
	ns   string
	obj  map[string]any
}

// reviewKinds are the create-only kinds that store nothing and answer
// about users from the same data as authentication and authorization:
// kubectl auth can-i (SelfSubjectAccessReview, SelfSubjectRulesReview for
// --list), kubectl auth whoami (SelfSubjectReview), and the reviews of
// other users and tokens that webhooks and proxies use (SubjectAccessReview,
// LocalSubjectAccessReview, TokenReview).
func reviewKinds() []*kind {
	review := func(g, resource, k string, newTyped func() any, answer func(rc *reviewCall) (map[string]any, error)) *kind {
		return &kind{
			gvr: schema.GroupVersionResource{Group: g, Version: "v1", Resource: resource}, kind: k, newTyped: newTyped,
			singular: strings.ToLower(k), listKind: k + "List", verbs: []string{"create"}, review: answer,
		}
	}
	lsar := review(authorizationv1.GroupName, "localsubjectaccessreviews", "LocalSubjectAccessReview",
		func() any { return &authorizationv1.LocalSubjectAccessReview{} }, localSubjectAccessReview)
	lsar.namespaced = true
	return []*kind{
		review(authorizationv1.GroupName, "selfsubjectaccessreviews", "SelfSubjectAccessReview",
			func() any { return &authorizationv1.SelfSubjectAccessReview{} }, selfSubjectAccessReview),
		review(authorizationv1.GroupName, "selfsubjectrulesreviews", "SelfSubjectRulesReview",
			func() any { return &authorizationv1.SelfSubjectRulesReview{} }, selfSubjectRulesReview),
		review(authorizationv1.GroupName, "subjectaccessreviews", "SubjectAccessReview",
			func() any { return &authorizationv1.SubjectAccessReview{} }, subjectAccessReview),
		lsar,
		review(authenticationv1.GroupName, "selfsubjectreviews", "SelfSubjectReview",
			func() any { return &authenticationv1.SelfSubjectReview{} }, selfSubjectReview),
		review(authenticationv1.GroupName, "tokenreviews", "TokenReview",
			func() any { return &authenticationv1.TokenReview{} }, tokenReview),
	}
}

// reviewMetadata checks that a review's metadata is empty, as
// kube-apiserver requires of access reviews (but for the namespace, when
// allowNamespace).
func reviewMetadata(obj map[string]any, allowNamespace bool) field.ErrorList {
	md, _ := obj["metadata"].(map[string]any)
	n := len(md)
	if _, ok := md["namespace"]; ok && allowNamespace {
		n--
	}
	if n == 0 {
		return nil
	}
	msg := "must be empty"
	if allowNamespace {
		msg = "must be empty except for namespace"
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), md, msg)}
}

// reviewSpec validates the attributes of an access review's spec; self
// reviews have no user or groups to check.
func reviewSpec(obj map[string]any, self bool) field.ErrorList {
	var errs field.ErrorList
	res, nonRes := jsontree.Get(obj, "spec", "resourceAttributes"), jsontree.Get(obj, "spec", "nonResourceAttributes")
	if res != nil && nonRes != nil || res == nil && nonRes == nil {
		// kube-apiserver quotes its internal nonResourceAttributes.
		var v *nonResourceAttributes
		if m, ok := nonRes.(map[string]any); ok {
			v = &nonResourceAttributes{Path: jsontree.Str(m, "path"), Verb: jsontree.Str(m, "verb")}
		}
		errs = append(errs, field.Invalid(field.NewPath("spec"), v, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if !self && jsontree.Str(obj, "spec", "user") == "" && jsontree.Len(obj, "spec", "groups") == 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "user"), "", "at least one of user or group must be specified"))
	}
	return errs
}

func invalidReview(errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName}, "", errs)
}

// nonResourceAttributes is kube-apiserver's internal form of a review's
// nonResourceAttributes, as its validation errors print it.
type nonResourceAttributes struct {
	Path string
	Verb string
}

// reviewAttributes are the request attributes an access review asks about.
func reviewAttributes(obj map[string]any) rbac.Attributes {
	if ra, ok := jsontree.Get(obj, "spec", "resourceAttributes").(map[string]any); ok {
		return rbac.Attributes{
			ResourceRequest: true, Verb: jsontree.Str(ra, "verb"), APIGroup: jsontree.Str(ra, "group"), Resource: jsontree.Str(ra, "resource"),
			Subresource: jsontree.Str(ra, "subresource"), Namespace: jsontree.Str(ra, "namespace"), Name: jsontree.Str(ra, "name"),
		}
	}
	return rbac.Attributes{Verb: jsontree.Str(obj, "spec", "nonResourceAttributes", "verb"), Path: jsontree.Str(obj, "spec", "nonResourceAttributes", "path")}
}

// answerAccess sets the status of an access review: the authorizer's
// decision about u.
func (rc *reviewCall) answerAccess(u *identity) map[string]any {
	a := reviewAttributes(rc.obj)
	allowed, reason := rc.s.decide(u, &a)
	st := map[string]any{"allowed": allowed}
	if reason != "" {
		st["reason"] = reason
	}
	rc.obj["status"] = st
	return rc.obj
}

// requester returns who asks: the user the request is made as.
func (rc *reviewCall) requester() (*identity, error) {
	if rc.user == nil {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	return rc.user, nil
}

func selfSubjectAccessReview(rc *reviewCall) (map[string]any, error) {
	if errs := append(reviewSpec(rc.obj, true), reviewMetadata(rc.obj, false)...); len(errs) > 0 {
		return nil, invalidReview(errs)
	}
	u, err := rc.requester()
	if err != nil {
		return nil, err
	}
	return rc.answerAccess(u), nil
}

// specUser is the user a SubjectAccessReview asks about, as its spec gives
// it (no group added).
func specUser(obj map[string]any) *identity {
	var spec authorizationv1.SubjectAccessReviewSpec
	if m, ok := obj["spec"].(map[string]any); ok {
		_ = fromMap(m, &spec) // decoded through its Go type already
	}
	u := &identity{UserInfo: UserInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}}
	for k, v := range spec.Extra {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[k] = v
	}
	u.masters = slices.Contains(u.Groups, MastersGroup)
	return u
}

func subjectAccessReview(rc *reviewCall) (map[string]any, error) {
	if errs := append(reviewSpec(rc.obj, false), reviewMetadata(rc.obj, false)...); len(errs) > 0 {
		return nil, invalidReview(errs)
	}
	return rc.answerAccess(specUser(rc.obj)), nil
}

func localSubjectAccessReview(rc *reviewCall) (map[string]any, error) {
	m := meta(rc.obj)
	switch ns := jsontree.Str(m, "namespace"); {
	case ns == "":
		m["namespace"] = rc.ns
	case ns != rc.ns:
		return nil, badRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	errs := append(reviewSpec(rc.obj, false), reviewMetadata(rc.obj, true)...)
	if ra, ok := jsontree.Get(rc.obj, "spec", "resourceAttributes").(map[string]any); ok && jsontree.Str(ra, "namespace") != rc.ns {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), jsontree.Str(ra, "namespace"), "must match metadata.namespace"))
	}
	if nra, ok := jsontree.Get(rc.obj, "spec", "nonResourceAttributes").(map[string]any); ok {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), &nonResourceAttributes{Path: jsontree.Str(nra, "path"), Verb: jsontree.Str(nra, "verb")}, "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		return nil, invalidReview(errs)
	}
	return rc.answerAccess(specUser(rc.obj)), nil
}

// selfSubjectRulesReview lists the requester's rules in a namespace, as
// RBAC resolves them (kubectl auth can-i --list).
func selfSubjectRulesReview(rc *reviewCall) (map[string]any, error) {
	u, err := rc.requester()
	if err != nil {
		return nil, err
	}
	ns := jsontree.Str(rc.obj, "spec", "namespace")
	if ns == "" {
		return nil, badRequest("no namespace on request")
	}
	rules, resolveErr := rc.s.policy().RulesFor(rbac.User{Name: u.Name, Groups: u.Groups}, ns, rbac.ListerErrors)
	resourceRules, nonResourceRules := []any{}, []any{}
	strs := func(ss []string) []any {
		out := make([]any, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			rr := map[string]any{"verbs": strs(r.Verbs)}
			if len(r.APIGroups) > 0 {
				rr["apiGroups"] = strs(r.APIGroups)
			}
			rr["resources"] = strs(r.Resources)
			if len(r.ResourceNames) > 0 {
				rr["resourceNames"] = strs(r.ResourceNames)
			}
			resourceRules = append(resourceRules, rr)
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, map[string]any{"verbs": strs(r.Verbs), "nonResourceURLs": strs(r.NonResourceURLs)})
		}
	}
	st := map[string]any{"resourceRules": resourceRules, "nonResourceRules": nonResourceRules, "incomplete": false}
	if resolveErr != nil {
		st["evaluationError"] = resolveErr.Error()
	}
	// As kube-apiserver, the answer carries no spec.
	return map[string]any{"apiVersion": rc.obj["apiVersion"], "kind": rc.obj["kind"], "metadata": map[string]any{}, "spec": map[string]any{}, "status": st}, nil
}

// userInfoJSON is a user as authentication.k8s.io's UserInfo encodes it.
func userInfoJSON(u *UserInfo) map[string]any {
	out := map[string]any{}
	if u.Name != "" {
		out["username"] = u.Name
	}
	if u.UID != "" {
		out["uid"] = u.UID
	}
	if len(u.Groups) > 0 {
		gs := make([]any, len(u.Groups))
		for i, g := range u.Groups {
			gs[i] = g
		}
		out["groups"] = gs
	}
	if len(u.Extra) > 0 {
		extra := map[string]any{}
		for k, vs := range u.Extra {
			v := make([]any, len(vs))
			for i, s := range vs {
				v[i] = s
			}
			extra[k] = v
		}
		out["extra"] = extra
	}
	return out
}

// selfSubjectReview tells the requester who it is (kubectl auth whoami).
func selfSubjectReview(rc *reviewCall) (map[string]any, error) {
	u, err := rc.requester()
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"apiVersion": rc.obj["apiVersion"], "kind": rc.obj["kind"],
		"metadata": map[string]any{"creationTimestamp": rc.s.opts.Now().UTC().Format(time.RFC3339)},
		"status":   map[string]any{"userInfo": userInfoJSON(&u.UserInfo)},
	}, nil
}

// tokenReview authenticates spec.token as a request bearing it would be.
func tokenReview(rc *reviewCall) (map[string]any, error) {
	var spec authenticationv1.TokenReviewSpec
	if m, ok := rc.obj["spec"].(map[string]any); ok {
		if err := fromMap(m, &spec); err != nil {
			return nil, badRequest("%v", err)
		}
	}
	if spec.Token == "" {
		return nil, badRequest("token is required for TokenReview in authentication")
	}
	st := map[string]any{"user": map[string]any{}}
	var u *identity
	if token, ok := bearerToken("Bearer " + spec.Token); ok && (len(spec.Audiences) == 0 || slices.Contains(spec.Audiences, apiAudience)) {
		u = rc.s.authenticateToken(token)
	}
	if u == nil {
		st["error"] = "invalid bearer token"
	} else {
		st["authenticated"] = true
		st["user"] = userInfoJSON(&u.UserInfo)
		st["audiences"] = []any{apiAudience}
	}
	rc.obj["status"] = st
	return rc.obj, nil
}
