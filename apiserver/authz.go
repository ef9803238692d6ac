package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/rbac"
)

// Authorization, on every request before anything else is read or
// written, as kube-apiserver's filters do it: the request's attributes
// (verb, resource, namespace, name, or path) after its RequestInfoFactory,
// impersonation (impersonate.go), then RBAC (rbac.go) for users outside
// system:masters. Refusals are kube-apiserver's 403 Forbidden.

// initAuth registers the users of the options and starts the RBAC policy
// empty (bootstrapRBAC fills it).
func (s *Server) initAuth() error {
	empty := map[string]*identity{}
	s.users.tokens.Store(&empty)
	users := make(map[string]UserInfo, len(s.opts.Users)+1)
	for t, u := range s.opts.Users {
		users[t] = u
	}
	users[s.opts.Token] = UserInfo{Name: adminUser, UID: adminUser, Groups: []string{MastersGroup}}
	if err := s.users.add(users); err != nil {
		return err
	}
	s.rbac.objs = map[rbacKey]any{}
	s.rbac.policy.Store(rbac.NewPolicy(rbac.Objects{}))
	s.imp.modes = map[string]int{}
	return nil
}

// authorize checks that u (nil: not authenticated) may make request r,
// possibly as another user (impersonation). It returns r with the user the
// request is made as, for the handlers that need it (see userFrom), or the
// refusal: 401 without a user, 400 or 403 for an impersonation refused, 403
// Forbidden for a request RBAC does not allow.
func (s *Server) authorize(r *http.Request, u *identity) (*http.Request, error) {
	if u == nil {
		return nil, apierrors.NewUnauthorized("Unauthorized")
	}
	wanted, err := impersonationHeaders(r.Header)
	if err != nil {
		return nil, err
	}
	if wanted == nil && u.masters {
		return withUser(r, u, s.admissionActive), nil // the usual request: nothing to check
	}
	a := requestAttributes(r)
	if wanted != nil {
		if u, err = s.impersonate(u, wanted, &a); err != nil {
			return nil, err
		}
	}
	if !s.allows(u, &a) {
		_, reason := s.decide(u, &a)
		return nil, forbidden(u.Name, &a, reason)
	}
	return withUser(r, u, s.admissionActive), nil
}

// allows reports whether u may do a, as the authorizer decides it.
func (s *Server) allows(u *identity, a *rbac.Attributes) bool {
	return u.masters || s.policy().Allows(rbac.User{Name: u.Name, Groups: u.Groups}, a)
}

// decide is the authorizer's answer for the access reviews: allowed, and
// the reason as kube-apiserver's authorizer chain gives it.
func (s *Server) decide(u *identity, a *rbac.Attributes) (bool, string) {
	if u.masters {
		return true, ""
	}
	ok, reason := s.policy().Authorize(rbac.User{Name: u.Name, Groups: u.Groups}, a)
	if !ok {
		reason = rbacDenial(reason)
	}
	return ok, reason
}

// rbacDenial is the reason kube-apiserver's authorizer chain gives for a
// request RBAC does not allow: RBAC's own, after the authorizer's name.
func rbacDenial(reason string) string {
	if reason == "" {
		return ""
	}
	return "rbac: " + reason
}

// forbiddenSanitizer keeps a 403's message from looking like HTML, as
// kube-apiserver's.
var forbiddenSanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// forbidden is kube-apiserver's 403 for a request user may not make:
// `pods "p" is forbidden: User "alice" cannot get resource "pods" in API
// group "" in the namespace "ns"`, or `... cannot get path "/x"`.
func forbidden(user string, a *rbac.Attributes, reason string) error {
	var msg string
	switch resource := a.Resource; {
	case !a.ResourceRequest:
		msg = fmt.Sprintf("User %q cannot %s path %q", user, a.Verb, a.Path)
	default:
		if a.Subresource != "" {
			resource += "/" + a.Subresource
		}
		if a.Namespace != "" {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", user, a.Verb, resource, a.APIGroup, a.Namespace)
		} else {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", user, a.Verb, resource, a.APIGroup)
		}
	}
	msg = forbiddenSanitizer.Replace(msg)
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, errors.New(msg))
}

// requestAttributes returns what a request asks, after kube-apiserver's
// RequestInfoFactory: a resource request under /api/<version> or
// /apis/<group>/<version> (namespaces/<ns>/ scoping it; a legacy watch/ or
// proxy/ segment giving the verb; the verb otherwise from the method, get
// without a name being list or watch and delete without one
// deletecollection), or a non-resource request, its verb the method in
// lower case.
func requestAttributes(r *http.Request) rbac.Attributes {
	path := r.URL.Path
	a := rbac.Attributes{Path: path, Verb: strings.ToLower(r.Method)}
	var buf [maxAttributeSegments]string
	parts := leadingSegments(path, &buf)
	if len(parts) < 3 || parts[0] != "api" && parts[0] != "apis" {
		return a
	}
	if parts[0] == "apis" {
		if len(parts) < 4 {
			return a
		}
		a.APIGroup = parts[1]
		parts = parts[1:]
	}
	a.ResourceRequest = true
	parts = parts[2:] // the prefix and the version
	viaPath := false
	switch parts[0] {
	case "watch", "proxy":
		if len(parts) < 2 {
			return a // kube-apiserver cannot tell the resource: left to the router
		}
		a.Verb, parts, viaPath = parts[0], parts[1:], true
	default:
		switch r.Method {
		case http.MethodPost:
			a.Verb = "create"
		case http.MethodGet, http.MethodHead:
			a.Verb = "get"
		case http.MethodPut:
			a.Verb = "update"
		case http.MethodPatch:
			a.Verb = "patch"
		case http.MethodDelete:
			a.Verb = "delete"
		default:
			a.Verb = ""
		}
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		a.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	if len(parts) >= 3 && a.Verb != "proxy" {
		a.Subresource = parts[2]
	}
	if len(parts) >= 2 {
		a.Name = parts[1]
	}
	a.Resource = parts[0]
	if a.Name == "" && a.Verb == "get" {
		q := r.URL.Query()
		a.Verb = "list"
		if boolParam(q, "watch") {
			a.Verb = "watch"
		}
		if !viaPath && listParamsDecode(q) {
			if sel, err := fields.ParseSelector(q.Get("fieldSelector")); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(name)) == 0 {
					a.Name = name
				}
			}
		}
	}
	if a.Name == "" && a.Verb == "delete" {
		a.Verb = "deletecollection"
	}
	return a
}

// maxAttributeSegments is how many segments of a path can make its
// attributes: /apis/<group>/<version>/watch/namespaces/<ns>/<resource>/<name>/<subresource>.
const maxAttributeSegments = 9

// leadingSegments is splitPath of the first segments of path (those that
// fit in buf), without allocating.
func leadingSegments(path string, buf *[maxAttributeSegments]string) []string {
	path = strings.Trim(path, "/")
	n := 0
	for path != "" && n < len(buf) {
		seg, rest, _ := strings.Cut(path, "/")
		buf[n], path = seg, rest
		n++
	}
	return buf[:n]
}

// listParamsDecode reports whether kube-apiserver's decoding of the list
// options of a query succeeds (its RequestInfo takes the name of a list
// from its field selector only then).
func listParamsDecode(q url.Values) bool {
	for _, p := range []string{"limit", "timeoutSeconds"} {
		if vs, ok := q[p]; ok && len(vs) > 0 {
			if _, err := strconv.ParseInt(vs[0], 10, 64); err != nil {
				return false
			}
		}
	}
	if vs, ok := q["labelSelector"]; ok && len(vs) > 0 {
		if _, err := labels.Parse(vs[0]); err != nil {
			return false
		}
	}
	if vs, ok := q["fieldSelector"]; ok && len(vs) > 0 {
		if _, err := fields.ParseSelector(vs[0]); err != nil {
			return false
		}
	}
	return true
}

type userKey struct{}

// withUser attaches the user a request is made as to it, for the handlers
// that read it: the access and identity reviews, the writes of the RBAC
// kinds, CertificateSigningRequests' creates, and, when admission webhooks
// are configured (admission reports it), every write (userFrom). Other
// requests are left as they are, sparing the copy of the request.
func withUser(r *http.Request, u *identity, admission func() bool) *http.Request {
	rest, ok := strings.CutPrefix(r.URL.Path, "/apis/")
	write := r.Method != http.MethodGet && r.Method != http.MethodHead && admission()
	if !write && (!ok || !strings.HasPrefix(rest, "authorization.k8s.io/") && !strings.HasPrefix(rest, "authentication.k8s.io/") && !strings.HasPrefix(rest, "rbac.authorization.k8s.io/") &&
		!strings.HasPrefix(rest, "certificates.k8s.io/")) {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), userKey{}, u))
}

// userFrom returns the user a request is made as, if withUser attached
// it; nil otherwise.
func userFrom(r *http.Request) *identity {
	u, _ := r.Context().Value(userKey{}).(*identity)
	return u
}
