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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// serveOnce sends one request to s's handler (bearer token "t").
func serveOnce(t *testing.T, s *Server, method, path, ctype, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Content-Type", ctype)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// TestMergePatchWhiteSpace checks that a merge patch surrounded by bytes
// that are not JSON white space (form feed, vertical tab, Unicode spaces)
// is refused as invalid JSON whichever way the patch is applied, and that
// JSON white space is accepted.
func TestMergePatchWhiteSpace(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	if rec := serveOnce(t, s, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		name, pre, post string
		want            int
	}{
		{"json white space", " \t\r\n", "\n\r\t ", http.StatusOK},
		{"form feed", "\f", "", http.StatusBadRequest},
		{"vertical tab", "", "\v", http.StatusBadRequest},
		{"no-break space", "\u00a0", "", http.StatusBadRequest},
		{"next line", "", "\u0085", http.StatusBadRequest},
		{"line separator", "\u2028", "\u2029", http.StatusBadRequest},
		{"ideographic space", "\u3000", "", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serveOnce(t, s, "PATCH", cms+"/cm", "application/merge-patch+json", tc.pre+`{"data":{"k":"`+tc.name+`"}}`+tc.post)
			if rec.Code != tc.want {
				t.Fatalf("PATCH %q: %d %s, want %d", tc.pre+"{...}"+tc.post, rec.Code, rec.Body, tc.want)
			}
			if tc.want == http.StatusBadRequest && !strings.Contains(rec.Body.String(), "invalid JSON patch") {
				t.Errorf("PATCH %q: %s, want the invalid JSON patch error", tc.pre+"{...}"+tc.post, rec.Body)
			}
		})
	}
}

// checkFastMergePatch checks fastMergePatch against the long way
// (json-patch's MergePatch of the served bytes, then decodeBody) for the
// object doc of k, as stored, with and without its decoded form cached;
// the cached form must stay as it was.
func checkFastMergePatch(t *testing.T, s *Server, k *kind, doc, patch []byte) {
	t.Helper()
	obj, ok := k.fastTyped(doc)
	if !ok {
		return
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	cur := &storage.Object{Data: data, APIVersion: k.apiVersion()}
	fast, ok := s.fastMergePatch(k, cur, patch)
	if !ok {
		return
	}
	wo := &writeOpts{fieldValidation: metav1.FieldValidationStrict}
	patched, err := applyPatch(types.MergePatchType, data, patch, k.newTyped)
	if err != nil {
		t.Fatalf("%s: fastMergePatch(%s, %s) took it, the long way: %v", k.kind, data, patch, err)
	}
	slow, err := s.decodeBody(k, patched, wo)
	if err != nil || len(wo.warnings) > 0 {
		t.Fatalf("%s: fastMergePatch(%s, %s) took it, the long way: %v %v", k.kind, data, patch, err, wo.warnings)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s: fastMergePatch(%s, %s) =\n%#v\nthe long way:\n%#v", k.kind, data, patch, fast, slow)
	}
	cached, err := decodeMap(data)
	if err != nil {
		t.Fatal(err)
	}
	if !jsontree.Canonical(cached) {
		return
	}
	s.decoded.put(cur, cached)
	again, ok := s.fastMergePatch(k, cur, patch)
	if !ok || !reflect.DeepEqual(again, slow) {
		t.Fatalf("%s: fastMergePatch(%s, %s) from the cache = %v %#v, want %#v", k.kind, data, patch, ok, again, slow)
	}
	if want, _ := decodeMap(data); !reflect.DeepEqual(cached, want) {
		t.Fatalf("%s: fastMergePatch(%s, %s) changed the cached form:\n%#v\nwant\n%#v", k.kind, data, patch, cached, want)
	}
}

var fastMergeResources = []string{"/v1/configmaps", "/v1/namespaces", "/v1/serviceaccounts", "/v1/events", "coordination.k8s.io/v1/leases", "events.k8s.io/v1/events"}

var fastMergeCases = []struct{ doc, patch string }{
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","resourceVersion":"5","labels":{"app":"x"}},"data":{"k":"v"}}`, `{"data":{"k":null,"j":"w"},"metadata":{"labels":null,"annotations":{"a":"b","c":null}}}`},
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`, `{"apiVersion":"v2"}`},
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`, `{"kind":"Secret","metadata":{"name":"b","namespace":"o","resourceVersion":"9"}}`},
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`, `{"data":null,"binaryData":{"b":"aGVsbG8="},"Data":{"x":"y"}}`},
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`, `{"metadata":{"creationTimestamp":"2026-01-02T03:04:05Z","generation":3,"finalizers":["a"]},"immutable":true}`},
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`, `{"metadata":{"creationTimestamp":null},"data":{"k":1}}`},
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`, `{"data":{"k":"\u2028<&>","k":"x"}}`},
	{`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, `{"spec":{"finalizers":null},"status":{"phase":"Terminating","conditions":[{"type":"T","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`},
	{`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"h","leaseDurationSeconds":15}}`, `{"spec":{"renewTime":"2026-01-02T03:04:05.000000Z","leaseTransitions":1,"leaseDurationSeconds":1e1}}`},
	{`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"h","leaseDurationSeconds":15}}`, `{"spec":{"holderIdentity":null,"leaseDurationSeconds":-0}}`},
	{`{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p"},"count":3}`, `{"involvedObject":{"kind":null,"uid":"u"},"count":2147483647,"eventTime":"2026-01-02T03:04:05.123456Z"}`},
}

func TestFastMergePatch(t *testing.T) {
	s := newTestServer(t, Options{})
	for _, tc := range fastMergeCases {
		for _, r := range fastMergeResources {
			checkFastMergePatch(t, s, kindOf(t, s, r), []byte(tc.doc), []byte(tc.patch))
		}
	}
}

func FuzzFastMergePatch(f *testing.F) {
	for _, tc := range fastMergeCases {
		for i := range fastMergeResources {
			f.Add(uint8(i), []byte(tc.doc), []byte(tc.patch))
		}
	}
	s := newTestServer(f, Options{})
	f.Fuzz(func(t *testing.T, r uint8, doc, patch []byte) {
		checkFastMergePatch(t, s, kindOf(t, s, fastMergeResources[int(r)%len(fastMergeResources)]), doc, patch)
	})
}

// TestFastTypedAllKinds checks fastTyped against the long way on objects of
// every kind it serves, filled with random values.
func TestFastTypedAllKinds(t *testing.T) {
	s := newTestServer(t, Options{})
	for _, k := range s.reg.all() {
		if k.typedSchema() == nil {
			continue
		}
		fast := 0
		for seed := range 100 {
			typed := k.newTyped()
			randfill.NewWithSeed(int64(seed)).NilChance(0.3).NumElements(0, 2).MaxDepth(6).Fill(typed)
			typed.(runtime.Object).GetObjectKind().SetGroupVersionKind(k.gvr.GroupVersion().WithKind(k.kind))
			body, err := json.Marshal(typed)
			if err != nil {
				continue // values json.Marshal refuses (NaN, ...)
			}
			if checkFastTyped(t, s, k, body) {
				fast++
			}
		}
		if fast == 0 {
			t.Errorf("%s: fastTyped took none of the random objects", k.kind)
		}
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
