package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPathSegments checks kube-apiserver's answers to "." and ".." as the
// name or the namespace of a path (transcript path-segments compares them
// with kube-apiserver's).
func TestPathSegments(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	if rec := serveOnce(t, s, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		method, path, ctype, body string
		code                      int
		message                   string
	}{
		{"GET", cms + "/..", "", "", http.StatusBadRequest, `Name parameter invalid: "..": may not be '..'`},
		{"DELETE", cms + "/.", "", "", http.StatusBadRequest, `Name parameter invalid: ".": may not be '.'`},
		{"PATCH", cms + "/a%25b", "application/merge-patch+json", `{}`, http.StatusBadRequest, `Name parameter invalid: "a%b": may not contain '%'`},
		{"PUT", cms + "/..", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":".."}}`, http.StatusBadRequest, `Name parameter invalid: "..": may not be '..'`},
		{"PUT", cms + "/..", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, http.StatusBadRequest, `the name of the object (a) does not match the name on the URL (..)`},
		{"GET", "/api/v1/namespaces/..", "", "", http.StatusBadRequest, `Name parameter invalid: "..": may not be '..'`},
		{"GET", "/apis/apps/v1/namespaces/default/deployments/../scale", "", "", http.StatusBadRequest, `Name parameter invalid: "..": may not be '..'`},
		{"GET", "/api/v1/namespaces/../configmaps", "", "", http.StatusInternalServerError, `invalid key: "/configmaps/.."`},
		{"GET", "/api/v1/namespaces/./configmaps/a", "", "", http.StatusInternalServerError, `invalid key: "/configmaps/./a"`},
		{"DELETE", "/api/v1/namespaces/../services", "", "", http.StatusInternalServerError, `invalid key: "/services/specs/.."`},
		{"PATCH", "/apis/apps/v1/namespaces/../deployments/d", "application/merge-patch+json", `{}`, http.StatusInternalServerError, `invalid key: "/deployments/../d"`},
		{"POST", "/api/v1/namespaces/../configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`, http.StatusInternalServerError,
			`Internal error occurred: invalid resource name "..": [may not be '..']`},
		{"GET", cms + "/...", "", "", http.StatusNotFound, `configmaps "..." not found`},
	} {
		rec := serveOnce(t, s, tc.method, tc.path, tc.ctype, tc.body)
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != tc.code || st.Message != tc.message {
			t.Errorf("%s %s: %d %s, want %d %q", tc.method, tc.path, rec.Code, rec.Body, tc.code, tc.message)
		}
	}
}

// TestEndpointMethods checks the methods the endpoints that are not
// resources take, as kube-apiserver (transcript read-only-endpoints
// compares them).
func TestEndpointMethods(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	for _, tc := range []struct {
		path string
		get  int // for GET
		rest int // for POST, PUT, DELETE, PATCH and HEAD
	}{
		{"/version", http.StatusOK, http.StatusMethodNotAllowed},
		{"/api", http.StatusOK, http.StatusMethodNotAllowed},
		{"/api/v1/", http.StatusOK, http.StatusMethodNotAllowed},
		{"/apis/apps/v1", http.StatusOK, http.StatusMethodNotAllowed},
		{"/apis/apps/v9", http.StatusNotFound, http.StatusNotFound},
		{"/apis", http.StatusOK, http.StatusOK},
		{"/apis/apps", http.StatusOK, http.StatusOK},
		{"/healthz", http.StatusOK, http.StatusOK},
		{"/readyz/poststarthook/x", http.StatusOK, http.StatusOK},
		{"/livez/", http.StatusNotFound, http.StatusNotFound},
		{"/healthz//ping", http.StatusNotFound, http.StatusNotFound},
		{"/api/v2", http.StatusNotFound, http.StatusNotFound},
		{"/version/x", http.StatusNotFound, http.StatusNotFound},
		{"/apis/none.example.com/v1", http.StatusNotFound, http.StatusNotFound},
	} {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"} {
			want := tc.rest
			if m == "GET" {
				want = tc.get
			}
			rec := serveOnce(t, s, m, tc.path, "", "")
			if rec.Code != want {
				t.Errorf("%s %s: %d %s, want %d", m, tc.path, rec.Code, rec.Body, want)
			}
			if want == http.StatusMethodNotAllowed && m != "HEAD" && !strings.Contains(rec.Body.String(), `"reason":"MethodNotAllowed"`) {
				t.Errorf("%s %s: %s, want kube-apiserver's Status", m, tc.path, rec.Body)
			}
			// A 404 under a root of kube-apiserver's go-restful web
			// services is a Status; elsewhere its mux's text.
			goRestful := strings.HasPrefix(tc.path, "/api/") || strings.HasPrefix(tc.path, "/version/") || strings.HasPrefix(tc.path, "/apis/apps/")
			if want == http.StatusNotFound && m != "HEAD" && strings.Contains(rec.Body.String(), `"reason":"NotFound"`) != goRestful {
				t.Errorf("%s %s: %s, want a Status: %t", m, tc.path, rec.Body, goRestful)
			}
		}
	}
}
