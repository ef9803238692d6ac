package client

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

// A namespace given for a cluster-scoped kind is ignored, as by
// controller-runtime's client and cache and by kube-apiserver (which clears
// metadata.namespace of a cluster-scoped object): the same call works
// whether the kind is cached or not, instead of a NotFound from the cache
// and a BadRequest from the server.
func TestClusterScopedKindIgnoresNamespace(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		// Namespaces are shared by every test of the binary on the real
		// server: a name and a label of this test's own.
		name := e.Namespace
		if len(name) > 61 {
			name = name[len(name)-61:] // keeps the random suffix
		}
		name = "c-" + name
		mine := map[string]string{"kloop-test": e.Namespace}
		cr := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: name, Labels: mine}}
		if err := c.Create(ctx, cr); err != nil {
			t.Fatalf("Create with a namespace: %v", err)
		}
		if cr.Namespace != "" || cr.UID == "" {
			t.Fatalf("Create answered namespace %q uid %q, want the server's object without namespace", cr.Namespace, cr.UID)
		}
		key := ObjectKey{Namespace: e.Namespace, Name: name}
		for _, tc := range []struct {
			name string
			r    Reader
		}{{"cached", c}, {"uncached", c.Uncached()}} {
			t.Run(tc.name, func(t *testing.T) {
				var got corev1.Namespace
				testutil.Eventually(t, "Get with a namespace", func() error { return tc.r.Get(ctx, key, &got) })
				if got.Name != name || got.Namespace != "" {
					t.Fatalf("Get: %s/%s", got.Namespace, got.Name)
				}
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
				testutil.Eventually(t, "unstructured Get with a namespace", func() error { return tc.r.Get(ctx, key, u) })
				var list corev1.NamespaceList
				if err := tc.r.List(ctx, &list, InNamespace(e.Namespace), MatchingLabels(mine)); err != nil {
					t.Fatalf("List InNamespace: %v", err)
				}
				if len(list.Items) != 1 || list.Items[0].Name != name {
					t.Fatalf("List InNamespace: %d items, want %s", len(list.Items), name)
				}
			})
		}
		for _, tc := range []struct {
			name  string
			write func(*corev1.Namespace) error
		}{
			{"Update", func(o *corev1.Namespace) error { o.Labels["updated"] = "y"; return c.Update(ctx, o) }},
			{"Patch", func(o *corev1.Namespace) error {
				return c.Patch(ctx, o, RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"y"}}}`)))
			}},
			{"Delete", func(o *corev1.Namespace) error { return c.Delete(ctx, o) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var o corev1.Namespace
				if err := c.Uncached().Get(ctx, ObjectKey{Name: name}, &o); err != nil {
					t.Fatal(err)
				}
				o.Namespace = e.Namespace
				if err := tc.write(&o); err != nil {
					t.Fatalf("%s with a namespace: %v", tc.name, err)
				}
			})
		}
	})
}
