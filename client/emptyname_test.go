package client

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kloop.dev/kloop/apiserver/apiservertest"
)

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
