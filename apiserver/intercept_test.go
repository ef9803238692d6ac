package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An Interceptor sees every authenticated request, with its user, token and
// attributes, and serves it through next; without credentials a request
// never reaches it; removed, it sees nothing more.
func TestInterceptorSeesRequests(t *testing.T) {
	s := newTestServer(t, Options{Token: "t", Users: map[string]UserInfo{"alice-token": {Name: "alice", Groups: []string{"devs"}}}})
	var seen []Request
	s.SetInterceptor(func(w http.ResponseWriter, r *http.Request, req *Request, next http.Handler) {
		seen = append(seen, *req)
		next.ServeHTTP(w, r)
	})
	send := func(token, method, path, body string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	for _, tc := range []struct {
		token, method, path, body string
		code                      int
		want                      string // user verb group/version resource/subresource ns name; "" for none
	}{
		{"t", "POST", cms, `{"metadata":{"name":"a"}}`, 201, "kloop-admin create /v1 configmaps/ default "},
		{"t", "GET", cms + "/a", "", 200, "kloop-admin get /v1 configmaps/ default a"},
		{"t", "GET", cms + "?fieldSelector=metadata.name%3Da", "", 200, "kloop-admin list /v1 configmaps/ default a"},
		{"alice-token", "GET", "/apis/apps/v1/deployments", "", 403, "alice list apps/v1 deployments/  "},
		{"alice-token", "PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "{}", 403, "alice update apps/v1 deployments/scale ns d"},
		{"t", "GET", "/version", "", 200, "kloop-admin get / /  "},
		{"", "GET", cms, "", 401, ""},
		{"nobody", "GET", cms, "", 401, ""},
	} {
		seen = nil
		if code := send(tc.token, tc.method, tc.path, tc.body); code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
		}
		var got string
		if len(seen) == 1 {
			r := seen[0]
			got = fmt.Sprintf("%s %s %s/%s %s/%s %s %s", r.User.Name, r.Verb, r.APIGroup, r.APIVersion, r.Resource, r.Subresource, r.Namespace, r.Name)
			if r.Token != tc.token || r.Path != strings.Split(tc.path, "?")[0] {
				t.Errorf("%s %s: token %q path %q", tc.method, tc.path, r.Token, r.Path)
			}
		} else if len(seen) > 1 {
			t.Errorf("%s %s: intercepted %d times", tc.method, tc.path, len(seen))
		}
		if got != tc.want {
			t.Errorf("%s %s: intercepted as %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
	s.SetInterceptor(nil)
	seen = nil
	send("t", "GET", cms, "")
	if len(seen) != 0 {
		t.Errorf("removed interceptor still called: %v", seen)
	}
}

// ReadAt serves a GET, a LIST and a watch's initial events as of an older
// revision; the mark means nothing without an Interceptor.
func TestReadAt(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	write := func(method, path, body string) string {
		t.Helper()
		rec := serveOnce(t, s, method, path, "application/json", body)
		if rec.Code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return fmt.Sprint(s.Revision())
	}
	rv1 := write("POST", cms, `{"metadata":{"name":"a"},"data":{"v":"1"}}`)
	write("PUT", cms+"/a", `{"metadata":{"name":"a"},"data":{"v":"2"}}`)
	write("POST", cms, `{"metadata":{"name":"b"},"data":{"v":"1"}}`)
	stale := int64(0)
	fmt.Sscan(rv1, &stale)
	s.SetInterceptor(func(w http.ResponseWriter, r *http.Request, req *Request, next http.Handler) {
		next.ServeHTTP(w, ReadAt(r, stale))
	})
	get := func(path string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := httptest.NewRequest("GET", path, nil).WithContext(ctx)
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		path, want string
		code       int
		absent     string
	}{
		{cms + "/a", `"data":{"v":"1"}`, 200, `"v":"2"`},
		{cms + "/b", `"reason":"NotFound"`, 404, ""},
		{cms, `"resourceVersion":"` + rv1 + `"},"items":[`, 200, `"name":"b"`},
		{cms + "?resourceVersion=0", `"resourceVersion":"` + rv1 + `"}`, 200, `"name":"b"`},
		{cms + "?resourceVersion=" + fmt.Sprint(stale+1), `"reason":"Timeout"`, 504, ""},
		{cms + "?watch=true", `{"type":"ADDED","object":{"apiVersion":"v1","data":{"v":"1"}`, 200, ""},
		{cms + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", `"k8s.io/initial-events-end":"true"},"resourceVersion":"` + rv1 + `"`, 200, ""},
	} {
		code, body := get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) || tc.absent != "" && strings.Contains(body, tc.absent) {
			t.Errorf("GET %s as of %d: %d %s\nwant %d with %s", tc.path, stale, code, body, tc.code, tc.want)
		}
	}
	// A watch from the stale view gets the state at stale first, then
	// the later events.
	_, body := get(cms + "?watch=true")
	if i, j := strings.Index(body, `"v":"1"`), strings.Index(body, `"v":"2"`); i < 0 || j < i || !strings.Contains(body, `"name":"b"`) {
		t.Errorf("watch of a stale view: %s", body)
	}
	// Without an interceptor, a ReadAt request is served at the present.
	s.SetInterceptor(nil)
	req := ReadAt(httptest.NewRequest("GET", cms+"/a", nil), stale)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `"v":"2"`) {
		t.Errorf("ReadAt without an interceptor: %s", rec.Body)
	}
}

// CompactResource compacts one resource: its watches from before get 410,
// another resource's do not.
func TestCompactResourceOverHTTP(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	rec := serveOnce(t, s, "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"a"}}`)
	if rec.Code != 201 {
		t.Fatal(rec.Code, rec.Body)
	}
	rev := s.Revision()
	serveOnce(t, s, "POST", "/api/v1/namespaces/default/secrets", "application/json", `{"metadata":{"name":"a"}}`)
	if err := s.CompactResource(schema.GroupResource{Resource: "configmaps"}, s.Revision()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resource string
		gone     bool
	}{{"configmaps", true}, {"secrets", false}} {
		path := fmt.Sprintf("/api/v1/namespaces/default/%s?resourceVersionMatch=Exact&resourceVersion=%d", tc.resource, rev)
		if rec := serveOnce(t, s, "GET", path, "", ""); (rec.Code == http.StatusGone) != tc.gone {
			t.Errorf("exact list of %s at %d after compacting configmaps: %d %s", tc.resource, rev, rec.Code, rec.Body)
		}
	}
	for _, tc := range []struct {
		gr   schema.GroupResource
		rev  int64
		want string
	}{
		{schema.GroupResource{Resource: "nothings"}, 1, "does not serve"},
		{schema.GroupResource{Resource: "configmaps"}, s.Revision() + 5, "too large"},
	} {
		if err := s.CompactResource(tc.gr, tc.rev); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CompactResource(%s, %d): %v, want %q", tc.gr, tc.rev, err, tc.want)
		}
	}
}
