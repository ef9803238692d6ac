package apiserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/rbac"
)

// TestRequestAttributes checks the attributes requests are authorized by,
// after kube-apiserver's RequestInfoFactory.
func TestRequestAttributes(t *testing.T) {
	res := func(verb, group, resource, sub, ns, name string) rbac.Attributes {
		return rbac.Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		method, target string
		want           rbac.Attributes
	}{
		{"GET", "/api/v1/namespaces/ns/pods", res("list", "", "pods", "", "ns", "")},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", res("watch", "", "pods", "", "ns", "")},
		{"GET", "/api/v1/namespaces/ns/pods?watch=0", res("list", "", "pods", "", "ns", "")},
		{"GET", "/api/v1/watch/namespaces/ns/pods", res("watch", "", "pods", "", "ns", "")},
		{"GET", "/api/v1/watch/namespaces/ns/pods/p", res("watch", "", "pods", "", "ns", "p")},
		{"GET", "/api/v1/namespaces/ns/pods/p", res("get", "", "pods", "", "ns", "p")},
		{"HEAD", "/api/v1/namespaces/ns/pods/p", res("get", "", "pods", "", "ns", "p")},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", res("get", "", "pods", "log", "ns", "p")},
		{"GET", "/api/v1/namespaces/ns/pods/p/proxy/x/y", res("get", "", "pods", "proxy", "ns", "p")},
		{"GET", "/api/v1/proxy/namespaces/ns/pods/p/x", res("proxy", "", "pods", "", "ns", "p")},
		{"POST", "/api/v1/namespaces/ns/pods", res("create", "", "pods", "", "ns", "")},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", res("update", "apps", "deployments", "scale", "ns", "d")},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", res("patch", "apps", "deployments", "status", "ns", "d")},
		{"DELETE", "/api/v1/namespaces/ns/pods/p", res("delete", "", "pods", "", "ns", "p")},
		{"DELETE", "/api/v1/namespaces/ns/pods", res("deletecollection", "", "pods", "", "ns", "")},
		{"OPTIONS", "/api/v1/namespaces/ns/pods", res("", "", "pods", "", "ns", "")},
		{"GET", "/api/v1/pods", res("list", "", "pods", "", "", "")},
		{"GET", "/api/v1/nodes/n", res("get", "", "nodes", "", "", "n")},
		// Namespaces are in themselves.
		{"GET", "/api/v1/namespaces", res("list", "", "namespaces", "", "", "")},
		{"GET", "/api/v1/namespaces/ns", res("get", "", "namespaces", "", "ns", "ns")},
		{"PUT", "/api/v1/namespaces/ns/status", res("update", "", "namespaces", "status", "ns", "ns")},
		{"PUT", "/api/v1/namespaces/ns/finalize", res("update", "", "namespaces", "finalize", "ns", "ns")},
		// A list selecting one name is a request for that name.
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da", res("list", "", "configmaps", "", "ns", "a")},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da&watch=1", res("watch", "", "configmaps", "", "ns", "a")},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da,data.x%3Dy", res("list", "", "configmaps", "", "ns", "a")},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%21%3Da", res("list", "", "configmaps", "", "ns", "")},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da%2Fb", res("list", "", "configmaps", "", "ns", "")},
		{"GET", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da&limit=x", res("list", "", "configmaps", "", "ns", "")},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps?fieldSelector=metadata.name%3Da", res("watch", "", "configmaps", "", "ns", "")},
		// Non-resource requests.
		{"GET", "/api", rbac.Attributes{Verb: "get"}},
		{"GET", "/api/v1", rbac.Attributes{Verb: "get"}},
		{"GET", "/apis/apps/v1", rbac.Attributes{Verb: "get"}},
		{"GET", "/apis/apps", rbac.Attributes{Verb: "get"}},
		{"POST", "/version", rbac.Attributes{Verb: "post"}},
		{"GET", "/healthz/etcd", rbac.Attributes{Verb: "get"}},
		{"GET", "/", rbac.Attributes{Verb: "get"}},
		{"GET", "/other/v1/x/y", rbac.Attributes{Verb: "get"}},
	} {
		got := requestAttributes(httptest.NewRequest(tc.method, tc.target, nil))
		tc.want.Path, _, _ = strings.Cut(tc.target, "?")
		if got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}

// referenceBearerToken is kube-apiserver's bearer token authenticator's
// reading of the Authorization header, as it is written.
func referenceBearerToken(h string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(h), " ", 3)
	if len(parts) < 2 || strings.ToLower(parts[0]) != "bearer" || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// FuzzAuthenticate sends requests with random credentials and
// impersonation headers to a server with RBAC in use: nothing panics, the
// bearer token is read as kube-apiserver reads it, and the answer is the
// authorizer's (a 401 without a known token; 400 or 403 for impersonation
// refused; otherwise what RBAC says of the user the request is made as).
func FuzzAuthenticate(f *testing.F) {
	for _, seed := range []struct{ auth, user, group, uid, extraKey, extraValue, path string }{
		{"Bearer t", "", "", "", "", "", "/api/v1/namespaces/default/configmaps"},
		{"bearer alice", "", "", "", "", "", "/api/v1/namespaces/default/configmaps"},
		{"Bearer alice", "bob", "", "", "", "", "/api/v1/namespaces/default/pods"},
		{"Bearer t", "bob", "system:masters", "u", "scope%2Fx", "v", "/version"},
		{"Bearer t", "system:serviceaccount:default:op", "", "", "", "", "/apis/authentication.k8s.io/v1/selfsubjectreviews"},
		{"Bearer  alice", "", "g", "", "", "", "/api"},
		{"Basic x", "system:node:n", "", "", "K", "", "/apis/apps/v1/namespaces/x/deployments/d/scale"},
	} {
		f.Add(seed.auth, seed.user, seed.group, seed.uid, seed.extraKey, seed.extraValue, seed.path)
	}
	s := newTestServer(f, Options{Token: "t", Users: map[string]UserInfo{"alice": {Name: "alice"}, "frank": {Name: "frank", Groups: []string{"impersonators"}}}})
	// frank may impersonate users and groups (legacy impersonation), and
	// alice read configmaps in default.
	for _, body := range []string{
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"imp"},"rules":[{"verbs":["impersonate"],"apiGroups":[""],"resources":["users","groups"]}]}`,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"imp"},"roleRef":{"kind":"ClusterRole","name":"imp"},"subjects":[{"kind":"Group","name":"impersonators"}]}`,
	} {
		path := "/apis/rbac.authorization.k8s.io/v1/clusterroles"
		if strings.Contains(body, "Binding") {
			path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			f.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, auth, user, group, uid, extraKey, extraValue, path string) {
		if got, ok := bearerToken(auth); fmt.Sprint(got, ok) != fmt.Sprint(referenceBearerToken(auth)) {
			t.Fatalf("bearerToken(%q) = %q %v, kube-apiserver reads %v", auth, got, ok, fmt.Sprint(referenceBearerToken(auth)))
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n?#%") || strings.Contains(path, "/watch") {
			return // watches block until their timeout
		}
		req, err := http.NewRequest(http.MethodGet, "http://kloop"+path, nil)
		if err != nil {
			return
		}
		req.Header.Set("Authorization", auth)
		set := func(k, v string) {
			if v != "" {
				req.Header[k] = []string{v}
			}
		}
		set("Impersonate-User", user)
		set("Impersonate-Group", group)
		set("Impersonate-Uid", uid)
		if extraKey != "" {
			set("Impersonate-Extra-"+extraKey, extraValue)
		}
		rec := httptest.NewRecorder()
		_, err = s.authorize(req, s.authenticate(req))
		s.Handler().ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusInternalServerError:
			t.Fatalf("%s as %q (impersonating %q %q %q %q=%q): 500 %s", path, auth, user, group, uid, extraKey, extraValue, rec.Body)
		case err == nil && (rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden && !strings.Contains(rec.Body.String(), "being terminated")):
			t.Fatalf("%s: authorized, then answered %d %s", path, rec.Code, rec.Body)
		case err != nil && rec.Code != int(statusFor(err, schema.GroupResource{}, "").Code):
			t.Fatalf("%s: refused with %v, then answered %d %s", path, err, rec.Code, rec.Body)
		}
		if token, ok := bearerToken(auth); (!ok || s.users.lookup(token) == nil) && rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s without a valid token (%q): %d", path, auth, rec.Code)
		}
	})
}
