package apiserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// checkFastTyped checks fastTyped against the long way for an object of
// the resource res (core/v1 unless group/version is given): when it
// decodes, the long way decodes the same tree without any warning.
func checkFastTyped(t *testing.T, s *Server, k *kind, body []byte) bool {
	t.Helper()
	fast, ok := k.fastTyped(body)
	if !ok {
		return false
	}
	slow, ok, err := s.decodeTypedPlain(k, body)
	if !ok || err != nil {
		t.Fatalf("%s: fastTyped decoded %s, the long way: ok %v, %v", k.kind, body, ok, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s: fastTyped(%s) =\n%#v\nthe long way:\n%#v", k.kind, body, fast, slow)
	}
	return true
}

var fastTypedCases = []struct {
	resource string // group/version/resource, "" group for core
	body     string
	fast     bool // fastTyped decodes it itself
}{
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","labels":{"app":"x"}},"data":{"k":"v"}}`, true},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u","resourceVersion":"5","generation":2,"creationTimestamp":"2026-01-02T03:04:05Z","finalizers":["f"],"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"s","uid":"su","controller":true}]},"binaryData":{"b":"aGVsbG8="},"immutable":false}`, true},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u","resourceVersion":"5","generation":2,"creationTimestamp":"2026-01-02T03:04:05Z","finalizers":["f"],"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"s","uid":"su","controller":true}]},"binaryData":{"b":"aGVsbG8="},"immutable":true,"metadata":{}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, true},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap"}`, true},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`, true},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{}}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":""}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","creationTimestamp":null}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","creationTimestamp":"2026-01-02T04:04:05+01:00"}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","creationTimestamp":"0001-01-01T00:00:00Z"}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","generation":1.0}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","generation":"1"}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":null}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":1}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"binaryData":{"b":"aGVsbG8"}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"binaryData":{"b":"aGVs\nbG8="}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"Data":{"k":"v"}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"extra":1}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`, false},
	{"/v1/configmaps", `{"kind":"ConfigMap","metadata":{"name":"a"}}`, false},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]}}`, true},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","deletionGracePeriodSeconds":30,"deletionTimestamp":"2026-01-02T03:04:05Z"}}`, true},
	{"/v1/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","deletionGracePeriodSeconds":null}}`, false},
	{"/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, true},
	{"/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"spec":{}}`, true},
	{"/v1/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"s"},"secrets":[{"name":"x"}],"automountServiceAccountToken":true}`, true},
	{"/v1/events", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p"},"reason":"R","count":3,"firstTimestamp":"2026-01-02T03:04:05Z","eventTime":"2026-01-02T03:04:05.123456Z"}`, true},
	{"/v1/events", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"count":2147483648}`, false},
	{"/v1/events", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"eventTime":"2026-01-02T03:04:05.123Z"}`, false},
	{"coordination.k8s.io/v1/leases", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"h","leaseDurationSeconds":15,"renewTime":"2026-01-02T03:04:05.000000Z","leaseTransitions":0}}`, true},
	{"coordination.k8s.io/v1/leases", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"h","leaseDurationSeconds":15,"renewTime":"2026-01-02T03:04:05.000000Z","leaseTransitions":1}}`, true},
	{"events.k8s.io/v1/events", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"},"eventTime":"2026-01-02T03:04:05.000000Z","reportingController":"c","reportingInstance":"i","action":"A","reason":"R","regarding":{"kind":"Pod","name":"p"},"type":"Normal"}`, true},
	// CRDs have defaults (apiextensions.k8s.io/v1's, on decoding): the long way.
	{"apiextensions.k8s.io/v1/customresourcedefinitions", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"ws.ex.com"},"spec":{"group":"ex.com","scope":"Namespaced","names":{"plural":"ws","kind":"W"},"versions":[{"name":"v1","served":true,"storage":true}]}}`, false},
	{"apiextensions.k8s.io/v1/customresourcedefinitions", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"ws.ex.com"},"spec":{"group":"ex.com","scope":"Namespaced","names":{"plural":"ws","kind":"W"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`, false},
	{"apiextensions.k8s.io/v1/customresourcedefinitions", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"ws.ex.com"},"spec":{"group":"ex.com","scope":"Namespaced","names":{"plural":"ws","kind":"W"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"a":{"type":"integer","default":1}}}}}]}}`, false},
	{"/v1/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, false},
	{"/v1/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"Opaque"}`, false},
}

func kindOf(t testing.TB, s *Server, res string) *kind {
	t.Helper()
	for _, k := range s.reg.all() {
		if k.gvr.Group+"/"+k.gvr.Version+"/"+k.gvr.Resource == res {
			return k
		}
	}
	t.Fatalf("no kind %s", res)
	return nil
}

func TestFastTyped(t *testing.T) {
	s := newTestServer(t, Options{})
	for _, tc := range fastTypedCases {
		if got := checkFastTyped(t, s, kindOf(t, s, tc.resource), []byte(tc.body)); got != tc.fast {
			t.Errorf("%s: fastTyped decoded: %v, want %v", tc.body, got, tc.fast)
		}
	}
}

func FuzzFastTyped(f *testing.F) {
	resources := []string{"/v1/configmaps", "/v1/namespaces", "/v1/serviceaccounts", "/v1/events", "coordination.k8s.io/v1/leases", "events.k8s.io/v1/events", "apiextensions.k8s.io/v1/customresourcedefinitions"}
	for _, tc := range fastTypedCases {
		for i, r := range resources {
			if r == tc.resource {
				f.Add(uint8(i), []byte(tc.body))
			}
		}
	}
	s := newTestServer(f, Options{})
	f.Fuzz(func(t *testing.T, r uint8, body []byte) {
		checkFastTyped(t, s, kindOf(t, s, resources[int(r)%len(resources)]), body)
	})
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
			randfill.NewWithSeed(int64(seed)).NilChance(0.3).NumElements(0, 2).MaxDepth(6).Funcs(
				// ControllerRevisions' data: a JSON object (randfill cannot
				// fill its runtime.Object).
				func(r *runtime.RawExtension, c randfill.Continue) {
					r.Raw = fmt.Appendf(nil, `{"n":%d}`, c.Int63())
				},
			).Fill(typed)
			typed.(runtime.Object).GetObjectKind().SetGroupVersionKind(k.gvr.GroupVersion().WithKind(k.kind))
			body, err := json.Marshal(typed)
			if err != nil {
				continue // values json.Marshal refuses (NaN, ...)
			}
			if checkFastTyped(t, s, k, body) {
				fast++
			}
		}
		// A ControllerRevision's data is a RawExtension, opaque to
		// fastTyped: its objects go the long way.
		if fast == 0 && k.kind != "ControllerRevision" {
			t.Errorf("%s: fastTyped took none of the random objects", k.kind)
		}
	}
}
