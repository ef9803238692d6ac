package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver"
	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

func clientsetFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// wantForbidden checks that err is kube-apiserver's 403 with exactly msg.
func wantForbidden(t *testing.T, what string, err error, msg string) {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code != http.StatusForbidden || st.Status().Reason != metav1.StatusReasonForbidden {
		t.Fatalf("%s: got %v, want 403 Forbidden", what, err)
	}
	if got := st.Status().Message; got != msg {
		t.Fatalf("%s: message\n%s\nwant\n%s", what, got, msg)
	}
}

// canI asks the server, as cs, whether it may do a (a SelfSubjectAccessReview).
func canI(t *testing.T, cs kubernetes.Interface, a authorizationv1.ResourceAttributes) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctxT(t), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("can-i %+v: %v", a, err)
	}
	return r.Status.Allowed
}

// awaitCan waits until cs may do a: kube-apiserver's RBAC reads its objects
// through informers, a moment after their write.
func awaitCan(t *testing.T, cs kubernetes.Interface, a authorizationv1.ResourceAttributes) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("permission %+v", a), func() bool { return canI(t, cs, a) })
}

func rule(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

// grant gives user, in ns, a Role of the rules (named name) and its binding.
func grant(t *testing.T, admin kubernetes.Interface, ns, name string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{subject}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func user(name string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.UserKind, Name: name} }

// TestRBACAuthorization checks, on both servers, what a user may do
// under a Role: its verbs on its resources in its namespace (names and
// subresources as the rules say), and the 403 of everything else.
func TestRBACAuthorization(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, ns := ctxT(t), env.Namespace
		admin := clientset(t, env)
		grant(t, admin, ns, "reader", user("alice"),
			rule([]string{"get", "list", "watch"}, []string{""}, []string{"pods", "pods/log"}),
			rule([]string{"get", "list", "update"}, []string{""}, []string{"configmaps"}, "a"),
			rule([]string{"get"}, []string{""}, []string{"namespaces"}),
		)
		alice := clientsetFor(t, env.ConfigFor(apiservertest.UserInfo{Name: "alice", Groups: []string{"devs"}}))
		awaitCan(t, alice, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"})

		if _, err := alice.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("list pods: %v", err)
		}
		_, err := alice.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
		wantForbidden(t, "create pod", err, fmt.Sprintf(`pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace %q`, ns))
		_, err = alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		wantForbidden(t, "list pods elsewhere", err, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`)
		_, err = alice.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		wantForbidden(t, "list pods everywhere", err, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope`)
		_, err = alice.AppsV1().Deployments(ns).Get(ctx, "d", metav1.GetOptions{})
		wantForbidden(t, "get deployment", err, fmt.Sprintf(`deployments.apps "d" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace %q`, ns))
		// A namespace is in itself: its RoleBinding grants it.
		if _, err := alice.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Fatalf("get own namespace: %v", err)
		}
		_, err = alice.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		wantForbidden(t, "get another namespace", err, `namespaces "default" is forbidden: User "alice" cannot get resource "namespaces" in API group "" in the namespace "default"`)

		// resourceNames: that name only, and no list.
		if _, err := alice.CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get configmap a: %v, want NotFound (allowed)", err)
		}
		_, err = alice.CoreV1().ConfigMaps(ns).Get(ctx, "b", metav1.GetOptions{})
		wantForbidden(t, "get configmap b", err, fmt.Sprintf(`configmaps "b" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace %q`, ns))
		_, err = alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		wantForbidden(t, "list configmaps", err, fmt.Sprintf(`configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace %q`, ns))
		// A list selecting the name by metadata.name is a request for it.
		if _, err := alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=a"}); err != nil {
			t.Fatalf("list configmap a by field selector: %v", err)
		}

		// Subresources are resources of their own.
		for _, tc := range []struct {
			a    authorizationv1.ResourceAttributes
			want bool
		}{
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "log", Name: "p"}, true},
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec", Name: "p"}, false},
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Resource: "configmaps", Name: "a"}, true},
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Resource: "configmaps", Name: "b"}, false},
			{authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "pods"}, false},
		} {
			if got := canI(t, alice, tc.a); got != tc.want {
				t.Errorf("can-i %+v = %v, want %v", tc.a, got, tc.want)
			}
		}

		// Non-resource URLs: system:discovery and system:public-info-viewer
		// let every authenticated user read discovery and /version.
		if _, err := alice.Discovery().ServerVersion(); err != nil {
			t.Fatalf("version: %v", err)
		}
		if _, err := alice.Discovery().ServerGroups(); err != nil {
			t.Fatalf("discovery: %v", err)
		}
		err = alice.CoreV1().RESTClient().Get().AbsPath("/metrics").Do(ctx).Error()
		wantForbidden(t, "get /metrics", err, `forbidden: User "alice" cannot get path "/metrics"`)

		// Who asks: kubectl auth whoami.
		who, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := who.Status.UserInfo; u.Username != "alice" || !slices.Equal(u.Groups, []string{"devs", "system:authenticated"}) {
			t.Errorf("whoami: %+v", u)
		}
	})
}

// TestRBACEscalation checks, on both servers, that a user who may write
// Roles and RoleBindings grants only what it holds, unless it may escalate
// or bind.
func TestRBACEscalation(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, ns := ctxT(t), env.Namespace
		admin := clientset(t, env)
		grant(t, admin, ns, "role-admin", user("carol"),
			rule([]string{"create", "update", "get"}, []string{"rbac.authorization.k8s.io"}, []string{"roles", "rolebindings"}),
			rule([]string{"get", "list"}, []string{""}, []string{"pods"}),
		)
		carol := clientsetFor(t, env.ConfigFor(apiservertest.UserInfo{Name: "carol"}))
		awaitCan(t, carol, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "roles"})

		roles := carol.RbacV1().Roles(ns)
		if _, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "within"}, Rules: []rbacv1.PolicyRule{rule([]string{"get"}, []string{""}, []string{"pods"})}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("a role within carol's rights: %v", err)
		}
		_, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "beyond"}, Rules: []rbacv1.PolicyRule{rule([]string{"get", "delete", "create"}, []string{""}, []string{"pods", "secrets"})}}, metav1.CreateOptions{})
		wantForbidden(t, "a role beyond carol's rights", err, `roles.rbac.authorization.k8s.io "beyond" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete" "create"]}
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete" "create"]}`)
		// An update is checked too.
		_, err = roles.Update(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "within"}, Rules: []rbacv1.PolicyRule{rule([]string{"*"}, []string{""}, []string{"pods"})}}, metav1.UpdateOptions{})
		wantForbidden(t, "an update beyond carol's rights", err, `roles.rbac.authorization.k8s.io "within" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["*"]}`)

		bindings := carol.RbacV1().RoleBindings(ns)
		bind := func(name, kind, role string) error {
			_, err := bindings.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{Kind: kind, Name: role}, Subjects: []rbacv1.Subject{user("dave")}}, metav1.CreateOptions{})
			return err
		}
		if err := bind("dave-within", "Role", "within"); err != nil {
			t.Fatalf("binding a role within carol's rights: %v", err)
		}
		err = bind("dave-edit", "ClusterRole", "edit")
		if !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), `rolebindings.rbac.authorization.k8s.io "dave-edit" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) {
			t.Fatalf("binding edit: %v", err)
		}
		if err := bind("dave-missing", "Role", "missing"); !apierrors.IsNotFound(err) || err.Error() != `rolebindings.rbac.authorization.k8s.io "missing" not found` {
			t.Fatalf("binding a missing role: %v", err)
		}

		// The bind verb on a role allows binding it.
		grant(t, admin, ns, "binder", user("carol"), rule([]string{"bind"}, []string{"rbac.authorization.k8s.io"}, []string{"clusterroles"}, "edit"))
		awaitCan(t, carol, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "edit"})
		if err := bind("dave-edit", "ClusterRole", "edit"); err != nil {
			t.Fatalf("binding edit with bind: %v", err)
		}
		// The escalate verb allows any role.
		grant(t, admin, ns, "escalator", user("carol"), rule([]string{"escalate"}, []string{"rbac.authorization.k8s.io"}, []string{"roles"}))
		awaitCan(t, carol, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "roles"})
		if _, err := roles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "beyond"}, Rules: []rbacv1.PolicyRule{rule([]string{"*"}, []string{"*"}, []string{"*"})}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("a role beyond carol's rights, with escalate: %v", err)
		}
	})
}

// TestImpersonation checks, on both servers, the impersonation headers:
// the administrator acts as anyone; another user needs the impersonate
// verb, and is refused as kube-apiserver refuses.
func TestImpersonation(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, ns := ctxT(t), env.Namespace
		whoami := func(cfg *rest.Config) (authenticationv1.UserInfo, error) {
			r, err := clientsetFor(t, cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				return authenticationv1.UserInfo{}, err
			}
			return r.Status.UserInfo, nil
		}
		as := env.Config()
		as.Impersonate = rest.ImpersonationConfig{UserName: "erin", UID: "erin-1", Groups: []string{"qa"}, Extra: map[string][]string{"example.com/scope": {"x"}}}
		got, err := whoami(as)
		if err != nil || got.Username != "erin" || got.UID != "erin-1" || !slices.Equal(got.Groups, []string{"qa", "system:authenticated"}) || !slices.Equal(got.Extra["example.com/scope"], []string{"x"}) {
			t.Fatalf("whoami as erin: %+v, %v", got, err)
		}
		as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":op"}
		if got, err := whoami(as); err != nil || !slices.Equal(got.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}) {
			t.Fatalf("whoami as a service account: %+v, %v", got, err)
		}

		frank := env.ConfigFor(apiservertest.UserInfo{Name: "frank"})
		as = rest.CopyConfig(frank)
		as.Impersonate = rest.ImpersonationConfig{UserName: "erin"}
		_, err = clientsetFor(t, as).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		wantForbidden(t, "frank as erin", err, fmt.Sprintf(`configmaps is forbidden: User "frank" cannot impersonate-on:user-info:list resource "configmaps" in API group "" in the namespace %q`, ns))

		// The legacy impersonate verb on that user, and erin's own rights.
		if _, err := clientset(t, env).RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		grant(t, clientset(t, env), ns, "erin-reads", user("erin"), rule([]string{"list"}, []string{""}, []string{"configmaps"}))
		admin := clientset(t, env)
		name := "impersonate-erin-" + strings.ToLower(env.Namespace)
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule([]string{"impersonate"}, []string{""}, []string{"users"}, "erin")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{user("frank")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		testutil.Eventually(t, "frank impersonates erin", func() error {
			_, err := clientsetFor(t, as).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		})
		// Not another user, and not erin's groups.
		as.Impersonate = rest.ImpersonationConfig{UserName: "gina"}
		_, err = clientsetFor(t, as).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		// The legacy mode worked for frank: it is tried first, and its
		// refusal is the answer.
		wantForbidden(t, "frank as gina", err, `users "gina" is forbidden: User "frank" cannot impersonate resource "users" in API group "" at the cluster scope`)
		as.Impersonate = rest.ImpersonationConfig{UserName: "erin", Groups: []string{"qa"}}
		_, err = clientsetFor(t, as).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		wantForbidden(t, "frank as erin in qa", err, `groups "qa" is forbidden: User "frank" cannot impersonate resource "groups" in API group "" at the cluster scope`)
	})
}

// TestServiceAccountConfig checks, on both servers, a ServiceAccount's
// identity and that its RoleBinding subject grants it.
func TestServiceAccountConfig(t *testing.T) {
	forEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, ns := ctxT(t), env.Namespace
		sa := clientsetFor(t, env.ServiceAccountConfig(ns, "operator"))
		who, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u := who.Status.UserInfo
		if u.Username != "system:serviceaccount:"+ns+":operator" || !slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}) ||
			u.UID == "" || !strings.HasPrefix(strings.Join(u.Extra["authentication.kubernetes.io/credential-id"], ""), "JTI=") {
			t.Errorf("whoami: %+v", u)
		}
		_, err = sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		wantForbidden(t, "list secrets", err, fmt.Sprintf(`secrets is forbidden: User "system:serviceaccount:%s:operator" cannot list resource "secrets" in API group "" in the namespace %q`, ns, ns))
		grant(t, clientset(t, env), ns, "operator", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "operator"}, rule([]string{"list"}, []string{""}, []string{"secrets"}))
		testutil.Eventually(t, "the operator lists secrets", func() error {
			_, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		})
	})
}

// TestUsers checks the embedded server's users: Options.Users, AddUser,
// the bearer scheme in any case, TokenReviews.
func TestUsers(t *testing.T) {
	env, admin := embedded(t, apiservertest.Options{Users: map[string]apiserver.UserInfo{
		"alice-token": {Name: "alice", UID: "a-1", Groups: []string{"devs"}, Extra: map[string][]string{"k": {"v"}}},
	}})
	srv := env.Embedded
	if err := srv.AddUser("bob-token", apiserver.UserInfo{Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token string
		u     apiserver.UserInfo
		want  string
	}{
		{"alice-token", apiserver.UserInfo{Name: "again"}, "in use"},
		{"", apiserver.UserInfo{Name: "x"}, "empty token"},
		{"a b", apiserver.UserInfo{Name: "x"}, "white space"},
		{"c", apiserver.UserInfo{}, "without a name"},
	} {
		if err := srv.AddUser(tc.token, tc.u); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddUser(%q, %+v) = %v, want %q", tc.token, tc.u, err, tc.want)
		}
	}
	if _, err := apiserver.New(apiserver.Options{Token: "t", Users: map[string]apiserver.UserInfo{"t": {Name: "x"}}}); err == nil {
		t.Error("a user with the admin's token: no error")
	}

	whoami := func(header string) (int, string) {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, env.Config().Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", header)
		tr, err := rest.TransportFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: env.Config().CAData}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		return resp.StatusCode, string(buf[:n])
	}
	for _, tc := range []struct {
		header string
		code   int
		user   string
	}{
		{"Bearer alice-token", 201, `"username":"alice"`},
		{"bearer alice-token", 201, `"username":"alice"`},
		{"BEARER bob-token", 201, `"username":"bob"`},
		{"  Bearer bob-token  ", 201, `"username":"bob"`},
		{"Bearer bob-token and more", 201, `"username":"bob"`},
		{"Bearer  bob-token", 401, ""},
		{"Basic bob-token", 401, ""},
		{"Bearer nobody", 401, ""},
		{"", 401, ""},
	} {
		code, body := whoami(tc.header)
		if code != tc.code || !strings.Contains(body, tc.user) {
			t.Errorf("Authorization %q: %d %s, want %d with %s", tc.header, code, body, tc.code, tc.user)
		}
	}

	// TokenReview answers from the same users.
	reviews := admin.AuthenticationV1().TokenReviews()
	for _, tc := range []struct {
		token     string
		audiences []string
		want      authenticationv1.TokenReviewStatus
	}{
		{"alice-token", nil, authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"https://kubernetes.default.svc.cluster.local"},
			User: authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}},
		{srv.Token(), nil, authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"https://kubernetes.default.svc.cluster.local"},
			User: authenticationv1.UserInfo{Username: "kloop-admin", UID: "kloop-admin", Groups: []string{"system:masters", "system:authenticated"}}}},
		{"nobody", nil, authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}},
		{"alice-token", []string{"elsewhere"}, authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}},
	} {
		r, err := reviews.Create(ctxT(t), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tc.token, Audiences: tc.audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(r.Status) != fmt.Sprint(tc.want) {
			t.Errorf("TokenReview of %q: %+v, want %+v", tc.token, r.Status, tc.want)
		}
	}
	if _, err := reviews.Create(ctxT(t), &authenticationv1.TokenReview{}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("TokenReview without a token: %v", err)
	}
	alice := clientsetFor(t, &rest.Config{Host: env.Config().Host, BearerToken: "alice-token", TLSClientConfig: rest.TLSClientConfig{CAData: env.Config().CAData}})
	_, err := alice.AuthenticationV1().TokenReviews().Create(ctxT(t), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "bob-token"}}, metav1.CreateOptions{})
	wantForbidden(t, "alice reviews a token", err, `tokenreviews.authentication.k8s.io is forbidden: User "alice" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope`)
}

// TestTokenFile checks ReadTokenFile and ParseTokenFile against
// kube-apiserver's --token-auth-file format.
func TestTokenFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       map[string]apiserver.UserInfo
		err        string
	}{
		{"full", "t1,alice,a-1,\"devs,qa\"\nt2,bob,b-1\n", map[string]apiserver.UserInfo{"t1": {Name: "alice", UID: "a-1", Groups: []string{"devs", "qa"}}, "t2": {Name: "bob", UID: "b-1"}}, ""},
		{"one group, more columns", "t1,alice,a-1,devs,ignored\n", map[string]apiserver.UserInfo{"t1": {Name: "alice", UID: "a-1", Groups: []string{"devs"}}}, ""},
		{"empty token skipped", ",alice,a-1\nt2,bob,b\n", map[string]apiserver.UserInfo{"t2": {Name: "bob", UID: "b"}}, ""},
		{"last duplicate wins", "t,alice,1\nt,bob,2\n", map[string]apiserver.UserInfo{"t": {Name: "bob", UID: "2"}}, ""},
		{"too few columns", "t,alice\n", nil, "at least 3 columns"},
		{"bad quoting", "t,\"alice,1\n", nil, "quote"},
		{"empty", "", map[string]apiserver.UserInfo{}, ""},
	} {
		got, err := apiserver.ParseTokenFile(strings.NewReader(tc.file))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := apiserver.ReadTokenFile(t.TempDir() + "/missing.csv"); err == nil {
		t.Error("a missing token file: no error")
	}
}

// TestClusterRoleAggregation checks, on the embedded server, that the
// aggregated ClusterRoles follow the ClusterRoles they select at once, as
// kube-controller-manager makes them follow (a moment later) in a cluster.
func TestClusterRoleAggregation(t *testing.T) {
	env, admin := embedded(t, apiservertest.Options{})
	ctx := ctxT(t)
	crs := admin.RbacV1().ClusterRoles()
	view, err := crs.Get(ctx, "view", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	widgets := rule([]string{"get", "list", "watch"}, []string{"example.com"}, []string{"widgets"})
	if _, err := crs.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widget-viewer", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}}, Rules: []rbacv1.PolicyRule{widgets}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"view", "edit", "admin"} {
		cr, err := crs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return r.String() == widgets.String() }) {
			t.Errorf("%s does not aggregate widget-viewer's rule", name)
		}
	}
	// A user bound to view gets it.
	grantView := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewers"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{user("vic")}}
	if _, err := admin.RbacV1().RoleBindings(env.Namespace).Create(ctx, grantView, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vic := clientsetFor(t, env.ConfigFor(apiservertest.UserInfo{Name: "vic"}))
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: env.Namespace, Verb: "list", Group: "example.com", Resource: "widgets"},
		{Namespace: env.Namespace, Verb: "watch", Resource: "pods"},
		{Namespace: env.Namespace, Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale"},
	} {
		if !canI(t, vic, a) {
			t.Errorf("view does not allow %+v", a)
		}
	}
	if canI(t, vic, authorizationv1.ResourceAttributes{Namespace: env.Namespace, Verb: "get", Resource: "secrets"}) {
		t.Error("view allows reading secrets")
	}
	// Its deletion takes the rule out again.
	if err := crs.Delete(ctx, "widget-viewer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := crs.Get(ctx, "view", metav1.GetOptions{}); err != nil || len(got.Rules) != len(view.Rules) {
		t.Errorf("view after the deletion: %d rules, %v; want %d", len(got.Rules), err, len(view.Rules))
	}
	// A ClusterRole of one's own with an aggregationRule.
	agg := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}}}}
	if _, err := crs.Create(ctx, agg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := crs.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a"}}, Rules: []rbacv1.PolicyRule{widgets}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := crs.Get(ctx, "mine", metav1.GetOptions{}); err != nil || len(got.Rules) != 1 || got.Rules[0].String() != widgets.String() {
		t.Errorf("mine: %+v, %v", got, err)
	}
}
