package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMalformedQuery checks that a query that does not parse is refused
// (400), not dropped: a collection delete with a mistyped selector would
// otherwise delete everything.
func TestMalformedQuery(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	for _, n := range []string{"a", "b"} {
		if rec := serveOnce(t, s, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+n+`","labels":{"app":"`+n+`"}}}`); rec.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
	for _, tc := range []struct {
		method, path, query string
		code                int
		message             string
	}{
		{"DELETE", cms, "labelSelector=app%3Da%", http.StatusBadRequest, `the query of the request is malformed: invalid URL escape "%"`},
		{"GET", cms, "labelSelector=%zz", http.StatusBadRequest, `the query of the request is malformed: invalid URL escape "%zz"`},
		{"GET", cms, "%zz=1", http.StatusBadRequest, `the query of the request is malformed: invalid URL escape "%zz"`},
		{"GET", cms, "limit=1;labelSelector=app%3Da", http.StatusBadRequest, `the query of the request is malformed: invalid semicolon separator in query`},
		{"GET", "/version", "a=%", http.StatusBadRequest, `the query of the request is malformed: invalid URL escape "%"`},
		{"GET", cms, "labelSelector=app%3Da&x&y=", http.StatusOK, ""},
		{"DELETE", cms, "labelSelector=app%3Da", http.StatusOK, ""},
	} {
		req := httptest.NewRequest(tc.method, "http://x"+tc.path, nil)
		req.URL.RawQuery = tc.query
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s %s?%s: %d %s, want %d", tc.method, tc.path, tc.query, rec.Code, rec.Body, tc.code)
			continue
		}
		if tc.message != "" {
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Message != tc.message || st.Reason != metav1.StatusReasonBadRequest {
				t.Errorf("%s %s?%s: %s, want the message %q", tc.method, tc.path, tc.query, rec.Body, tc.message)
			}
		}
	}
	// Only a was deleted.
	if rec := serveOnce(t, s, "GET", cms+"/b", "", ""); rec.Code != http.StatusOK {
		t.Errorf("b: %d %s", rec.Code, rec.Body)
	}
}
