package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ServiceAccount tokens authenticate while unexpired and while their
// ServiceAccount exists with the UID they name; a changed byte, another
// issuer's key, an expired token or a recreated ServiceAccount is a 401.
func TestServiceAccountTokens(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC).Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	s := newTestServer(t, Options{Token: "t", Now: clock})
	other := newTestServer(t, Options{Token: "t", Now: clock})
	do := func(s *Server, method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m
	}
	const sas = "/api/v1/namespaces/default/serviceaccounts"
	mint := func(s *Server) string {
		t.Helper()
		if code, _ := do(s, "POST", sas, "t", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}`); code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("create ServiceAccount: %d", code)
		}
		code, m := do(s, "POST", sas+"/robot/token", "t", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}`)
		if code != http.StatusCreated {
			t.Fatalf("TokenRequest: %d %v", code, m)
		}
		return m["status"].(map[string]any)["token"].(string)
	}
	whoami := func(s *Server, token string) int {
		code, _ := do(s, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
		return code
	}
	token := mint(s)
	if code := whoami(s, token); code != http.StatusCreated {
		t.Fatalf("the token: %d", code)
	}
	parts := strings.Split(token, ".")
	// The signature's first character changed: its six bits are all the
	// signature's (the last character's may be padding).
	first := "A"
	if parts[2][0] == 'A' {
		first = "B"
	}
	tampered := parts[0] + "." + parts[1] + "." + first + parts[2][1:]
	for name, tok := range map[string]string{
		"a changed signature":      tampered,
		"another server's token":   mint(other),
		"not a token of either":    "a.b.c",
		"claims of another server": parts[0] + "." + strings.Split(mint(other), ".")[1] + "." + parts[2],
	} {
		if code := whoami(s, tok); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	now.Add(601)
	if code := whoami(s, token); code != http.StatusUnauthorized {
		t.Errorf("an expired token: %d, want 401", code)
	}
	now.Add(-601)
	if code, _ := do(s, "DELETE", sas+"/robot", "t", ""); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	if code := whoami(s, token); code != http.StatusUnauthorized {
		t.Errorf("a deleted ServiceAccount's token: %d, want 401", code)
	}
	mint(s) // the ServiceAccount again, with another UID
	if code := whoami(s, token); code != http.StatusUnauthorized {
		t.Errorf("a recreated ServiceAccount's old token: %d, want 401", code)
	}
}

// A token bound to a Pod, a Secret or a Node names it in its claims (a Pod's
// Node too, when it is scheduled to one), carries the Pod's and Node's names
// and UIDs in the user's extra, and stops authenticating once the object is
// gone (a Pod: once deleted for more than 60 s, as kube's validator allows).
func TestBoundServiceAccountTokens(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC).Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	s := newTestServer(t, Options{Token: "t", Now: clock})
	do := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m
	}
	create := func(path, body string) string {
		t.Helper()
		code, m := do("POST", path, "t", body)
		if code != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", path, code, m)
		}
		return m["metadata"].(map[string]any)["uid"].(string)
	}
	const ns = "/api/v1/namespaces/default"
	create(ns+"/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}`)
	nodeUID := create("/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`)
	podUID := create(ns+"/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","finalizers":["example.com/hold"]},"spec":{"serviceAccountName":"robot","nodeName":"n1","containers":[{"name":"c","image":"nginx"}]}}`)
	secretUID := create(ns+"/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`)

	type ref struct{ Name, UID string }
	tests := []struct {
		name              string
		ref               string
		pod, node, secret *ref
		extra             map[string]string
		remove            string // the request that removes the object
		graceSeconds      int64  // how long after the removal the token is still accepted
	}{
		{name: "pod", ref: `{"apiVersion":"v1","kind":"Pod","name":"p"}`,
			pod: &ref{"p", podUID}, node: &ref{"n1", nodeUID},
			extra:  map[string]string{"pod-name": "p", "pod-uid": podUID, "node-name": "n1", "node-uid": nodeUID},
			remove: ns + "/pods/p", graceSeconds: 60},
		{name: "secret", ref: `{"apiVersion":"v1","kind":"Secret","name":"s","uid":"` + secretUID + `"}`,
			secret: &ref{"s", secretUID}, extra: map[string]string{}, remove: ns + "/secrets/s"},
		{name: "node", ref: `{"apiVersion":"v1","kind":"Node","name":"n1"}`,
			node: &ref{"n1", nodeUID}, extra: map[string]string{"node-name": "n1", "node-uid": nodeUID}, remove: "/api/v1/nodes/n1"},
	}
	tokens := map[string]string{}
	for _, tc := range tests { // minted first: the node test removes the pod's node
		code, m := do("POST", ns+"/serviceaccounts/robot/token", "t", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":`+tc.ref+`}}`)
		if code != http.StatusCreated {
			t.Fatalf("%s: TokenRequest: %d %v", tc.name, code, m)
		}
		tokens[tc.name] = m["status"].(map[string]any)["token"].(string)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			token := tokens[tc.name]
			payload, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
			if err != nil {
				t.Fatal(err)
			}
			var claims struct {
				K struct {
					Pod, Node, Secret *ref
				} `json:"kubernetes.io"`
			}
			if err := json.Unmarshal(payload, &claims); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(claims.K.Pod, tc.pod) || !reflect.DeepEqual(claims.K.Node, tc.node) || !reflect.DeepEqual(claims.K.Secret, tc.secret) {
				t.Errorf("claims %s, want pod %v node %v secret %v", payload, tc.pod, tc.node, tc.secret)
			}
			code, m := do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
			if code != http.StatusCreated {
				t.Fatalf("SelfSubjectReview: %d %v", code, m)
			}
			extra, _ := m["status"].(map[string]any)["userInfo"].(map[string]any)["extra"].(map[string]any)
			got := map[string]string{}
			for k, v := range extra {
				if k, ok := strings.CutPrefix(k, "authentication.kubernetes.io/"); ok && k != "credential-id" {
					got[k] = v.([]any)[0].(string)
				}
			}
			if !reflect.DeepEqual(got, tc.extra) {
				t.Errorf("extra %v, want %v", got, tc.extra)
			}
			if code, m := do("DELETE", tc.remove, "t", `{"gracePeriodSeconds":0}`); code != http.StatusOK && code != http.StatusAccepted {
				t.Fatalf("DELETE %s: %d %v", tc.remove, code, m)
			}
			whoami := func() int {
				code, _ := do("GET", ns+"/configmaps", token, "")
				return code
			}
			if tc.graceSeconds > 0 {
				now.Add(tc.graceSeconds)
				if code := whoami(); code == http.StatusUnauthorized {
					t.Errorf("%d s after the removal: 401, want the token accepted", tc.graceSeconds)
				}
				now.Add(1)
			}
			if code := whoami(); code != http.StatusUnauthorized {
				t.Errorf("after the removal: %d, want 401", code)
			}
		})
	}
}
