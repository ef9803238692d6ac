package client

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
)

// A user's CRD struct works end to end: typed informer from the factory,
// cached reads, writes and the status subresource.
func TestCRDTypes(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		testcrd.AddToScheme(scheme)
		e := newEnvScheme(t, ae, scheme)
		c := e.c
		ns := e.Namespace
		// Shared by every test of the binary on the real server: created
		// unless it exists, then waited for (Established, discovered, served).
		if err := testcrd.Install(ctx, e.cfg); err != nil {
			t.Fatal(err)
		}
		w := &testcrd.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1"}, Spec: testcrd.WidgetSpec{Color: "red", Size: 3}}
		testutil.Eventually(t, "the CRD served", func() error {
			err := c.Create(ctx, w)
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				return err
			}
			if err != nil {
				t.Fatal(err)
			}
			return nil
		})
		if w.UID == "" || w.Kind != "Widget" {
			t.Fatalf("created %+v", w)
		}
		w.Status.State = "ready"
		if err := c.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}

		widgets, err := informer.InformerFor[*testcrd.Widget](e.factory, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if err := widgets.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		var got testcrd.Widget
		testutil.Eventually(t, "the status in the cache", func() error {
			if err := c.Get(ctx, KeyOf(w), &got); err != nil {
				return err
			}
			if got.Status.State != "ready" {
				return apierrors.NewConflict(schema.GroupResource{}, "", nil)
			}
			return nil
		})
		if got.Spec.Color != "red" || got.Spec.Size != 3 {
			t.Fatalf("cached %+v", got)
		}
		if n := e.factory.NumInformers(); n != 1 {
			t.Fatalf("%d informers: the client and InformerFor should share one", n)
		}
		var list testcrd.WidgetList
		if err := c.List(ctx, &list, InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "w1" || list.Items[0].Kind != "Widget" {
			t.Fatalf("list %+v", list.Items)
		}
		if err := c.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the delete in the cache", func() error {
			if _, ok := widgets.Get(ns, "w1"); ok {
				return apierrors.NewConflict(schema.GroupResource{}, "", nil)
			}
			return nil
		})
	})
}
