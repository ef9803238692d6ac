package client

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Get with an empty name never answers success: from the server it is a
// BadRequest (as client-go's "resource name may not be empty"; the request
// went to the collection, and its list was decoded into the object), from
// the cache NotFound (no object has an empty name; as controller-runtime's
// cache).
func TestGetEmptyName(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}); err != nil {
			t.Fatal(err)
		}
		u := func(kind string) *unstructured.Unstructured {
			o := &unstructured.Unstructured{}
			o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
			return o
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		for _, tc := range []struct {
			name string
			key  ObjectKey
			obj  Object
		}{
			{"typed", ObjectKey{Namespace: ns}, &corev1.ConfigMap{}},
			{"unstructured", ObjectKey{Namespace: ns}, u("ConfigMap")},
			{"metadata-only", ObjectKey{Namespace: ns}, m},
			{"cluster-scoped", ObjectKey{}, &corev1.Namespace{}},
			{"cluster-scoped unstructured", ObjectKey{}, u("Namespace")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := c.Uncached().Get(ctx, tc.key, tc.obj); !apierrors.IsBadRequest(err) {
					t.Fatalf("uncached Get with an empty name: %v, want a BadRequest", err)
				}
				if err := c.Get(ctx, tc.key, tc.obj); !apierrors.IsNotFound(err) {
					t.Fatalf("cached Get with an empty name: %v, want NotFound", err)
				}
			})
		}
	})
}

// A patch with an empty body is a BadRequest: the client never sends the
// object itself in its place.
func TestEmptyPatch(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{FieldOwner: "kloop-test"})
		c := e.c
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "cm"}, Data: map[string]string{"k": "v"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		for _, pt := range []types.PatchType{types.MergePatchType, types.JSONPatchType, types.StrategicMergePatchType, types.ApplyPatchType} {
			for name, data := range map[string][]byte{"nil": nil, "empty": {}} {
				t.Run(string(pt)+"/"+name, func(t *testing.T) {
					local := cm.DeepCopy()
					local.Data["k"] = "local change, never sent"
					if err := c.Patch(ctx, local, RawPatch(pt, data)); !apierrors.IsBadRequest(err) {
						t.Fatalf("empty %s patch: %v, want a BadRequest", pt, err)
					}
					if err := c.Status().Patch(ctx, local, RawPatch(pt, data)); !apierrors.IsBadRequest(err) {
						t.Fatalf("empty %s status patch: %v, want a BadRequest", pt, err)
					}
					var got corev1.ConfigMap
					if err := c.Uncached().Get(ctx, KeyOf(cm), &got); err != nil || got.Data["k"] != "v" {
						t.Fatalf("after empty patches: %v %v", err, got.Data)
					}
				})
			}
		}
	})
}
