package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The Priority admission plugin's global default: at most one PriorityClass
// is marked globalDefault (403 for a second), and a Pod without a class
// gets the default class, its priority and its preemption policy.
func TestPriorityClassGlobalDefault(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/merge-patch+json")
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m
	}
	const pcs = "/apis/scheduling.k8s.io/v1/priorityclasses"
	const pods = "/api/v1/namespaces/default/pods"
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	}
	steps := []struct {
		name, method, path, body string
		code                     int
		// class, priority and policy the answer's pod spec holds, when set
		class, policy string
		priority      float64
	}{
		{name: "a pod before any default", method: "POST", path: pods, body: pod("p0"), code: http.StatusCreated, priority: 0, policy: "PreemptLowerPriority"},
		{name: "the first default", method: "POST", path: pcs, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"a"},"value":10,"globalDefault":true,"preemptionPolicy":"Never"}`, code: http.StatusCreated},
		{name: "a second default", method: "POST", path: pcs, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"b"},"value":5,"globalDefault":true}`, code: http.StatusForbidden},
		{name: "a pod takes the default", method: "POST", path: pods, body: pod("p1"), code: http.StatusCreated, class: "a", priority: 10, policy: "Never"},
		{name: "another class", method: "POST", path: pcs, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"b"},"value":5}`, code: http.StatusCreated},
		{name: "made the default while one is", method: "PATCH", path: pcs + "/b", body: `{"globalDefault":true}`, code: http.StatusForbidden},
		{name: "the default updated", method: "PATCH", path: pcs + "/a", body: `{"description":"still the default"}`, code: http.StatusOK},
		{name: "the default unmarked", method: "PATCH", path: pcs + "/a", body: `{"globalDefault":false}`, code: http.StatusOK},
		{name: "the other made the default", method: "PATCH", path: pcs + "/b", body: `{"globalDefault":true}`, code: http.StatusOK},
		{name: "a pod takes the new default", method: "POST", path: pods, body: pod("p2"), code: http.StatusCreated, class: "b", priority: 5, policy: "PreemptLowerPriority"},
	}
	for _, st := range steps {
		code, m := do(st.method, st.path, st.body)
		if code != st.code {
			t.Fatalf("%s: %d %v, want %d", st.name, code, m, st.code)
		}
		if st.path != pods {
			continue
		}
		spec, _ := m["spec"].(map[string]any)
		class, _ := spec["priorityClassName"].(string)
		if class != st.class || spec["priority"] != st.priority || spec["preemptionPolicy"] != st.policy {
			t.Errorf("%s: class %q priority %v policy %v, want %q %v %v", st.name, class, spec["priority"], spec["preemptionPolicy"], st.class, st.priority, st.policy)
		}
	}
}
