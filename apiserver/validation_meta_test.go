package apiserver

import (
	"reflect"
	"sort"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestValidateMetaUpdate checks that validateMetaUpdate answers what
// ValidateObjectMetaAccessorUpdate answers, on updates it takes the short
// way for and on the others.
func TestValidateMetaUpdate(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": int64(2),
			"creationTimestamp": "2026-01-02T03:04:05Z", "labels": map[string]any{"app": "x"},
		}
	}
	owner := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "ou", "controller": true}}
	for _, tc := range []struct {
		name   string
		change func(m, om map[string]any)
	}{
		{"unchanged", func(m, om map[string]any) {}},
		{"labels and annotations", func(m, om map[string]any) {
			m["labels"] = map[string]any{"app": "y", "b": "c"}
			m["annotations"] = map[string]any{"k": "v"}
		}},
		{"invalid labels", func(m, om map[string]any) {
			m["labels"] = map[string]any{"-bad": "x", "ok": "bad value!"}
		}},
		{"invalid annotation", func(m, om map[string]any) { m["annotations"] = map[string]any{"bad key!": "v"} }},
		{"owner references", func(m, om map[string]any) { m["ownerReferences"] = owner }},
		{"invalid owner reference", func(m, om map[string]any) {
			m["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "", "name": "", "uid": ""}}
		}},
		{"two controllers", func(m, om map[string]any) {
			m["ownerReferences"] = append(append([]any{}, owner...), map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "su", "controller": true})
		}},
		{"managed fields", func(m, om map[string]any) {
			mf := []any{map[string]any{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{}}}}
			m["managedFields"], om["managedFields"] = mf, mf
		}},
		{"invalid managed fields", func(m, om map[string]any) {
			mf := []any{map[string]any{"manager": "m", "operation": "Bad", "fieldsType": "Other"}}
			m["managedFields"], om["managedFields"] = mf, mf
		}},
		{"name changed", func(m, om map[string]any) { m["name"] = "b" }},
		{"namespace changed", func(m, om map[string]any) { m["namespace"] = "other" }},
		{"uid changed", func(m, om map[string]any) { m["uid"] = "u2" }},
		{"uid dropped", func(m, om map[string]any) { delete(m, "uid") }},
		{"creationTimestamp changed", func(m, om map[string]any) { m["creationTimestamp"] = "2026-01-02T03:04:06Z" }},
		{"creationTimestamp same instant", func(m, om map[string]any) { m["creationTimestamp"] = "2026-01-02T04:04:05+01:00" }},
		{"deletionTimestamp set", func(m, om map[string]any) { m["deletionTimestamp"] = "2026-01-02T03:04:05Z" }},
		{"deletionGracePeriodSeconds set", func(m, om map[string]any) { m["deletionGracePeriodSeconds"] = int64(30) }},
		{"generation decremented", func(m, om map[string]any) { m["generation"] = int64(1) }},
		{"generation negative", func(m, om map[string]any) { m["generation"], om["generation"] = int64(-1), int64(-1) }},
		{"generation float", func(m, om map[string]any) { m["generation"], om["generation"] = 2.0, 2.0 }},
		{"no resourceVersion", func(m, om map[string]any) { delete(m, "resourceVersion") }},
		{"resourceVersion not a string", func(m, om map[string]any) { m["resourceVersion"] = int64(7) }},
		{"deleting, finalizer added", func(m, om map[string]any) {
			m["deletionTimestamp"], om["deletionTimestamp"] = "2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z"
			m["finalizers"], om["finalizers"] = []any{"a", "b"}, []any{"a"}
		}},
		{"deleting, finalizer removed", func(m, om map[string]any) {
			m["deletionTimestamp"], om["deletionTimestamp"] = "2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z"
			m["finalizers"], om["finalizers"] = []any{}, []any{"a"}
		}},
		{"name of another type", func(m, om map[string]any) { m["name"], om["name"] = int64(1), int64(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, om := base(), base()
			tc.change(m, om)
			u := &unstructured.Unstructured{Object: map[string]any{"metadata": m}}
			old := &unstructured.Unstructured{Object: map[string]any{"metadata": om}}
			want := apivalidation.ValidateObjectMetaAccessorUpdate(u, old, field.NewPath("metadata"))
			got := validateMetaUpdate(u, old, field.NewPath("metadata"))
			// Labels and annotations are checked in map order: compare sorted.
			for _, l := range []field.ErrorList{got, want} {
				sort.Slice(l, func(i, j int) bool { return l[i].Error() < l[j].Error() })
			}
			if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}
