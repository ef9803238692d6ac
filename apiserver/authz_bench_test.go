package apiserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"kloop.dev/kloop/apiserver"
)

// BenchmarkAuthorization measures the get of a ConfigMap through the
// handler, in process, by the administrator (system:masters: not checked)
// and by a user RBAC allows it to (a RoleBinding among 50 others in the
// namespace and 50 ClusterRoleBindings of other users, besides the
// bootstrap ones), and impersonated by the administrator: what
// authorization adds to a request.
func BenchmarkAuthorization(b *testing.B) {
	srv, err := apiserver.New(apiserver.Options{Token: "t", Users: map[string]apiserver.UserInfo{"u": {Name: "alice", Groups: []string{"devs"}}}})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	do := func(token, method, path, body string, want int, header ...string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
	}
	const rbacPath = "/apis/rbac.authorization.k8s.io/v1"
	do("t", "POST", rbacPath+"/namespaces/default/roles", `{"metadata":{"name":"cm-reader"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["configmaps"]}]}`, http.StatusCreated)
	for i := range 50 {
		do("t", "POST", rbacPath+"/namespaces/default/rolebindings", fmt.Sprintf(`{"metadata":{"name":"b%d"},"roleRef":{"kind":"Role","name":"cm-reader"},"subjects":[{"kind":"User","name":"user%d"}]}`, i, i), http.StatusCreated)
		do("t", "POST", rbacPath+"/clusterrolebindings", fmt.Sprintf(`{"metadata":{"name":"c%d"},"roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"user%d"}]}`, i, i), http.StatusCreated)
	}
	do("t", "POST", rbacPath+"/namespaces/default/rolebindings", `{"metadata":{"name":"zz-alice"},"roleRef":{"kind":"Role","name":"cm-reader"},"subjects":[{"kind":"Group","name":"devs"}]}`, http.StatusCreated)
	const cm = "/api/v1/namespaces/default/configmaps"
	do("t", "POST", cm, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`, http.StatusCreated)
	for _, bc := range []struct {
		name, token string
		header      []string
	}{
		{"admin", "t", nil},
		{"rbac", "u", nil},
		{"impersonated", "t", []string{"Impersonate-User", "alice", "Impersonate-Group", "devs"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				do(bc.token, "GET", cm+"/c", "", http.StatusOK, bc.header...)
			}
		})
	}
}
