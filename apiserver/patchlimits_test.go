package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// copyRemovePairs is a JSON patch that copies /data/big to /data/copy
// and removes the copy, n times: each pair adds the value's size to the
// copies' total without growing the object.
func copyRemovePairs(n int) string {
	ops := make([]string, 0, 2*n)
	for range n {
		ops = append(ops, `{"op":"copy","from":"/data/big","path":"/data/copy"}`, `{"op":"remove","path":"/data/copy"}`)
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// doublingPatch is issue 17's attack: an add and 24 copies that each
// double an array (2 KB; unbounded, 1.6 GB).
func doublingPatch() string {
	ops := []string{`{"op":"add","path":"/metadata/annotations","value":{"a":["` + strings.Repeat("a", 100) + `"]}}`}
	for range 24 {
		ops = append(ops, `{"op":"copy","from":"/metadata/annotations/a","path":"/metadata/annotations/a/-"}`)
	}
	return "[" + strings.Join(ops, ",") + "]"
}

func repeatOps(op string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(op+",", n), ",") + "]"
}

// TestJSONPatchLimits checks kube-apiserver's bounds on JSON patches: at
// most 10,000 operations (413), at most 3 MiB added by copies (422).
func TestJSONPatchLimits(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	big := strings.Repeat("b", 100_000) // 100,002 bytes as JSON
	if rec := serveOnce(t, s, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"big":"`+big+`"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	test := `{"op":"test","path":"/data/big","value":"` + big[:0] + `"}`
	for _, tc := range []struct {
		name, patch string
		code        int
		message     string
	}{
		{"10,000 operations", repeatOps(`{"op":"test","path":"/metadata/name","value":"cm"}`, 10000), http.StatusOK, ""},
		{"10,001 operations", repeatOps(`{"op":"test","path":"/metadata/name","value":"cm"}`, 10001), http.StatusRequestEntityTooLarge,
			"Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"},
		{"10,001 operations, the first failing", repeatOps(test, 10001), http.StatusRequestEntityTooLarge, ""},
		{"copies of 3,100,062 bytes", copyRemovePairs(31), http.StatusOK, ""},
		{"copies of 3,200,064 bytes", copyRemovePairs(32), http.StatusUnprocessableEntity, "the server rejected our request due to an error in our request"},
		{"the doubling patch", doublingPatch(), http.StatusUnprocessableEntity, "the server rejected our request due to an error in our request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serveOnce(t, s, "PATCH", cms+"/cm", "application/json-patch+json", tc.patch)
			if rec.Code != tc.code {
				t.Fatalf("%d %.300s, want %d", rec.Code, rec.Body, tc.code)
			}
			if tc.message == "" {
				return
			}
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Message != tc.message {
				t.Errorf("%s (%v), want the message %q", rec.Body, err, tc.message)
			}
		})
	}
}
