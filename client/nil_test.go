package client

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// Nil objects and lists (typed nil pointers included) are errors, never
// panics, for every read and write, cached or not, and for MergeFrom.
func TestNilObjects(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		key := ObjectKey{Namespace: e.Namespace, Name: "x"}
		objs := map[string]Object{
			"nil":                nil,
			"nil *Pod":           (*corev1.Pod)(nil),
			"nil *Unstructured":  (*unstructured.Unstructured)(nil),
			"nil *PartialObject": (*metav1.PartialObjectMetadata)(nil),
		}
		lists := map[string]ObjectList{
			"nil":                    nil,
			"nil *PodList":           (*corev1.PodList)(nil),
			"nil *UnstructuredList":  (*unstructured.UnstructuredList)(nil),
			"nil *PartialObjectList": (*metav1.PartialObjectMetadataList)(nil),
		}
		patch := RawPatch(types.MergePatchType, []byte(`{}`))
		ops := map[string]func(Object) error{
			"Get":             func(o Object) error { return c.Get(ctx, key, o) },
			"Uncached Get":    func(o Object) error { return c.Uncached().Get(ctx, key, o) },
			"Create":          func(o Object) error { return c.Create(ctx, o) },
			"Update":          func(o Object) error { return c.Update(ctx, o) },
			"Patch":           func(o Object) error { return c.Patch(ctx, o, patch) },
			"MergeFrom Patch": func(o Object) error { return c.Patch(ctx, o, MergeFrom(o)) },
			"Delete":          func(o Object) error { return c.Delete(ctx, o) },
			"Status Update":   func(o Object) error { return c.Status().Update(ctx, o) },
			"Status Patch":    func(o Object) error { return c.Status().Patch(ctx, o, patch) },
		}
		for on, o := range objs {
			for opn, op := range ops {
				t.Run(opn+"/"+on, func(t *testing.T) {
					if err := op(o); err == nil {
						t.Fatal("no error")
					}
				})
			}
		}
		for ln, l := range lists {
			for _, r := range []Reader{c, c.Uncached()} {
				t.Run("List/"+ln, func(t *testing.T) {
					if err := r.List(ctx, l); err == nil {
						t.Fatal("no error")
					}
				})
			}
		}
	})
	// A merge patch from nil would send the whole object as the patch.
	for name, orig := range map[string]Object{"nil": nil, "nil *Pod": (*corev1.Pod)(nil)} {
		if data, err := MergeFrom(orig).Data(newPod("ns", "p", nil)); err == nil {
			t.Errorf("MergeFrom(%s).Data = %s, want an error", name, data)
		}
	}
}
