package conformance

import (
	"net/http"
	"strings"
)

// limitTranscripts: the bounds on what a request may ask for (issue 17):
// the operations and copies of JSON patches, deep patches.
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
