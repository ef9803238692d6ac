package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/rbac"
)

// Impersonation (the Impersonate-User, -Group, -Uid and -Extra-<key>
// headers: kubectl --as, client-go's rest.Config.Impersonate), as
// kube-apiserver v1.37 checks it with constrained impersonation on (its
// default): the requester may impersonate in one of five modes, tried in
// turn — the node its ServiceAccount runs on, any node, a ServiceAccount,
// any other user, or the legacy mode of the impersonate verb on users,
// groups, serviceaccounts, uids and userextras — the mode that last worked
// for the requester first. The constrained modes also need the
// impersonate-on:<mode>:<verb> verb on what the request does. A refusal is
// the first mode's that applied. kube-apiserver caches successful checks
// for 10 s; the embedded server checks every request.

// impersonation remembers which mode last worked for each requester.
type impersonation struct {
	mu    sync.Mutex     // guards modes
	modes map[string]int // requester name -> index in impersonationModes
}

// maxImpersonators bounds impersonation.modes; when full it starts again.
const maxImpersonators = 10_000

const nodeUserPrefix = "system:node:"

// Extra keys of ServiceAccount tokens bound to a node.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// impersonationHeaders returns the user the impersonation headers of a
// request ask for, as they are (no defaulting), or nil without
// Impersonate-User; asking for groups, a UID or extra values without a user
// is a 400.
func impersonationHeaders(h http.Header) (*UserInfo, error) {
	name, uid, groups := h.Get(authenticationv1.ImpersonateUserHeader), h.Get(authenticationv1.ImpersonateUIDHeader), h[authenticationv1.ImpersonateGroupHeader]
	if name == "" && uid == "" && len(groups) == 0 && !hasExtraHeader(h) {
		return nil, nil // the usual request, read without allocating
	}
	wanted := &UserInfo{Name: name, UID: uid, Groups: groups}
	for name, values := range h {
		rest, ok := strings.CutPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix)
		if !ok || len(values) == 0 {
			continue
		}
		key := strings.ToLower(rest)
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
		if wanted.Extra == nil {
			wanted.Extra = map[string][]string{}
		}
		wanted.Extra[key] = append(wanted.Extra[key], values...)
	}
	if wanted.Name == "" {
		if wanted.UID != "" || len(wanted.Groups) > 0 || len(wanted.Extra) > 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("requested &user.DefaultInfo{Name:%#v, UID:%#v, Groups:%#v, Extra:%#v} without impersonating a user name",
				wanted.Name, wanted.UID, wanted.Groups, wanted.Extra))
		}
		return nil, nil
	}
	return wanted, nil
}

// impersonationMode is one way of impersonating.
type impersonationMode struct {
	// name is the constrained mode's ("user-info"); "" for legacy
	// impersonation.
	name string
	// applies reports whether the mode can impersonate wanted for u.
	applies func(u *identity, wanted *UserInfo) bool
}

var impersonationModes = []impersonationMode{
	{"associated-node", func(u *identity, w *UserInfo) bool {
		node, ok := nodeName(w.Name)
		return ok && onlyName(w) && strings.HasPrefix(u.Name, rbac.ServiceAccountPrefix) && slices.Equal(u.Extra[nodeNameExtra], []string{node})
	}},
	{"arbitrary-node", func(_ *identity, w *UserInfo) bool {
		_, ok := nodeName(w.Name)
		return ok && onlyName(w)
	}},
	{"serviceaccount", func(_ *identity, w *UserInfo) bool {
		_, _, ok := serviceAccountName(w.Name)
		return ok && onlyName(w)
	}},
	{"user-info", func(_ *identity, w *UserInfo) bool {
		_, node := nodeName(w.Name)
		_, _, sa := serviceAccountName(w.Name)
		return !node && !sa
	}},
	{"", func(*identity, *UserInfo) bool { return true }},
}

func onlyName(w *UserInfo) bool { return w.UID == "" && len(w.Groups) == 0 && len(w.Extra) == 0 }

// nodeName returns the node of a node's user name (system:node:<name>).
func nodeName(user string) (string, bool) {
	name, ok := strings.CutPrefix(user, nodeUserPrefix)
	return name, ok && len(apivalidation.NameIsDNSSubdomain(name, false)) == 0
}

// serviceAccountName splits a ServiceAccount's user name
// (system:serviceaccount:<namespace>:<name>).
func serviceAccountName(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, rbac.ServiceAccountPrefix)
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && !strings.Contains(name, ":") &&
		len(apivalidation.ValidateNamespaceName(ns, false)) == 0 && len(apivalidation.ValidateServiceAccountName(name, false)) == 0
}

// serviceAccountGroups are the groups of a ServiceAccount's user.
func serviceAccountGroups(ns string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
}

// impersonate returns the user u may act as for the request a, or the
// refusal.
func (s *Server) impersonate(u *identity, wanted *UserInfo, a *rbac.Attributes) (*identity, error) {
	s.imp.mu.Lock()
	last, cached := s.imp.modes[u.Name]
	s.imp.mu.Unlock()
	order := make([]int, 0, len(impersonationModes))
	if cached {
		order = append(order, last)
	}
	for i := range impersonationModes {
		if !cached || i != last {
			order = append(order, i)
		}
	}
	var firstErr error
	for _, i := range order {
		got, err := s.impersonateAs(u, wanted, a, &impersonationModes[i])
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if got == nil {
			continue
		}
		s.imp.mu.Lock()
		if len(s.imp.modes) >= maxImpersonators {
			clear(s.imp.modes)
		}
		s.imp.modes[u.Name] = i
		s.imp.mu.Unlock()
		return got, nil
	}
	if firstErr == nil {
		firstErr = forbidden(u.Name, a, "all impersonation modes failed")
	}
	return nil, firstErr
}

// impersonateAs checks one mode: nil, nil when it does not apply.
func (s *Server) impersonateAs(u *identity, wanted *UserInfo, a *rbac.Attributes, m *impersonationMode) (*identity, error) {
	if !m.applies(u, wanted) {
		return nil, nil
	}
	verb, group := "impersonate", ""
	constrained := m.name != ""
	if constrained {
		on := *a
		on.Verb = "impersonate-on:" + m.name + ":" + a.Verb
		if err := s.checkImpersonation(u, &on); err != nil {
			return nil, err
		}
		verb, group = "impersonate:"+m.name, authenticationv1.GroupName
	}
	check := func(resource, ns, name, sub, apiGroup string) error {
		return s.checkImpersonation(u, &rbac.Attributes{ResourceRequest: true, Verb: verb, APIGroup: apiGroup, Resource: resource, Namespace: ns, Name: name, Subresource: sub})
	}
	actual := UserInfo{Name: wanted.Name, UID: wanted.UID, Groups: wanted.Groups, Extra: wanted.Extra}

	// The user name.
	resource, ns, name := "users", "", wanted.Name
	if node, ok := nodeName(wanted.Name); ok && constrained {
		resource, name = "nodes", node
		if m.name == "associated-node" {
			name = "*" // the check holds for every node the requester may run on
		}
		if len(wanted.Groups) > 0 {
			return nil, forbiddenAt(u.Name, verb, group, resource, "", name, "", fmt.Sprintf("when impersonating a node, cannot impersonate groups %q", wanted.Groups))
		}
		actual.Groups = []string{"system:nodes"}
	}
	if saNS, saName, ok := serviceAccountName(wanted.Name); ok {
		resource, ns, name = "serviceaccounts", saNS, saName
		if constrained && len(wanted.Groups) > 0 {
			return nil, forbiddenAt(u.Name, verb, group, resource, ns, name, "", fmt.Sprintf("when impersonating a service account, cannot impersonate groups %q", wanted.Groups))
		}
		if len(wanted.Groups) == 0 {
			actual.Groups = serviceAccountGroups(saNS)
		}
	}
	if err := check(resource, ns, name, "", group); err != nil {
		return nil, err
	}

	if wanted.UID != "" {
		if err := check("uids", "", wanted.UID, "", authenticationv1.GroupName); err != nil {
			return nil, err
		}
	}

	if len(wanted.Groups) > 0 {
		if constrained {
			if slices.Contains(wanted.Groups, "") {
				return nil, forbiddenAt(u.Name, verb, group, "groups", "", "", "", "impersonating the empty string group is not allowed")
			}
			if slices.Contains(wanted.Groups, MastersGroup) {
				return nil, forbiddenAt(u.Name, verb, group, "groups", "", MastersGroup, "", "impersonating the system:masters group is not allowed")
			}
		}
		if !(constrained && len(wanted.Groups) >= 4 && check("groups", "", "*", "", group) == nil) {
			for _, g := range wanted.Groups {
				if err := check("groups", "", g, "", group); err != nil {
					return nil, err
				}
			}
		}
	}

	if len(wanted.Extra) > 0 {
		if constrained {
			if msg := invalidExtra(wanted.Extra); msg != "" {
				return nil, forbiddenAt(u.Name, verb, authenticationv1.GroupName, "userextras", "", "", "", msg)
			}
		}
		if !(constrained && largeExtra(wanted.Extra) && check("userextras", "", "*", "*", authenticationv1.GroupName) == nil) {
			keys := make([]string, 0, len(wanted.Extra))
			for k := range wanted.Extra {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				for _, v := range wanted.Extra[k] {
					if err := check("userextras", "", v, k, authenticationv1.GroupName); err != nil {
						return nil, err
					}
				}
			}
		}
	}

	if actual.Name == AnonymousUser {
		if !slices.Contains(actual.Groups, UnauthenticatedGroup) {
			actual.Groups = append(slices.Clip(actual.Groups), UnauthenticatedGroup)
		}
	}
	return newIdentity(actual), nil
}

// checkImpersonation is one authorization check of impersonation.
func (s *Server) checkImpersonation(u *identity, a *rbac.Attributes) error {
	if ok, reason := s.decide(u, a); !ok {
		return forbidden(u.Name, a, reason)
	}
	return nil
}

func forbiddenAt(user, verb, group, resource, ns, name, sub, reason string) error {
	return forbidden(user, &rbac.Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Namespace: ns, Name: name, Subresource: sub}, reason)
}

// invalidExtra is constrained impersonation's check of extra values.
func invalidExtra(extra map[string][]string) string {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		values := extra[key]
		switch {
		case key == "":
			return "impersonating the empty string key in extra is not allowed"
		case len(utilvalidation.IsDomainPrefixedPath(field.NewPath("extra", "key"), key)) > 0:
			return "impersonating an invalid key in extra is not allowed: " + utilvalidation.IsDomainPrefixedPath(field.NewPath("extra", "key"), key).ToAggregate().Error()
		case key != strings.ToLower(key):
			return fmt.Sprintf("impersonating a non-lowercase key in extra is not allowed: %q", key)
		case len(values) == 0:
			return "impersonating empty values in extra is not allowed"
		case slices.Contains(values, ""):
			return "impersonating the empty string value in extra is not allowed"
		}
	}
	return ""
}

func largeExtra(extra map[string][]string) bool {
	if len(extra) >= 4 {
		return true
	}
	n := 0
	for _, vs := range extra {
		n += len(vs)
	}
	return n >= 4
}

func hasExtraHeader(h http.Header) bool {
	for name := range h {
		if strings.HasPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			return true
		}
	}
	return false
}
