package apiserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
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

// deployment is a Deployment whose pod template has n containers c0…c<n-1>,
// each with the given args.
func deployment(n int, args string) string {
	cs := make([]string, n)
	for i := range cs {
		cs[i] = fmt.Sprintf(`{"name":"c%d","image":"i","args":%s}`, i, args)
	}
	return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},` +
		`"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[` + strings.Join(cs, ",") + `]}}}}`
}

// TestStrategicMergeWork checks the bound on the list merges of strategic
// merge patches (413), and that lists the patch replaces do not count.
func TestStrategicMergeWork(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const deploys = "/apis/apps/v1/namespaces/default/deployments"
	manyArgs := `["` + strings.TrimSuffix(strings.Repeat(`a","`, 3000), `","`) + `"]`
	for _, tc := range []struct {
		name       string
		containers int
		patch      string
		code       int
		args       string
	}{
		{"one container into 1,000", 1000, `{"spec":{"template":{"spec":{"containers":[{"name":"c1","image":"j"}]}}}}`, http.StatusOK, ""},
		{"one container into 1,500", 1500, `{"spec":{"template":{"spec":{"containers":[{"name":"c1","image":"j"}]}}}}`, http.StatusRequestEntityTooLarge, ""},
		{"the order of 1,000 containers", 1000, `{"spec":{"template":{"spec":{"$setElementOrder/containers":[` + strings.Repeat(`{"name":"c"},`, 999) + `{"name":"c"}]}}}}`, http.StatusRequestEntityTooLarge, ""},
		{"replaced args of 3,000", 2, `{"spec":{"template":{"spec":{"containers":[{"name":"c1","args":` + manyArgs + `}]}}}}`, http.StatusOK, manyArgs},
		{"no list", 1500, `{"metadata":{"labels":{"a":"b"}}}`, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serveOnce(t, s, "DELETE", deploys+"/d", "", "")
			if rec := serveOnce(t, s, "POST", deploys, "application/json", deployment(tc.containers, cmp.Or(tc.args, "[]"))); rec.Code != http.StatusCreated {
				t.Fatalf("create: %d %.300s", rec.Code, rec.Body)
			}
			rec := serveOnce(t, s, "PATCH", deploys+"/d", "application/strategic-merge-patch+json", tc.patch)
			if rec.Code != tc.code {
				t.Fatalf("%d %.300s, want %d", rec.Code, rec.Body, tc.code)
			}
			if tc.code == http.StatusRequestEntityTooLarge && !strings.Contains(rec.Body.String(), "The allowed maximum list merge work of a strategic merge patch is 2097152") {
				t.Errorf("%s: not the bound's message", rec.Body)
			}
		})
	}
}

func TestStrategicMergeWorkCount(t *testing.T) {
	schema, err := strategicpatch.NewPatchMetaFromStruct(&appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	containers := func(names ...string) []any {
		var l []any
		for _, n := range names {
			l = append(l, map[string]any{"name": n, "env": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "args": []any{"x", "y"}})
		}
		return l
	}
	spec := func(l []any) map[string]any {
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": l}}}}
	}
	for _, tc := range []struct {
		name        string
		patch, orig map[string]any
		want        int64
	}{
		// containers (3+3)², and the env of each of the two matched ones (2+2)².
		{"merged with nested lists", spec(containers("a", "b", "z")), spec(containers("a", "b", "c")), 36 + 16 + 16},
		{"no list in the object", spec(containers("a")), map[string]any{}, 0},
		{"a list replaced", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a", "args": []any{"p"}}}}}}},
			spec(containers("a")), 4}, // containers (1+1)²; args replace
		{"element order", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"$setElementOrder/containers": []any{map[string]any{"name": "a"}}}}}},
			spec(containers("a", "b")), 9},
		{"deletion directives", map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []any{"a"}, "$retainKeys": []any{"x"}}},
			map[string]any{"metadata": map[string]any{"finalizers": []any{"a", "b"}}}, 0},
		{"finalizers", map[string]any{"metadata": map[string]any{"finalizers": []any{"a"}}}, map[string]any{"metadata": map[string]any{"finalizers": []any{"a", "b"}}}, 9},
		{"merge keys that are not map keys", spec([]any{map[string]any{"name": []any{}, "env": []any{}}}), spec([]any{map[string]any{"name": map[string]any{}}}), 4},
	} {
		if got := strategicMergeWork(tc.patch, tc.orig, schema); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestDeepMergePatch checks a merge patch as deep as a body may be: it is
// applied (in linear time; json-patch.v4 takes seconds) and its result
// refused.
func TestDeepMergePatch(t *testing.T) {
	s := newTestServer(t, Options{Token: "t"})
	const cms = "/api/v1/namespaces/default/configmaps"
	if rec := serveOnce(t, s, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		depth int
		code  int
	}{{9997, http.StatusUnprocessableEntity}, {10001, http.StatusBadRequest}} {
		patch := `{"data":{"k":` + strings.Repeat(`{"a":`, tc.depth-2) + `1` + strings.Repeat(`}`, tc.depth) // depth levels
		for _, pt := range []string{"application/merge-patch+json", "application/strategic-merge-patch+json"} {
			if rec := serveOnce(t, s, "PATCH", cms+"/cm", pt, patch); rec.Code != tc.code {
				t.Errorf("%s of depth %d: %d %.300s, want %d", pt, tc.depth, rec.Code, rec.Body, tc.code)
			}
		}
	}
}
