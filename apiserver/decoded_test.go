package apiserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestDecodedCacheMatchesStorage writes objects of several kinds in several
// ways and checks that every decoded form the cache keeps is what decoding
// the stored bytes gives, and that an update from the cache answers as one
// without it (an unchanged PUT keeps its resourceVersion).
func TestDecodedCacheMatchesStorage(t *testing.T) {
	s, err := New(Options{Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, ctype, body string, want int) string {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	const ns = "/api/v1/namespaces/default/"
	const js, merge = "application/json", "application/merge-patch+json"
	cm := func(v string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"a":"b"},"annotations":{"x":"<y>"}},"data":{"k":"` + v + `","u":"\u00e9\u2028"}}`
	}
	do("POST", ns+"configmaps", js, cm("0"), http.StatusCreated)
	do("POST", ns+"pods", js, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"0.5"}}}]}}`, http.StatusCreated)
	do("POST", ns+"services", js, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`, http.StatusCreated)
	for i := range 3 {
		first := do("PUT", ns+"configmaps/cm", js, cm(fmt.Sprint(i)), http.StatusOK)
		again := do("PUT", ns+"configmaps/cm", js, cm(fmt.Sprint(i)), http.StatusOK)
		if first != again {
			t.Fatalf("an unchanged PUT answered\n%s\nafter\n%s", again, first)
		}
		do("PATCH", ns+"configmaps/cm", merge, fmt.Sprintf(`{"metadata":{"annotations":{"i":"%d"}}}`, i), http.StatusOK)
		do("PATCH", ns+"pods/p", merge, fmt.Sprintf(`{"metadata":{"labels":{"i":"%d"}}}`, i), http.StatusOK)
		do("PATCH", ns+"pods/p/status", merge, fmt.Sprintf(`{"status":{"message":"%d"}}`, i), http.StatusOK)
		do("PUT", ns+"services/svc", js, fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","labels":{"i":"%d"}},"spec":{"ports":[{"port":80}]}}`, i), http.StatusOK)
	}
	entries := 0
	slots := s.decoded.slots.Load()
	if slots == nil {
		t.Fatal("nothing cached")
	}
	for i := range slots {
		e := slots[i].Load()
		if e == nil {
			continue
		}
		entries++
		want, err := decodeMap(e.o.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(e.m, want) {
			t.Errorf("cached %s:\n%#v\nstored:\n%#v", e.o.Key(), e.m, want)
		}
	}
	if entries != 3 {
		t.Errorf("%d objects cached, want the 3 updated", entries)
	}
	// A deletion drops the deleted object's entry; the others stay.
	do("DELETE", ns+"configmaps/cm", js, "", http.StatusOK)
	do("DELETE", ns+"services/svc", js, "", http.StatusOK)
	left := 0
	for i := range slots {
		if e := slots[i].Load(); e != nil {
			left++
			if e.o.Name != "p" {
				t.Errorf("%s still cached after its deletion", e.o.Key())
			}
		}
	}
	if left != 1 {
		t.Errorf("%d objects cached after two deletions, want 1 (the pod)", left)
	}
}
