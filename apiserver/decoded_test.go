package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// TestDecodedCacheMatchesStorage writes objects of several kinds in several
// ways and checks that every decoded form the cache keeps is what decoding
// the stored bytes gives, and that an update from the cache answers as one
// without it (an unchanged PUT keeps its resourceVersion).
func TestDecodedCacheMatchesStorage(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
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

// TestDecodedCacheCheckCatchesMutation proves the check the tests run
// with (Options.decodedMutation): a writer that changes the cached decoded
// form it was given — here a configmap carryOver hook that writes to the
// old state — is reported once, after the write, with the object and the
// path it changed, and the mutated entry is not used again.
func TestDecodedCacheCheckCatchesMutation(t *testing.T) {
	var reported []error
	s, err := New(Options{Token: "t", decodedMutation: func(err error) { reported = append(reported, err) }})
	if err != nil {
		t.Fatal(err)
	}
	put := func(v string) {
		t.Helper()
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"` + v + `"}}`
		if rec := serveOnce(t, s, "PUT", "/api/v1/namespaces/default/configmaps/cm", "application/json", body); rec.Code != http.StatusOK {
			t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
	}
	if rec := serveOnce(t, s, "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	put("1") // cached
	if len(reported) > 0 {
		t.Fatalf("reported before any mutation: %v", reported)
	}
	k := kindOf(t, s, "/v1/configmaps")
	k.carryOver = func(obj, old map[string]any) { jsontree.Set(old, "mutated", "data", "k") }
	put("2") // takes the cached form as old, and writes to it
	k.carryOver = nil
	if len(reported) != 1 {
		t.Fatalf("%d mutations reported, want 1: %v", len(reported), reported)
	}
	if msg := reported[0].Error(); !strings.Contains(msg, "default/cm") || !strings.Contains(msg, ".data.k") {
		t.Errorf("the report does not name the object and the changed field: %s", msg)
	}
	put("3")
	put("4")
	if len(reported) != 1 {
		t.Errorf("%d mutations reported after writes that changed nothing shared, want the 1: %v", len(reported), reported)
	}
}

// TestDecodedCacheCheck checks the check itself: an entry changed after
// put is reported (once) by check, by a put that replaces it and by a
// forget that drops it, with the first path that differs; an unchanged
// one is not, and a cache without onMutation keeps no copies.
func TestDecodedCacheCheck(t *testing.T) {
	entry := func(name string) (*storage.Object, map[string]any) {
		return &storage.Object{Namespace: "ns", Name: name, ResourceVersion: 7}, map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"l": []any{"a", int64(1)}}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(m map[string]any)
		then   func(c *decodedCache, o *storage.Object)
		path   string // "" when nothing is reported
	}{
		{"unchanged", func(map[string]any) {}, func(c *decodedCache, _ *storage.Object) { c.check() }, ""},
		{"changed value, check", func(m map[string]any) { m["spec"].(map[string]any)["l"].([]any)[1] = int64(2) }, func(c *decodedCache, _ *storage.Object) { c.check() }, ".spec.l[1]"},
		{"added key, check", func(m map[string]any) { m["status"] = "x" }, func(c *decodedCache, _ *storage.Object) { c.check() }, ".status (added)"},
		{"removed key, replaced by put", func(m map[string]any) { delete(m["metadata"].(map[string]any), "name") }, func(c *decodedCache, o *storage.Object) {
			_, m := entry(o.Name)
			c.put(&storage.Object{Namespace: o.Namespace, Name: o.Name, ResourceVersion: 8}, m)
		}, ".metadata.name (removed)"},
		{"changed, dropped by forget", func(m map[string]any) { m["spec"] = nil }, func(c *decodedCache, o *storage.Object) { c.forget(o.Namespace, o.Name) }, ".spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reported []error
			c := newDecodedCache(func(err error) { reported = append(reported, err) })
			o, m := entry("a")
			c.put(o, m)
			tc.mutate(m)
			tc.then(c, o)
			c.check() // a mutated entry is reported once
			switch {
			case tc.path == "" && len(reported) > 0:
				t.Fatalf("reported: %v", reported)
			case tc.path == "":
			case len(reported) != 1:
				t.Fatalf("%d reports, want 1: %v", len(reported), reported)
			case !strings.Contains(reported[0].Error(), "ns/a at resourceVersion 7") || !strings.Contains(reported[0].Error(), "(first difference at "+tc.path+")"):
				t.Fatalf("report %q, want one about ns/a at resourceVersion 7 and %s", reported[0], tc.path)
			}
			if _, ok := c.get(o); ok && tc.path != "" {
				t.Error("a mutated entry is still served")
			}
		})
	}
	c := newDecodedCache(nil)
	o, m := entry("a")
	c.put(o, m)
	if e := c.slot(c.slots.Load(), o).Load(); e == nil || e.copy != nil {
		t.Errorf("without onMutation: entry %+v, want one without a copy", e)
	}
}

// TestConcurrentWritesShareNothing has writers update the same objects at
// once, by PUT without a resourceVersion (retried on a concurrent change),
// by merge patches and status updates, with the race detector watching
// the decoded forms they share; the last write wins and the store decodes
// to the cached form.
func TestConcurrentWritesShareNothing(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const ns = "/api/v1/namespaces/default/"
	for _, c := range []struct{ path, body string }{
		{ns + "configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"a":"b"}},"data":{"k":"v"}}`},
		{ns + "services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`},
		{"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}`},
	} {
		if rec := serveOnce(t, s, "POST", c.path, "application/json", c.body); rec.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
	const merge = "application/merge-patch+json"
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				v := fmt.Sprintf("%d-%d", w, i)
				for _, r := range []struct{ method, path, ctype, body string }{
					{"PUT", ns + "configmaps/cm", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"w":"` + v + `"}},"data":{"k":"` + v + `","n":"x"}}`},
					{"PATCH", ns + "configmaps/cm", merge, `{"metadata":{"annotations":{"w":"` + v + `"}},"data":{"n":null,"p":"` + v + `"}}`},
					{"PUT", ns + "services/svc", "application/json", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","labels":{"w":"` + v + `"}},"spec":{"ports":[{"port":80}]}}`},
					{"PATCH", ns + "services/svc/status", merge, `{"status":{"conditions":[{"type":"T","status":"True","reason":"R","message":"` + v + `","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`},
					{"PATCH", "/api/v1/namespaces/other", merge, `{"metadata":{"labels":{"w":"` + v + `"}}}`},
					{"PATCH", "/api/v1/namespaces/other/status", merge, `{"status":{"conditions":[{"type":"T","status":"True","message":"` + v + `"}]}}`},
				} {
					if rec := serveOnce(t, s, r.method, r.path, r.ctype, r.body); rec.Code != http.StatusOK {
						t.Errorf("%s %s: %d %s", r.method, r.path, rec.Code, rec.Body)
					}
				}
			}
		})
	}
	wg.Wait()
	slots := s.decoded.slots.Load()
	if slots == nil {
		t.Fatal("nothing cached")
	}
	for i := range slots {
		if e := slots[i].Load(); e != nil {
			want, err := decodeMap(e.o.Data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.m, want) {
				t.Errorf("cached %s:\n%#v\nstored:\n%#v", e.o.Key(), e.m, want)
			}
		}
	}
}

// TestConcurrentWritesShareNoState writes the same objects from several
// goroutines at once — updates, merge patches, status updates, an update
// that takes fields from the stored state (a Service's cluster IPs) — so
// that the race detector sees any write to the stored state the writers
// share (the decoded form of the current object), and checks the result.
func TestConcurrentWritesShareNoState(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	do := func(method, path, ctype, body string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	const ns = "/api/v1/namespaces/default/"
	for _, c := range []struct{ path, body string }{
		{ns + "configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"a":"b"}},"data":{"k":"v"}}`},
		{ns + "services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`},
		{ns + "pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
	} {
		if code, body := do("POST", c.path, "application/json", c.body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", c.path, code, body)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				for _, r := range []struct{ method, path, ctype, body string }{
					{"PUT", ns + "configmaps/cm", "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"a":"b","w":"%d"}},"data":{"k":"%d"}}`, w, i)},
					{"PATCH", ns + "configmaps/cm", "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"annotations":{"w%d":"%d"}}}`, w, i)},
					{"PUT", ns + "services/svc", "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","labels":{"i":"%d"}},"spec":{"ports":[{"port":80}]}}`, i)},
					{"PATCH", ns + "pods/p/status", "application/merge-patch+json", fmt.Sprintf(`{"status":{"message":"%d-%d"}}`, w, i)},
					{"PATCH", ns + "pods/p", "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"labels":{"w%d":"%d"}}}`, w, i)},
				} {
					if code, body := do(r.method, r.path, r.ctype, r.body); code != http.StatusOK {
						t.Errorf("%s %s: %d %s", r.method, r.path, code, body)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	code, body := do("GET", ns+"services/svc", "", "")
	var svc corev1.Service
	if err := json.Unmarshal([]byte(body), &svc); code != http.StatusOK || err != nil {
		t.Fatalf("GET service: %d %v %s", code, err, body)
	}
	if svc.Spec.ClusterIP == "" || len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != svc.Spec.ClusterIP {
		t.Fatalf("service lost its cluster IPs: %+v", svc.Spec)
	}
	code, body = do("GET", ns+"pods/p", "", "")
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(body), &pod); code != http.StatusOK || err != nil {
		t.Fatalf("GET pod: %d %v %s", code, err, body)
	}
	if len(pod.Labels) != 4 || pod.Status.Message == "" {
		t.Fatalf("pod: labels %v, status message %q: want the four writers' labels and a message", pod.Labels, pod.Status.Message)
	}
}
