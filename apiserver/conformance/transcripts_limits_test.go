package conformance

import (
	"fmt"
	"net/http"
	"strings"
)

// limitTranscripts: the bounds on what a request may ask for, and the
// parts of requests that are refused (issue 17): the operations and copies
// of JSON patches, deep patches, "." and ".." as names and namespaces.
var limitTranscripts = []transcript{
	{"json-patch-limits", func(tr *T) {
		big := strings.Repeat("b", 100_000) // 100,002 bytes as JSON
		tr.Post(cms, configMap("a", `"data":{"big":"`+big+`"}`)).Want(http.StatusCreated)
		test := `{"op":"test","path":"/metadata/name","value":"a"}`
		tr.Patch(cms+"/a", "json", repeatOps(test, 10000)).Want(http.StatusOK)
		// One more operation: 413, before anything is applied.
		tr.Patch(cms+"/a", "json", repeatOps(test, 10001)).Want(http.StatusRequestEntityTooLarge)
		// Copies add 3 MiB at most (counting what later operations
		// remove): 31 copies of the value fit, 32 do not.
		tr.Patch(cms+"/a", "json", copyRemovePairs(31)).Want(http.StatusOK)
		tr.Patch(cms+"/a", "json", copyRemovePairs(32)).Want(http.StatusUnprocessableEntity)
		// Issue 17's 2 KB patch: an add and 24 copies doubling an array.
		ops := []string{`{"op":"add","path":"/metadata/annotations","value":{"a":["` + strings.Repeat("a", 100) + `"]}}`}
		for range 24 {
			ops = append(ops, `{"op":"copy","from":"/metadata/annotations/a","path":"/metadata/annotations/a/-"}`)
		}
		tr.Patch(cms+"/a", "json", "["+strings.Join(ops, ",")+"]").Want(http.StatusUnprocessableEntity)
		tr.Get(cms + "/a").Want(http.StatusOK)
	}},
	{"deep-patches", func(tr *T) {
		// Patches nested 2,000 levels deep (json-patch.v4, kube-apiserver's
		// library, takes the depth squared); past 10,000, invalid JSON.
		tr.Post(gadgets, gadget("g", `{"size":1}`)).Want(http.StatusCreated)
		tr.Patch(gadgets+"/g", "merge", `{"spec":{"deep":`+nested(2000)+`}}`).Want(http.StatusOK)
		tr.Patch(gadgets+"/g", "json", `[{"op":"add","path":"/spec/deep","value":`+nested(2000)+`}]`).Want(http.StatusOK)
		tr.Patch(gadgets+"/g", "merge", `{"spec":{"deep":`+nested(10001)+`}}`).Want(http.StatusBadRequest)
		tr.Get(gadgets + "/g").Want(http.StatusOK)
	}},
}

// pathSegmentTranscripts: "." and ".." (and names with "%") as the
// namespace or the name of a path, on every verb; kube-apiserver refuses a
// name with a 400 (its registry's key function), a namespace with a 500
// (its storage refuses the key, quoting it), each after the request's own
// errors.
var pathSegmentTranscripts = []transcript{
	{"path-segments", func(tr *T) {
		tr.Post(cms, configMap("a", `"data":{"k":"v"}`)).Want(http.StatusCreated)
		tr.Post(deploys, deployBody).Want(http.StatusCreated)
		for _, ns := range []string{"..", ".", "%2e%2E"} {
			base := "/api/v1/namespaces/" + ns + "/configmaps"
			tr.Get(base).Want(http.StatusInternalServerError)
			tr.Get(base + "/a").Want(http.StatusInternalServerError)
			tr.Get(base + "?watch=1").Want(http.StatusInternalServerError)
			tr.Get("/api/v1/watch/namespaces/" + ns + "/configmaps").Want(http.StatusInternalServerError)
			tr.Delete(base, "").Want(http.StatusInternalServerError)
			tr.Delete(base+"/a", "").Want(http.StatusInternalServerError)
			tr.Put(base+"/a", configMap("a", "")).Want(http.StatusInternalServerError)
			tr.Patch(base+"/a", "merge", `{}`).Want(http.StatusInternalServerError)
			tr.Post(base, configMap("b", "")).Want(http.StatusInternalServerError)
			tr.Post(base+"?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"g-"}}`).Want(http.StatusInternalServerError)
		}
		for _, name := range []string{"..", ".", "%2E%2e", "a%25b"} {
			path := cms + "/" + name
			tr.Get(path).Want(http.StatusBadRequest)
			tr.Delete(path, "").Want(http.StatusBadRequest)
			tr.Put(path, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+strings.ReplaceAll(strings.ReplaceAll(strings.ToLower(name), "%2e", "."), "%25", "%")+`"}}`).Want(http.StatusBadRequest)
			tr.Patch(path, "merge", `{}`).Want(http.StatusBadRequest)
			tr.Patch(path, "json", `[]`).Want(http.StatusBadRequest)
		}
		tr.Get(cms + "/...").Want(http.StatusNotFound)
		tr.Get("/api/v1/namespaces/{ns}/configmaps/../status").Want(http.StatusNotFound) // no such subresource
		tr.Get("/api/v1/namespaces/../bogus").Want(http.StatusNotFound)
		// Other kinds: the key quoted is where kube-apiserver keeps them.
		for _, p := range []string{"/api/v1/namespaces/../services", "/api/v1/namespaces/../services/x", "/api/v1/namespaces/../pods", "/api/v1/namespaces/../events",
			"/apis/events.k8s.io/v1/namespaces/../events", "/api/v1/namespaces/../secrets", "/api/v1/namespaces/../serviceaccounts",
			"/apis/coordination.k8s.io/v1/namespaces/../leases", "/apis/apps/v1/namespaces/../replicasets", "/apis/apps/v1/namespaces/../deployments/d/scale",
			"/api/v1/namespaces/../pods/p/log", "/apis/{group}/v1/namespaces/../gadgets", "/apis/{group}/v1/namespaces/../gadgets/g"} {
			tr.Get(p).Want(http.StatusInternalServerError)
		}
		tr.Post("/apis/{group}/v1/namespaces/../gadgets", gadget("g", "{}")).Want(http.StatusInternalServerError)
		for _, p := range []string{"/api/v1/namespaces/{ns}/pods/../log", "/api/v1/namespaces/{ns}/pods/../status", "/apis/apps/v1/namespaces/{ns}/deployments/../scale",
			"/api/v1/namespaces/..", "/api/v1/namespaces/../status", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/..", "/api/v1/namespaces/../configmaps/.."} {
			tr.Get(p).Want(http.StatusBadRequest)
		}
		tr.Post("/api/v1/namespaces/{ns}/pods/../exec?command=ls", "").Want(http.StatusBadRequest)
		tr.Put("/apis/apps/v1/namespaces/{ns}/deployments/../scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":".."},"spec":{"replicas":1}}`).Want(http.StatusBadRequest)
		// A name or namespace in the body: validation.
		tr.Post(cms, configMap("..", "")).Want(http.StatusUnprocessableEntity)
		tr.Post(cms, configMap("a%b", "")).Want(http.StatusUnprocessableEntity)
		// The request's own errors come first.
		tr.Delete(cms+"/..", `{"propagationPolicy":"Bogus"}`).Want(http.StatusUnprocessableEntity)
		tr.Patch(cms+"/..", "text/plain", `x`).Want(http.StatusUnsupportedMediaType)
		tr.Patch("/api/v1/namespaces/../configmaps/a", "text/plain", `x`).Want(http.StatusUnsupportedMediaType)
		tr.Put(cms+"/..", configMap("b", "")).Want(http.StatusBadRequest)
		tr.Put(cms+"/..", `{bad`).Want(http.StatusBadRequest)
		tr.Put("/api/v1/namespaces/../configmaps/a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"other"}}`).Want(http.StatusBadRequest)
		tr.Get("/api/v1/namespaces/../configmaps?labelSelector=a%20in%20(").Want(http.StatusBadRequest)
		tr.Get("/api/v1/namespaces/../configmaps?limit=x").Want(http.StatusBadRequest)
		tr.Post("/api/v1/namespaces/../configmaps", `{bad`).Want(http.StatusBadRequest)
		tr.Post("/api/v1/namespaces/../configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}`).Want(http.StatusBadRequest)
		// A watch of one object by name is a list of it: no name check.
		tr.Watch("/api/v1/watch/namespaces/{ns}/configmaps/..?timeoutSeconds=1", Events(1)).Want(http.StatusOK)
		tr.Get(cms).Want(http.StatusOK)
	}},
}

// boundedTextTranscripts: what the server quotes of long field names.
// Warnings are cut as kube-apiserver's warning recorder cuts them (error
// messages the embedded server bounds too, where kube-apiserver quotes
// them whole: not compared here).
var boundedTextTranscripts = []transcript{
	{"bounded-warnings", func(tr *T) {
		tr.Post(cms, configMap("a", `"`+strings.Repeat("n", 5000)+`":1`)).Want(http.StatusCreated)
		tr.Post(cms, configMap("b", `"`+strings.Repeat("é", 1<<19)+`":1`)).Want(http.StatusCreated)
		var fields []string
		for i := range 20 {
			fields = append(fields, fmt.Sprintf(`"f%02d%s":1`, i, strings.Repeat("x", 300)))
		}
		tr.Post(cms, configMap("c", strings.Join(fields, ","))).Want(http.StatusCreated)
		tr.Post(cms, configMap("d", strings.Join(fields[:13], ","))).Want(http.StatusCreated)
		tr.Patch(cms+"/d", "merge", `{"`+strings.Repeat("m", 5000)+`":1}`).Want(http.StatusOK)
	}},
}

// endpointTranscripts: the methods the endpoints that are not resources
// take. /version, /api and the resource lists of the built-in group
// versions take GET alone (kube-apiserver's go-restful routes: a 405, for
// HEAD too); the resource list of a CRD's group version (apiextensions'
// handler), a group, and the health endpoints take every method;
// a path with an empty segment is none of theirs. A 404 under a go-restful
// root (/api/, /version/, a built-in group) is a Status, elsewhere the
// mux's text.
var endpointTranscripts = []transcript{
	{"read-only-endpoints", func(tr *T) {
		methods := []string{http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions}
		for _, p := range []string{"/version", "/version/", "/api", "/api/", "/api/v1", "/api/v1/", "/apis/apps/v1", "/apis/apps/v1/"} {
			for _, m := range methods {
				tr.Do(m, p, "", "").Want(http.StatusMethodNotAllowed)
			}
		}
		for _, p := range []string{"/apis/apps", "/apis/{group}", "/apis/{group}/v1"} {
			for _, m := range methods {
				tr.Do(m, p, "", "").Want(http.StatusOK)
			}
		}
		for _, p := range []string{"/healthz", "/livez", "/readyz", "/healthz/ping", "/livez/ping", "/readyz/ping"} {
			for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
				tr.Do(m, p, "", "").Want(http.StatusOK)
			}
		}
		for _, p := range []string{"/healthz/", "/livez/", "/readyz/", "/healthz//ping", "/healthzx", "/api/v2", "/api/v2/pods", "/version/x", "/apis/apps/v9", "/apis/apps/v9/x", "/apis/{group}/v2", "/apis/none.example.com", "/apis/none.example.com/v1"} {
			tr.Get(p).Want(http.StatusNotFound)
			tr.Post(p, "").Want(http.StatusNotFound)
		}
	}},
}

// nested is a JSON value nested depth levels deep.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// repeatOps is a JSON patch of n times the operation op.
func repeatOps(op string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(op+",", n), ",") + "]"
}

// copyRemovePairs is a JSON patch that copies /data/big to /data/copy and
// removes the copy, n times: the copies add n times the value's size
// without growing the object.
func copyRemovePairs(n int) string {
	ops := make([]string, 0, 2*n)
	for range n {
		ops = append(ops, `{"op":"copy","from":"/data/big","path":"/data/copy"}`, `{"op":"remove","path":"/data/copy"}`)
	}
	return "[" + strings.Join(ops, ",") + "]"
}
