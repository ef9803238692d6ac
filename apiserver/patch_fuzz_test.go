package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The fuzz targets of this file patch objects the server stores, through
// its handler, with arbitrary patches of one type each. Each checks that
// the server answers every patch within kube-apiserver's rules and within
// bounded work:
//   - 200 with the patched object (same kind, name and namespace), or a
//     Status of the answer's code in 4xx: never a 5xx (but kube-apiserver's
//     500 for a strategic merge patch strategicpatch refuses), never a
//     panic;
//   - an error leaves the stored object as it was;
//   - the answer is bounded in size by what the request sent and what the
//     server stores (patchAnswerBound).
//
// The objects (patchFuzzTargets) are restored after each successful
// patch, so every patch applies to the same object, and the server keeps a
// short history, so a long run holds little memory.

// patchFuzzTarget is an object the fuzz targets patch: path, the path of
// the patch (the object or a subresource of it), and body, the object as
// created.
type patchFuzzTarget struct {
	kind, path, body string
}

const (
	fuzzDeploymentBody = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default","labels":{"app":"d"},"annotations":{"a":"1"},"finalizers":["example.com/f"]},` +
		`"spec":{"replicas":2,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{` +
		`"containers":[{"name":"c0","image":"i0","ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443,"protocol":"TCP"}],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"args":["x","y"]},` +
		`{"name":"c1","image":"i1","volumeMounts":[{"name":"v","mountPath":"/v"}]}],` +
		`"volumes":[{"name":"v","emptyDir":{}}],"tolerations":[{"key":"k","operator":"Exists"}]}}}}`
	fuzzConfigMapBody = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default","labels":{"a":"b"}},"data":{"k":"v","list":"[1,2]"},"binaryData":{"b":"AAE="}}`
	fuzzWidgetCRD     = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.fuzz.example.com"},"spec":{"group":"fuzz.example.com","scope":"Namespaced",` +
		`"names":{"plural":"widgets","singular":"widget","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},` +
		`"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"color":{"type":"string","enum":["red","green","blue"]},"replicas":{"type":"integer","minimum":0,"default":1},` +
		`"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"v":{"type":"integer"}},"required":["name"]},"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"]},` +
		`"extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},"status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`
	fuzzWidgetBody = `{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"color":"red","replicas":3,"items":[{"name":"a","v":1},{"name":"b","v":2}],"extra":{"x":[1,2,3]}},"status":{"replicas":1}}`
)

var patchFuzzTargets = []patchFuzzTarget{
	{"ConfigMap", "/api/v1/namespaces/default/configmaps/cm", fuzzConfigMapBody},
	{"Deployment", "/apis/apps/v1/namespaces/default/deployments/d", fuzzDeploymentBody},
	{"Deployment", "/apis/apps/v1/namespaces/default/deployments/d/status", fuzzDeploymentBody},
	{"Widget", "/apis/fuzz.example.com/v1/namespaces/default/widgets/w", fuzzWidgetBody},
	{"Widget", "/apis/fuzz.example.com/v1/namespaces/default/widgets/w/status", fuzzWidgetBody},
}

// objectPath is the path of t's object (without its subresource).
func (t patchFuzzTarget) objectPath() string { return strings.TrimSuffix(t.path, "/status") }

// collection is the path of the collection of t's object.
func (t patchFuzzTarget) collection() string {
	p := t.objectPath()
	return p[:strings.LastIndex(p, "/")]
}

// patchFuzzServer is a server holding the objects of patchFuzzTargets.
func patchFuzzServer(f *testing.F) *Server {
	s := newTestServer(f, Options{Token: "t", HistoryEvents: 64})
	for _, post := range []struct{ path, body string }{
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", fuzzWidgetCRD},
		{patchFuzzTargets[0].collection(), fuzzConfigMapBody},
		{patchFuzzTargets[1].collection(), fuzzDeploymentBody},
		{patchFuzzTargets[3].collection(), fuzzWidgetBody},
	} {
		if rec := fuzzRequest(s, "POST", post.path, "application/json", post.body); rec.Code != http.StatusCreated {
			f.Fatalf("POST %s: %d %s", post.path, rec.Code, rec.Body)
		}
	}
	return s
}

func fuzzRequest(s *Server, method, path, ctype, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Content-Type", ctype)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// patchAnswerBound bounds the size of the answer to a patch of n bytes of
// an object stored in stored bytes: a patched object holds at most the
// object, what the patch sends (twice: a value may be added under a name
// as long) and, for a JSON patch, the copies' bound; an error quotes
// bounded texts of what was sent (errors.go: maxStatusText), a few of them.
func patchAnswerBound(n, stored int) int {
	return stored + 2*n + maxJSONPatchCopyBytes + 8*maxStatusText
}

// fuzzPatchStored sends patch as a patch of content type ctype to the
// object of patchFuzzTargets[target] and checks the answer.
func fuzzPatchStored(t *testing.T, s *Server, ctype string, target uint8, patch string) {
	tg := patchFuzzTargets[int(target)%len(patchFuzzTargets)]
	before := fuzzRequest(s, "GET", tg.objectPath(), "", "")
	if before.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", tg.objectPath(), before.Code, before.Body)
	}
	rec := fuzzRequest(s, "PATCH", tg.path, ctype, patch)
	if max := patchAnswerBound(len(patch), before.Body.Len()); rec.Body.Len() > max {
		t.Fatalf("PATCH %s: %d with an answer of %d bytes, more than %d", tg.path, rec.Code, rec.Body.Len(), max)
	}
	switch {
	case rec.Code == http.StatusOK:
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(rec.Body.Bytes()); err != nil {
			t.Fatalf("PATCH %s: 200 with a body that is not an object (%v): %.2000s", tg.path, err, rec.Body)
		}
		if u.GetKind() != tg.kind || u.GetName() != nameOf(tg.path) || u.GetNamespace() != "default" {
			t.Fatalf("PATCH %s: 200 with %s %s/%s", tg.path, u.GetKind(), u.GetNamespace(), u.GetName())
		}
		restorePatchFuzzTarget(t, s, tg)
	case rec.Code >= 400 && rec.Code < 500 || kubeStrategicMergeError(ctype, rec):
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Status != metav1.StatusFailure || int(st.Code) != rec.Code {
			t.Fatalf("PATCH %s: %d with a body that is not its Status: %.2000s", tg.path, rec.Code, rec.Body)
		}
		after := fuzzRequest(s, "GET", tg.objectPath(), "", "")
		if !bytes.Equal(before.Body.Bytes(), after.Body.Bytes()) {
			t.Fatalf("PATCH %s: %d %.500s changed the object:\nbefore %.2000s\nafter  %.2000s", tg.path, rec.Code, rec.Body, before.Body, after.Body)
		}
	default:
		t.Fatalf("PATCH %s: %d %.2000s", tg.path, rec.Code, rec.Body)
	}
}

// kubeStrategicMergeError reports whether rec is kube-apiserver's answer
// to a strategic merge patch that strategicpatch refuses with an error
// kube-apiserver does not classify (patch.go: smpError; transcript
// strategic-patch-errors): a 500 with the error's text and no reason. A
// panic, which the server answers with a 500 of reason InternalError, is
// not one.
func kubeStrategicMergeError(ctype string, rec *httptest.ResponseRecorder) bool {
	var st metav1.Status
	return ctype == "application/strategic-merge-patch+json" && rec.Code == http.StatusInternalServerError &&
		json.Unmarshal(rec.Body.Bytes(), &st) == nil && st.Reason == "" && !strings.HasPrefix(st.Message, "internal error")
}

// nameOf is the name of the object of a patch fuzz target's path.
func nameOf(path string) string {
	p := strings.Split(strings.TrimSuffix(path, "/status"), "/")
	return p[len(p)-1]
}

// restorePatchFuzzTarget puts tg's object back as it was created (its
// status too, which a patch of the object cannot change), at the stored
// object's resourceVersion (a custom resource takes no unconditional
// update).
func restorePatchFuzzTarget(t *testing.T, s *Server, tg patchFuzzTarget) {
	for _, path := range []string{tg.objectPath(), tg.objectPath() + "/status"} {
		if tg.kind == "ConfigMap" && strings.HasSuffix(path, "/status") {
			continue
		}
		var cur, obj unstructured.Unstructured
		rec := fuzzRequest(s, "GET", tg.objectPath(), "", "")
		if err := cur.UnmarshalJSON(rec.Body.Bytes()); err != nil {
			t.Fatalf("GET %s: %d %s", tg.objectPath(), rec.Code, rec.Body)
		}
		if err := obj.UnmarshalJSON([]byte(tg.body)); err != nil {
			t.Fatal(err)
		}
		obj.SetResourceVersion(cur.GetResourceVersion())
		b, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if rec := fuzzRequest(s, "PUT", path, "application/json", string(b)); rec.Code != http.StatusOK {
			t.Fatalf("PUT %s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// FuzzJSONPatchStored patches stored objects with arbitrary JSON patches.
func FuzzJSONPatchStored(f *testing.F) {
	for i := range patchFuzzTargets {
		for _, p := range []string{
			`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`,
			`[{"op":"replace","path":"/metadata/name","value":"other"}]`,
			`[{"op":"test","path":"/metadata/name","value":"d"},{"op":"remove","path":"/metadata/finalizers"}]`,
			`[{"op":"move","from":"/metadata/labels","path":"/metadata/annotations"}]`,
			`[{"op":"copy","from":"/metadata","path":"/spec/x"}]`,
			`[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"c2","image":"i2"}}]`,
			`[{"op":"replace","path":"/spec/items/0/v","value":7},{"op":"add","path":"/spec/extra/y","value":{"z":null}}]`,
			`[{"op":"replace","path":"/status/replicas","value":5}]`,
			`[{"op":"remove","path":"/data/k"},{"op":"add","path":"/data/~1x~0","value":"1"}]`,
			`[{"op":"add","path":"/kind","value":"Secret"}]`,
			`[{"op":"add","path":"","value":{}}]`,
			`[{"op":"bogus"}]`, `[]`, `{}`, `null`, `[{"op":"add","path":"/a/b/c","value":1}]`,
		} {
			f.Add(uint8(i), p)
		}
	}
	// Issue 17's attacks, on one object each (they take milliseconds): an
	// add and 24 copies that double an array (422 past the copies' bound),
	// a value copied many times, more operations than the cap (413; the
	// smallest operations, as the cap counts them before their shape).
	f.Add(uint8(0), doublingPatch())
	f.Add(uint8(1), repeatOps(`{"op":"copy","from":"/metadata","path":"/metadata/annotations"}`, 500))
	f.Add(uint8(3), repeatOps(`{}`, maxJSONPatchOperations+1))
	s := patchFuzzServer(f)
	f.Fuzz(func(t *testing.T, target uint8, patch string) {
		fuzzPatchStored(t, s, "application/json-patch+json", target, patch)
	})
}

// FuzzMergePatchStored patches stored objects with arbitrary merge
// patches (RFC 7386).
func FuzzMergePatchStored(f *testing.F) {
	for i := range patchFuzzTargets {
		for _, p := range []string{
			`{"metadata":{"labels":{"x":"y","a":null}}}`,
			`{"metadata":{"name":"other"}}`, `{"metadata":{"finalizers":null}}`,
			`{"metadata":{"namespace":"kube-system"}}`, `{"kind":"Secret"}`, `{"apiVersion":"v2"}`,
			`{"spec":{"replicas":"three"}}`, `{"spec":{"replicas":-1}}`, `{"spec":{"color":"pink"}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
			`{"spec":{"items":[{"name":"a"},{"name":"a"}]}}`, `{"status":{"replicas":4}}`,
			`{"data":{"k":null,"n":"1"}}`, `{"data":{"k":1}}`, `{"binaryData":{"b":"!"}}`,
			`[]`, `null`, `"x"`, `{}`, `{"metadata":null}`, `{"spec":null}`,
			`{"metadata":{"annotations":` + strings.Repeat(`{"a":`, 2000) + `{}` + strings.Repeat(`}`, 2000) + `}}`,
			`{"metadata":{"annotations":{"` + strings.Repeat("k", 20000) + `":"v"}}}`,
		} {
			f.Add(uint8(i), p)
		}
	}
	s := patchFuzzServer(f)
	f.Fuzz(func(t *testing.T, target uint8, patch string) {
		fuzzPatchStored(t, s, "application/merge-patch+json", target, patch)
	})
}

// FuzzStrategicMergePatchStored patches stored objects with arbitrary
// strategic merge patches (a custom resource answers them with 415).
func FuzzStrategicMergePatchStored(f *testing.F) {
	containers := make([]string, 1500)
	for i := range containers {
		containers[i] = `{"name":"n` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `"}`
	}
	for i := range patchFuzzTargets {
		for _, p := range []string{
			`{"metadata":{"labels":{"x":"y"}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"c0","image":"j"},{"name":"c9","image":"k"}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"c1","$patch":"delete"}]}}}}`,
			`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"c1"},{"name":"c0"}],"containers":[{"name":"c0","env":[{"name":"C","value":"3"}]}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"c0","$setElementOrder/ports":[{"containerPort":443}],"ports":[{"containerPort":443,"protocol":"UDP"}]}]}}}}`,
			`{"spec":{"template":{"spec":{"$deleteFromPrimitiveList/tolerations":[1],"volumes":[{"$patch":"replace"}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"$retainKeys":["name"],"name":"c0"}]}}}}`,
			`{"spec":{"$patch":"replace","replicas":1}}`, `{"$patch":"delete"}`, `{"metadata":{"finalizers":{"$patch":"x"}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"image":"no-name"}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[` + strings.Join(containers, ",") + `]}}}}`,
			`{"data":{"k":null}}`, `{"status":{"replicas":4}}`, `[]`, `null`, `{}`,
		} {
			f.Add(uint8(i), p)
		}
	}
	s := patchFuzzServer(f)
	f.Fuzz(func(t *testing.T, target uint8, patch string) {
		fuzzPatchStored(t, s, "application/strategic-merge-patch+json", target, patch)
	})
}

// kubeApplyError reports whether rec is kube-apiserver's answer to an
// applied configuration that does not fit the kind's schema (a field of
// the wrong type or not declared, a duplicate list key): a 500 with the
// field manager's error and no reason (transcript apply-configmap). A
// panic's 500 has reason InternalError.
func kubeApplyError(rec *httptest.ResponseRecorder) bool {
	var st metav1.Status
	return rec.Code == http.StatusInternalServerError && json.Unmarshal(rec.Body.Bytes(), &st) == nil &&
		st.Reason == "" && !strings.HasPrefix(st.Message, "internal error")
}

// FuzzApplyStored applies arbitrary configurations (YAML or JSON) to stored
// objects with server-side apply, by one manager, forced or not.
func FuzzApplyStored(f *testing.F) {
	for i := range patchFuzzTargets {
		for _, p := range []string{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"w"}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c2","image":"x"}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"status":{"replicas":1}}`,
			`{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"items":[{"name":"a","v":9}]}}`,
			`{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"items":[{"name":"a"},{"name":"a"}]}}`,
			`{"apiVersion":"fuzz.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"pink"},"status":{"replicas":"x"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","managedFields":[]}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`,
			`{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"cm"}}`,
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"cm"}}`,
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: [1, 2]\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: &a {k: *a}\n",
			`[]`, `null`, `"x"`, `{}`, `- a`, `{"metadata":null}`,
		} {
			f.Add(uint8(i), false, p)
			f.Add(uint8(i), true, p)
		}
	}
	s := patchFuzzServer(f)
	f.Fuzz(func(t *testing.T, target uint8, force bool, patch string) {
		tg := patchFuzzTargets[int(target)%len(patchFuzzTargets)]
		before := fuzzRequest(s, "GET", tg.objectPath(), "", "")
		if before.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", tg.objectPath(), before.Code, before.Body)
		}
		path := tg.path + "?fieldManager=fuzz"
		if force {
			path += "&force=true"
		}
		rec := fuzzRequest(s, "PATCH", path, "application/apply-patch+yaml", patch)
		if max := patchAnswerBound(len(patch), before.Body.Len()); rec.Body.Len() > max {
			t.Fatalf("PATCH %s: %d with an answer of %d bytes, more than %d", path, rec.Code, rec.Body.Len(), max)
		}
		switch {
		case rec.Code == http.StatusOK:
			var u unstructured.Unstructured
			if err := u.UnmarshalJSON(rec.Body.Bytes()); err != nil {
				t.Fatalf("PATCH %s: 200 with a body that is not an object (%v): %.2000s", path, err, rec.Body)
			}
			if u.GetKind() != tg.kind || u.GetName() != nameOf(tg.path) || u.GetNamespace() != "default" {
				t.Fatalf("PATCH %s: 200 with %s %s/%s", path, u.GetKind(), u.GetNamespace(), u.GetName())
			}
			restorePatchFuzzTarget(t, s, tg)
		case rec.Code >= 400 && rec.Code < 500 || kubeApplyError(rec):
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || st.Status != metav1.StatusFailure || int(st.Code) != rec.Code {
				t.Fatalf("PATCH %s: %d with a body that is not its Status: %.2000s", path, rec.Code, rec.Body)
			}
			after := fuzzRequest(s, "GET", tg.objectPath(), "", "")
			if !bytes.Equal(before.Body.Bytes(), after.Body.Bytes()) {
				t.Fatalf("PATCH %s: %d %.500s changed the object:\nbefore %.2000s\nafter  %.2000s", path, rec.Code, rec.Body, before.Body, after.Body)
			}
		default:
			t.Fatalf("PATCH %s: %d %.2000s", path, rec.Code, rec.Body)
		}
	})
}
