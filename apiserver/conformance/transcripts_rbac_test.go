package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// rbacTranscripts: who may do what. Users authenticate as themselves
// (apiservertest's ConfigFor: a token on the embedded server, a client
// certificate on the real one), and the administrator makes their Roles
// and bindings. kube-apiserver's RBAC reads its objects through informers,
// a moment after their write: before a user's first request under new
// rules, await polls (unrecorded) until the server applies them.
var rbacTranscripts = []transcript{
	{"rbac-role-in-namespace", func(tr *T) {
		tr.Post(roles, role("reader",
			rbacRule(`"get","list","watch"`, `""`, `"pods"`),
			rbacRule(`"get","list"`, `""`, `"configmaps"`, `"a"`),
		)).Want(http.StatusCreated)
		tr.Post(roleBindings, binding("reader", "Role", "reader", userSubject("alice"))).Want(http.StatusCreated)
		alice := tr.user("alice", "devs")
		tr.await(alice, true, `{"namespace":"{ns}","verb":"list","resource":"pods"}`)
		tr.as(alice, func() {
			tr.Get(pods).Want(http.StatusOK)
			tr.Post(pods, podBody).Want(http.StatusForbidden)
			tr.Delete(pods, "").Want(http.StatusForbidden) // deletecollection
			tr.Get("/api/v1/namespaces/default/pods").Want(http.StatusForbidden)
			tr.Get("/api/v1/pods").Want(http.StatusForbidden)
			tr.Get("/api/v1/namespaces").Want(http.StatusForbidden)
			tr.Get(deploys + "/d").Want(http.StatusForbidden)
			// Authorization comes before routing: no 404 for what one may
			// not see.
			tr.Get("/api/v1/namespaces/{ns}/widgets").Want(http.StatusForbidden)
			tr.Get("/apis/nothing.example.com/v1/namespaces/{ns}/things/x").Want(http.StatusForbidden)
			// resourceNames: that name only; a list by metadata.name is
			// a request for that name.
			tr.Get(cms + "/a").Want(http.StatusNotFound)
			tr.Get(cms + "/b").Want(http.StatusForbidden)
			tr.Get(cms).Want(http.StatusForbidden)
			tr.Get(cms + "?fieldSelector=metadata.name%3Da").Want(http.StatusOK)
			tr.Get(cms + "?fieldSelector=metadata.name%3Db").Want(http.StatusForbidden)
			tr.Put(cms+"/a", configMap("a", "")).Want(http.StatusForbidden)
		})
	}},
	{"rbac-subresources", func(tr *T) {
		tr.Post(deploys, deployBody).Want(http.StatusCreated)
		tr.Post(roles, role("status-writer",
			rbacRule(`"get","patch"`, `"apps"`, `"deployments/status"`),
			rbacRule(`"get"`, `"*"`, `"*/scale"`),
			rbacRule(`"get"`, `""`, `"pods/log"`),
		)).Want(http.StatusCreated)
		tr.Post(roleBindings, binding("status-writer", "Role", "status-writer", userSubject("sam"))).Want(http.StatusCreated)
		sam := tr.user("sam")
		tr.await(sam, true, `{"namespace":"{ns}","verb":"patch","group":"apps","resource":"deployments","subresource":"status","name":"d"}`)
		tr.as(sam, func() {
			tr.Patch(deploys+"/d/status", "merge", `{"status":{"observedGeneration":1}}`).Want(http.StatusOK)
			tr.Patch(deploys+"/d", "merge", `{"spec":{"replicas":2}}`).Want(http.StatusForbidden)
			tr.Get(deploys + "/d").Want(http.StatusForbidden)
			tr.Get(deploys + "/d/status").Want(http.StatusOK)
			tr.Get(deploys + "/d/scale").Want(http.StatusOK)
			tr.Put(deploys+"/d/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":5}}`).Want(http.StatusForbidden)
			tr.Get(pods + "/p").Want(http.StatusForbidden)
			for _, a := range []string{
				`{"namespace":"{ns}","verb":"get","resource":"pods","subresource":"log","name":"p"}`,
				`{"namespace":"{ns}","verb":"get","resource":"pods","name":"p"}`,
				`{"namespace":"{ns}","verb":"get","group":"apps","resource":"replicasets","subresource":"scale"}`,
				`{"namespace":"{ns}","verb":"update","group":"apps","resource":"deployments","subresource":"scale"}`,
			} {
				tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":`+a+`}}`).Want(http.StatusCreated)
			}
		})
	}},
	{"rbac-non-resource-urls", func(tr *T) {
		tr.Post(clusterRoles, clusterRole("{ns}-metrics", rbacURLRule(`"get"`, `"/metrics"`, `"/logs/*"`))).Want(http.StatusCreated)
		tr.Post(clusterRoleBindings, clusterBinding("{ns}-metrics", "{ns}-metrics", userSubject("mona"))).Want(http.StatusCreated)
		defer tr.cleanup(clusterRoles+"/{ns}-metrics", clusterRoleBindings+"/{ns}-metrics")
		mona, nina := tr.user("mona"), tr.user("nina")
		tr.await(mona, true, `nonResource:{"path":"/logs/x","verb":"get"}`)
		for _, u := range []*rest.Config{mona, nina} {
			tr.as(u, func() {
				tr.Get("/readyz").Want(http.StatusOK)
				for _, a := range []string{`{"path":"/metrics","verb":"get"}`, `{"path":"/logs/kube-apiserver.log","verb":"get"}`, `{"path":"/logs","verb":"get"}`, `{"path":"/api","verb":"get"}`, `{"path":"/api","verb":"post"}`} {
					tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":`+a+`}}`).Want(http.StatusCreated)
				}
			})
		}
		tr.as(nina, func() {
			tr.Get("/metrics").Want(http.StatusForbidden)
			tr.Get("/logs/").Want(http.StatusForbidden)
			tr.Do(http.MethodPost, "/version", "application/json", `{}`).Want(http.StatusForbidden)
		})
	}},
	{"rbac-bootstrap-and-aggregation", func(tr *T) {
		// kube-apiserver's default roles; admin, edit and view aggregate
		// the system:aggregate-to-* roles (and each other).
		for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:aggregate-to-view", "system:discovery", "system:basic-user", "system:public-info-viewer", "system:auth-delegator"} {
			tr.Get(clusterRoles + "/" + name).Want(http.StatusOK)
		}
		for _, name := range []string{"cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer"} {
			tr.Get(clusterRoleBindings + "/" + name).Want(http.StatusOK)
		}
		// A user bound to view reads, does not write, and sees no secrets.
		tr.Post(roleBindings, binding("viewers", "ClusterRole", "view", userSubject("vic"))).Want(http.StatusCreated)
		vic := tr.user("vic")
		tr.await(vic, true, `{"namespace":"{ns}","verb":"list","group":"apps","resource":"deployments"}`)
		tr.as(vic, func() {
			tr.Get(deploys).Want(http.StatusOK)
			tr.Get(cms).Want(http.StatusOK)
			tr.Get(secrets).Want(http.StatusForbidden)
			tr.Post(cms, configMap("x", "")).Want(http.StatusForbidden)
		})
		// An aggregationRule needs every right, even with write access to
		// ClusterRoles.
		tr.Post(clusterRoles, clusterRole("{ns}-cr-writer", rbacRule(`"create","get"`, `"rbac.authorization.k8s.io"`, `"clusterroles"`))).Want(http.StatusCreated)
		tr.Post(clusterRoleBindings, clusterBinding("{ns}-cr-writer", "{ns}-cr-writer", userSubject("walt"))).Want(http.StatusCreated)
		defer tr.cleanup(clusterRoles+"/{ns}-cr-writer", clusterRoleBindings+"/{ns}-cr-writer")
		walt := tr.user("walt")
		tr.await(walt, true, `{"verb":"create","group":"rbac.authorization.k8s.io","resource":"clusterroles"}`)
		tr.as(walt, func() {
			tr.Post(clusterRoles, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"{ns}-agg"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"x":"y"}}]}}`).Want(http.StatusForbidden)
			tr.Post(clusterRoles, clusterRole("{ns}-wider", rbacRule(`"get"`, `""`, `"secrets"`))).Want(http.StatusForbidden)
			tr.Post(clusterRoles, clusterRole("{ns}-within", rbacRule(`"get"`, `"rbac.authorization.k8s.io"`, `"clusterroles"`))).Want(http.StatusCreated)
		})
		defer tr.cleanup(clusterRoles + "/{ns}-within")
	}},
	{"rbac-escalation", func(tr *T) {
		tr.Post(roles, role("role-admin",
			rbacRule(`"create","update","get"`, `"rbac.authorization.k8s.io"`, `"roles","rolebindings"`),
			rbacRule(`"get","list"`, `""`, `"pods"`),
		)).Want(http.StatusCreated)
		tr.Post(roleBindings, binding("role-admin", "Role", "role-admin", userSubject("carol"))).Want(http.StatusCreated)
		carol := tr.user("carol", "ops")
		tr.await(carol, true, `{"namespace":"{ns}","verb":"create","group":"rbac.authorization.k8s.io","resource":"roles"}`)
		tr.as(carol, func() {
			tr.Post(roles, role("within", rbacRule(`"get"`, `""`, `"pods"`))).Want(http.StatusCreated)
			tr.Post(roles, role("beyond", rbacRule(`"get","create","delete"`, `""`, `"pods","secrets"`), rbacRule(`"get"`, `"apps"`, `"deployments"`, `"d"`))).Want(http.StatusForbidden)
			tr.Post(roles+"?dryRun=All", role("beyond", rbacRule(`"*"`, `""`, `"pods"`))).Want(http.StatusForbidden)
			tr.Put(roles+"/within", role("within", rbacRule(`"*"`, `""`, `"pods"`))).Want(http.StatusForbidden)
			tr.Put(roles+"/within", role("within", rbacRule(`"get","list"`, `""`, `"pods"`))).Want(http.StatusOK)
			tr.Post(roleBindings, binding("dave-within", "Role", "within", userSubject("dave"))).Want(http.StatusCreated)
			tr.Post(roleBindings, binding("dave-edit", "ClusterRole", "system:auth-delegator", userSubject("dave"))).Want(http.StatusForbidden)
			tr.Post(roleBindings, binding("dave-missing", "Role", "missing", userSubject("dave"))).Want(http.StatusNotFound)
			// Invalid, but refused first.
			tr.Post(roles, role("bad", rbacRule(`"*"`, `""`, `"secrets"`), `{"apiGroups":[""],"resources":["pods"]}`)).Want(http.StatusForbidden)
		})
		// The bind verb on a role; the escalate verb on roles.
		tr.Post(roles, role("binder",
			rbacRule(`"bind"`, `"rbac.authorization.k8s.io"`, `"clusterroles"`, `"system:auth-delegator"`),
			rbacRule(`"escalate"`, `"rbac.authorization.k8s.io"`, `"roles"`),
		)).Want(http.StatusCreated)
		tr.Post(roleBindings, binding("binder", "Role", "binder", userSubject("carol"))).Want(http.StatusCreated)
		tr.await(carol, true, `{"namespace":"{ns}","verb":"escalate","group":"rbac.authorization.k8s.io","resource":"roles"}`)
		tr.as(carol, func() {
			tr.Post(roleBindings, binding("dave-edit", "ClusterRole", "system:auth-delegator", userSubject("dave"))).Want(http.StatusCreated)
			tr.Post(roles, role("beyond", rbacRule(`"*"`, `"*"`, `"*"`))).Want(http.StatusCreated)
		})
	}},
	{"rbac-validation", func(tr *T) {
		tr.Post(roles, role("no-verbs", `{"apiGroups":[""],"resources":["pods"]}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(roles, role("no-resources", `{"verbs":["get"],"apiGroups":[""]}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(roles, role("urls", rbacURLRule(`"get"`, `"/healthz"`))).Want(http.StatusUnprocessableEntity)
		tr.Post(clusterRoles, clusterRole("{ns}-mixed", `{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"nonResourceURLs":["/x"]}`)).Want(http.StatusUnprocessableEntity)
		tr.Post(clusterRoles, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"{ns}-agg"},"aggregationRule":{"clusterRoleSelectors":[]}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(roles, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"a/b"},"rules":[]}`).Want(http.StatusUnprocessableEntity)
		tr.Post(roles, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"system:empty"},"rules":[]}`).Want(http.StatusCreated)
		tr.Get(roles + "/system:empty").Want(http.StatusOK)
		tr.Post(roleBindings, binding("kind", "Widget", "x", userSubject("u"))).Want(http.StatusUnprocessableEntity)
		tr.Post(roleBindings, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"group"},"roleRef":{"apiGroup":"example.com","kind":"Role","name":"x"},"subjects":[{"kind":"Robot","name":"r"},{"kind":"ServiceAccount","name":"Bad_Name","apiGroup":"x"},{"kind":"User","name":""}]}`).Want(http.StatusUnprocessableEntity)
		tr.Post(clusterRoleBindings, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"{ns}-crb"},"roleRef":{"kind":"Role","name":"x"},"subjects":[{"kind":"ServiceAccount","name":"sa"}]}`).Want(http.StatusUnprocessableEntity)
		tr.Post(roleBindings, binding("rb", "Role", "system:empty", userSubject("u"), `{"kind":"Group","name":"g"}`, `{"kind":"ServiceAccount","name":"sa"}`)).Want(http.StatusCreated)
		tr.Patch(roleBindings+"/rb", "merge", `{"roleRef":{"name":"other"}}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(roleBindings+"/rb", "merge", `{"subjects":[{"kind":"User","name":"v"}]}`).Want(http.StatusOK)
		tr.GetTable(roleBindings).Want(http.StatusOK)
		tr.GetTable(roles).Want(http.StatusOK)
		tr.GetTable(clusterRoleBindings + "/system:basic-user").Want(http.StatusOK)
	}},
	{"impersonation", func(tr *T) {
		admin := tr.fx.env.Config()
		// The administrator acts as anyone (kubectl --as, --as-group,
		// --as-uid); an impersonated user is in system:authenticated unless
		// it asks for system:unauthenticated.
		for _, imp := range []rest.ImpersonationConfig{
			{UserName: "bob"},
			{UserName: "bob", UID: "b-1", Groups: []string{"qa", "system:authenticated"}, Extra: map[string][]string{"example.com/scope": {"a", "b"}, "reason": {"test"}}},
			{UserName: "system:serviceaccount:{ns}:op"},
			{UserName: "system:serviceaccount:{ns}:op", Groups: []string{"g"}},
			{UserName: "system:node:n1"},
			{UserName: "bob", Groups: []string{"system:masters"}},
		} {
			tr.as(impersonating(tr, admin, imp), func() {
				tr.Post(selfSubjectReviews, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`).Want(http.StatusCreated)
			})
		}
		tr.as(impersonating(tr, admin, rest.ImpersonationConfig{UserName: "bob", Groups: []string{"system:unauthenticated"}}), func() {
			tr.Post(selfSubjectReviews, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`).Want(http.StatusForbidden)
		})
		tr.as(impersonating(tr, admin, rest.ImpersonationConfig{UserName: "system:anonymous"}), func() {
			tr.Get(cms).Want(http.StatusForbidden)
		})
		// Groups, a UID or extra values without a user: 400.
		tr.withHeaders(map[string]string{"Impersonate-Group": "qa"}, func() { tr.Get(cms).Want(http.StatusBadRequest) })
		tr.withHeaders(map[string]string{"Impersonate-Uid": "u", "Impersonate-Extra-A%2Fb": "v"}, func() { tr.Get(cms).Want(http.StatusBadRequest) })

		// Anyone else needs the right to.
		frank := tr.user("frank")
		tr.as(frank, func() {
			tr.Get(deploys).Want(http.StatusForbidden)
		})
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "bob"}), func() {
			tr.Get(cms).Want(http.StatusForbidden)
			tr.Get("/version").Want(http.StatusForbidden)
		})
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "system:serviceaccount:{ns}:op"}), func() {
			tr.Get(cms).Want(http.StatusForbidden)
		})
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "system:node:n1"}), func() {
			tr.Get(cms).Want(http.StatusForbidden)
		})
		// The impersonate verb on users named bob (legacy impersonation),
		// and bob's own rights for the request.
		tr.Post(clusterRoles, clusterRole("{ns}-imp", rbacRule(`"impersonate"`, `""`, `"users"`, `"bob"`))).Want(http.StatusCreated)
		tr.Post(clusterRoleBindings, clusterBinding("{ns}-imp", "{ns}-imp", userSubject("frank"))).Want(http.StatusCreated)
		defer tr.cleanup(clusterRoles+"/{ns}-imp", clusterRoleBindings+"/{ns}-imp")
		tr.Post(roles, role("bob", rbacRule(`"list"`, `""`, `"configmaps"`))).Want(http.StatusCreated)
		tr.Post(roleBindings, binding("bob", "Role", "bob", userSubject("bob"))).Want(http.StatusCreated)
		tr.await(frank, true, `{"verb":"impersonate","resource":"users","name":"bob"}`)
		tr.await(impersonating(tr, admin, rest.ImpersonationConfig{UserName: "bob"}), true, `{"namespace":"{ns}","verb":"list","resource":"configmaps"}`)
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "bob"}), func() {
			tr.Get(cms).Want(http.StatusOK)
			tr.Get(secrets).Want(http.StatusForbidden)
			tr.Post(selfSubjectReviews, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`).Want(http.StatusCreated)
		})
		// Legacy impersonation worked for frank: it is tried first, its
		// refusal answers.
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "gina"}), func() { tr.Get(cms).Want(http.StatusForbidden) })
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "bob", Groups: []string{"qa"}}), func() { tr.Get(cms).Want(http.StatusForbidden) })
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "bob", UID: "1"}), func() { tr.Get(cms).Want(http.StatusForbidden) })
		tr.as(impersonating(tr, frank, rest.ImpersonationConfig{UserName: "bob", Extra: map[string][]string{"k": {"v"}}}), func() { tr.Get(cms).Want(http.StatusForbidden) })
	}},
	{"access-reviews-rbac", func(tr *T) {
		tr.Post(roles, role("reader", rbacRule(`"get","list"`, `""`, `"pods"`), rbacRule(`"get"`, `""`, `"secrets"`, `"s1"`, `"s2"`))).Want(http.StatusCreated)
		tr.Post(roleBindings, binding("reader", "Role", "reader", userSubject("rita"), `{"kind":"Group","name":"readers"}`)).Want(http.StatusCreated)
		tr.Post(roleBindings, binding("missing", "Role", "missing", userSubject("rita"))).Want(http.StatusCreated)
		rita := tr.user("rita")
		tr.await(rita, true, `{"namespace":"{ns}","verb":"list","resource":"pods"}`)
		tr.as(rita, func() {
			// kubectl auth can-i.
			for _, a := range []string{
				`{"namespace":"{ns}","verb":"list","resource":"pods"}`,
				`{"namespace":"{ns}","verb":"delete","resource":"pods","name":"p"}`,
				`{"namespace":"{ns}","verb":"get","resource":"secrets","name":"s2"}`,
				`{"namespace":"{ns}","verb":"list","resource":"secrets"}`,
				`{"verb":"list","resource":"pods"}`,
			} {
				tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":`+a+`}}`).Want(http.StatusCreated)
			}
			tr.Post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/api","verb":"get"}}}`).Want(http.StatusCreated)
			// kubectl auth can-i --list; the rules' order is the
			// authorizer's, which on kube-apiserver is its informers'.
			tr.rulesReview(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"{ns}"}}`, http.StatusCreated)
			tr.rulesReview(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}`, http.StatusBadRequest)
			// Reviews of others need their own rights.
			tr.Post(sar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"rita","resourceAttributes":{"verb":"get","resource":"pods"}}}`).Want(http.StatusForbidden)
			tr.Post(tokenReviews, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}`).Want(http.StatusForbidden)
		})
		// The administrator's reviews of others.
		for _, tc := range []struct {
			spec string
			code int
		}{
			{`{"user":"rita","resourceAttributes":{"namespace":"{ns}","verb":"list","resource":"pods"}}`, http.StatusCreated},
			{`{"user":"rick","groups":["readers"],"resourceAttributes":{"namespace":"{ns}","verb":"get","resource":"pods","name":"p"}}`, http.StatusCreated},
			{`{"user":"rick","resourceAttributes":{"namespace":"{ns}","verb":"get","resource":"pods"}}`, http.StatusCreated},
			{`{"user":"system:serviceaccount:{ns}:sa","resourceAttributes":{"namespace":"{ns}","verb":"get","resource":"pods"}}`, http.StatusCreated},
			{`{"groups":["system:masters"],"resourceAttributes":{"verb":"delete","resource":"nodes"}}`, http.StatusCreated},
			{`{"user":"rita","nonResourceAttributes":{"path":"/api","verb":"get"}}`, http.StatusCreated},
			{`{"user":"rita","groups":["system:authenticated"],"nonResourceAttributes":{"path":"/apis/apps","verb":"get"}}`, http.StatusCreated},
			{`{"resourceAttributes":{"verb":"get","resource":"pods"}}`, http.StatusUnprocessableEntity},
			{`{"user":"rita"}`, http.StatusUnprocessableEntity},
		} {
			tr.Post(sar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":`+tc.spec+`}`).Want(tc.code)
		}
		const lsar = "/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews"
		tr.Post(lsar, `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"rita","resourceAttributes":{"namespace":"{ns}","verb":"list","resource":"pods"}}}`).Want(http.StatusCreated)
		tr.Post(lsar, `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"rita","resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}}}`).Want(http.StatusUnprocessableEntity)
		tr.Post(lsar, `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"rita","nonResourceAttributes":{"path":"/api","verb":"get"}}}`).Want(http.StatusUnprocessableEntity)
		// TokenReview answers from the server's tokens.
		tr.tokenReview(tr.fx.env.Config().BearerToken, http.StatusCreated)
		tr.tokenReview("not-a-token", http.StatusCreated)
		tr.Post(tokenReviews, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x","audiences":["elsewhere"]}}`).Want(http.StatusCreated)
		tr.Post(tokenReviews, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}`).Want(http.StatusBadRequest)
	}},
}

// Paths of the RBAC kinds and reviews.
const (
	roles               = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"
	roleBindings        = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"
	clusterRoles        = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	clusterRoleBindings = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
	ssar                = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	sar                 = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
	ssrr                = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
	selfSubjectReviews  = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	tokenReviews        = "/apis/authentication.k8s.io/v1/tokenreviews"
)

// rbacRule is a resource rule; the arguments are JSON list contents.
func rbacRule(verbs, groups, resources string, names ...string) string {
	r := `{"verbs":[` + verbs + `],"apiGroups":[` + groups + `],"resources":[` + resources + `]`
	if len(names) > 0 {
		r += `,"resourceNames":[` + strings.Join(names, ",") + `]`
	}
	return r + "}"
}

func rbacURLRule(verbs string, urls ...string) string {
	return `{"verbs":[` + verbs + `],"nonResourceURLs":[` + strings.Join(urls, ",") + `]}`
}

func role(name string, rules ...string) string {
	return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"` + name + `"},"rules":[` + strings.Join(rules, ",") + `]}`
}

func clusterRole(name string, rules ...string) string {
	return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + name + `"},"rules":[` + strings.Join(rules, ",") + `]}`
}

func userSubject(name string) string { return `{"kind":"User","name":"` + name + `"}` }

func binding(name, kind, ref string, subjects ...string) string {
	return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + name + `"},"roleRef":{"kind":"` + kind + `","name":"` + ref + `"},"subjects":[` + strings.Join(subjects, ",") + `]}`
}

func clusterBinding(name, ref string, subjects ...string) string {
	return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"` + name + `"},"roleRef":{"kind":"ClusterRole","name":"` + ref + `","apiGroup":"rbac.authorization.k8s.io"},"subjects":[` + strings.Join(subjects, ",") + `]}`
}

// user returns a client configuration authenticating as a user of that
// name and groups.
func (tr *T) user(name string, groups ...string) *rest.Config {
	tr.t.Helper()
	return tr.fx.env.ConfigFor(apiservertest.UserInfo{Name: name, Groups: groups})
}

// impersonating returns cfg acting as another user ({ns} expanded).
func impersonating(tr *T, cfg *rest.Config, imp rest.ImpersonationConfig) *rest.Config {
	c := rest.CopyConfig(cfg)
	imp.UserName = tr.expand(imp.UserName)
	c.Impersonate = imp
	return c
}

// as runs f with tr's requests made with cfg's credentials.
func (tr *T) as(cfg *rest.Config, f func()) {
	tr.t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		tr.t.Fatalf("%s: %v", tr.fx.target, err)
	}
	old := tr.fx.client
	tr.fx.client = client
	defer func() { tr.fx.client = old }()
	f()
}

// withHeaders runs f with tr's requests carrying extra headers.
func (tr *T) withHeaders(h map[string]string, f func()) {
	tr.t.Helper()
	old := tr.fx.client
	tr.fx.client = &http.Client{Transport: headerAdder{h: h, next: old.Transport}}
	defer func() { tr.fx.client = old }()
	f()
}

type headerAdder struct {
	h    map[string]string
	next http.RoundTripper
}

func (a headerAdder) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range a.h {
		r.Header.Set(k, v)
	}
	return a.next.RoundTrip(r)
}

// await polls, without recording, until cfg's user may (allowed) or may
// not do what attrs describe (a review's resourceAttributes; with the
// prefix "nonResource:", its nonResourceAttributes).
func (tr *T) await(cfg *rest.Config, allowed bool, attrs string) {
	tr.t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		tr.t.Fatal(err)
	}
	field := "resourceAttributes"
	if rest, ok := strings.CutPrefix(attrs, "nonResource:"); ok {
		field, attrs = "nonResourceAttributes", rest
	}
	body := tr.expand(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"` + field + `":` + attrs + `}}`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(tr.ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, tr.fx.host+ssar, strings.NewReader(body))
		if err != nil {
			cancel()
			tr.t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		var got struct {
			Status struct {
				Allowed bool `json:"allowed"`
			} `json:"status"`
		}
		resp, err := client.Do(req)
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated && json.Unmarshal(raw, &got) == nil && got.Status.Allowed == allowed {
				cancel()
				return
			}
		}
		cancel()
		if time.Now().After(deadline) {
			tr.t.Fatalf("%s: %s is not allowed=%v after 30 s", tr.fx.target, attrs, allowed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cleanup deletes cluster-scoped objects of the transcript (the real
// server outlives it), unrecorded.
func (tr *T) cleanup(paths ...string) {
	tr.t.Helper()
	for _, p := range paths {
		req, err := http.NewRequestWithContext(tr.ctx, http.MethodDelete, tr.fx.host+tr.expand(p), nil)
		if err != nil {
			tr.t.Fatal(err)
		}
		if resp, err := tr.fx.client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// rulesReview posts a SelfSubjectRulesReview and records it with its rules
// sorted: kube-apiserver lists them in the order its informers' caches
// give the bindings, which is a Go map's.
func (tr *T) rulesReview(body string, code int) {
	tr.t.Helper()
	tr.Post(ssrr, body).Want(code)
	last := &tr.log[len(tr.log)-1]
	st, _ := last.Body.(map[string]any)["status"].(map[string]any)
	for _, key := range []string{"resourceRules", "nonResourceRules"} {
		rules, _ := st[key].([]any)
		slices.SortFunc(rules, func(a, b any) int {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			return bytes.Compare(ja, jb)
		})
	}
}

// tokenReview posts a TokenReview of token and records it with the token
// (each server's own) replaced by "<token>".
func (tr *T) tokenReview(token string, code int) {
	tr.t.Helper()
	tr.Post(tokenReviews, fmt.Sprintf(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":%q}}`, token)).Want(code)
	last := &tr.log[len(tr.log)-1]
	if spec, ok := last.Body.(map[string]any)["spec"].(map[string]any); ok {
		spec["token"] = "<token>"
	}
}
