package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
