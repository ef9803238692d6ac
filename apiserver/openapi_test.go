package apiserver_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// TestOpenAPIAgreesWithKubeAPIServer compares the embedded server's OpenAPI
// v3 documents with kube-apiserver's, group-version by group-version: every
// schema the embedded server publishes exists there with the same
// properties, and at every level the same type, format, reference and
// strategic-merge annotations (what kubectl explain, client-side validation
// and strategic merge patches read). It needs both servers at once.
func TestOpenAPIAgreesWithKubeAPIServer(t *testing.T) {
	if !slices.Contains(apiservertest.Targets(), apiservertest.RealServer) {
		t.Skip("compares with the real target, which $" + apiservertest.EnvTargets + " leaves out")
	}
	embedded := newRaw(t, startTarget(t, apiservertest.Embedded, apiservertest.Options{}))
	real := newRaw(t, apiservertest.Real(t))
	var index struct {
		Paths map[string]any `json:"paths"`
	}
	getJSON(t, embedded, "/openapi/v3", &index)
	if len(index.Paths) == 0 {
		t.Fatal("no group-versions in the embedded server's /openapi/v3")
	}
	for _, gv := range slices.Sorted(maps.Keys(index.Paths)) {
		t.Run(gv, func(t *testing.T) {
			var mine, theirs struct {
				Components struct {
					Schemas map[string]any `json:"schemas"`
				} `json:"components"`
			}
			getJSON(t, embedded, "/openapi/v3/"+gv, &mine)
			getJSON(t, real, "/openapi/v3/"+gv, &theirs)
			if len(mine.Components.Schemas) == 0 {
				t.Fatal("no schemas")
			}
			for _, name := range slices.Sorted(maps.Keys(mine.Components.Schemas)) {
				other, ok := theirs.Components.Schemas[name]
				if !ok {
					t.Errorf("%s: not in kube-apiserver's document", name)
					continue
				}
				for _, d := range compareSchemas(name, mine.Components.Schemas[name], other) {
					t.Error(d)
				}
			}
		})
	}
}

func getJSON(t *testing.T, c *rawClient, path string, into any) {
	t.Helper()
	resp, b := c.do("GET", path, "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// compareSchemas lists the differences between two schemas in the
// attributes compared, recursively through properties, items,
// additionalProperties and allOf.
func compareSchemas(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if !reflect.DeepEqual(a, b) {
			return []string{fmt.Sprintf("%s: %v, kube-apiserver: %v", path, a, b)}
		}
		return nil
	}
	var diffs []string
	// A reference is the same whether written {$ref} or {allOf: [{$ref}]}
	// (kube-apiserver's form, which leaves room for a description).
	if ra, rb := schemaRef(am), schemaRef(bm); ra != rb {
		diffs = append(diffs, fmt.Sprintf("%s: reference %q, kube-apiserver: %q", path, ra, rb))
	} else if ra != "" {
		return diffs
	}
	for _, k := range []string{"type", "format", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key"} {
		if !reflect.DeepEqual(am[k], bm[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: %s %v, kube-apiserver: %v", path, k, am[k], bm[k]))
		}
	}
	ap, _ := am["properties"].(map[string]any)
	bp, _ := bm["properties"].(map[string]any)
	if !slices.Equal(slices.Sorted(maps.Keys(ap)), slices.Sorted(maps.Keys(bp))) {
		diffs = append(diffs, fmt.Sprintf("%s: properties %v, kube-apiserver: %v", path, slices.Sorted(maps.Keys(ap)), slices.Sorted(maps.Keys(bp))))
	}
	for name, p := range ap {
		if q, ok := bp[name]; ok {
			diffs = append(diffs, compareSchemas(path+"."+name, p, q)...)
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if am[k] != nil || bm[k] != nil {
			diffs = append(diffs, compareSchemas(path+"/"+k, am[k], bm[k])...)
		}
	}
	aa, _ := am["allOf"].([]any)
	ba, _ := bm["allOf"].([]any)
	if len(aa) != len(ba) {
		diffs = append(diffs, fmt.Sprintf("%s: allOf %v, kube-apiserver: %v", path, aa, ba))
	} else {
		for i := range aa {
			diffs = append(diffs, compareSchemas(fmt.Sprintf("%s/allOf[%d]", path, i), aa[i], ba[i])...)
		}
	}
	return diffs
}

// schemaRef returns the schema's reference, if it is one: {$ref: R} or
// {allOf: [{$ref: R}]}.
func schemaRef(m map[string]any) string {
	if r, ok := m["$ref"].(string); ok {
		return r
	}
	if all, ok := m["allOf"].([]any); ok && len(all) == 1 {
		if one, ok := all[0].(map[string]any); ok {
			r, _ := one["$ref"].(string)
			return r
		}
	}
	return ""
}
