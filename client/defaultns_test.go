package client

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
)

// With FactoryOptions.DefaultNamespaces of one namespace, cached reads of namespaced kinds see
// that namespace only (the informers list and watch it alone): a List of all
// namespaces returns its objects, a List of another namespace fails with
// ErrOutOfScope, and so does a Get there; cluster-scoped kinds are read
// whole.
func TestDefaultNamespace(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		plain := newEnv(t, ae, Options{})
		ns, other := plain.Namespace, plain.otherNamespace(t, ctx)
		for _, n := range []string{ns, other} {
			if err := plain.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "cm", Labels: map[string]string{"kloop-test": ns}}}); err != nil {
				t.Fatal(err)
			}
		}
		f, err := informer.NewFactory(ae.Config(), informer.FactoryOptions{HTTPClient: plain.http, DefaultNamespaces: []string{ns}})
		if err != nil {
			t.Fatal(err)
		}
		fctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- f.Start(fctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		c, err := New(ae.Config(), Options{Factory: f})
		if err != nil {
			t.Fatal(err)
		}
		var l corev1.ConfigMapList
		if err := c.List(ctx, &l, MatchingLabels(map[string]string{"kloop-test": ns})); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, cm := range l.Items {
			got = append(got, cm.Namespace)
		}
		if !slices.Equal(got, []string{ns}) {
			t.Fatalf("List of all namespaces: %q, want only %q", got, ns)
		}
		err = c.List(ctx, &l, InNamespace(other))
		if !errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err) {
			t.Fatalf("List of another namespace: %v, want ErrOutOfScope", err)
		}
		var cm corev1.ConfigMap
		if err := c.Get(ctx, ObjectKey{Namespace: ns, Name: "cm"}, &cm); err != nil {
			t.Fatalf("Get in the namespace: %v", err)
		}
		// Not NotFound: the object may well exist there, and a reconciler
		// told it does not would act on a falsehood (controller-runtime's
		// DefaultNamespaces cache fails such a Get too).
		if err := c.Get(ctx, ObjectKey{Namespace: other, Name: "cm"}, &cm); !errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err) || apierrors.IsNotFound(err) {
			t.Fatalf("Get in another namespace: %v, want ErrOutOfScope", err)
		}
		if err := c.Uncached().Get(ctx, ObjectKey{Namespace: other, Name: "cm"}, &cm); err != nil {
			t.Fatalf("uncached Get in another namespace: %v", err)
		}
		var nsObj corev1.Namespace
		if err := c.Get(ctx, ObjectKey{Name: other}, &nsObj); err != nil {
			t.Fatalf("Get of a cluster-scoped object: %v", err)
		}
		// One informer for the namespace, whether a Scope names it or not.
		if _, err := f.ForObject(&corev1.ConfigMap{}, informer.Scope{}); err != nil {
			t.Fatal(err)
		}
		n := f.NumInformers()
		if _, err := f.ForObject(&corev1.ConfigMap{}, informer.Scope{Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		if f.NumInformers() != n {
			t.Error("the default scope and the scope of the default namespace have two informers")
		}
		if _, err := f.ForObject(&corev1.ConfigMap{}, informer.Scope{Namespace: other}); err == nil {
			t.Error("an informer of another namespace was made")
		}
		if _, err := f.ForObject(&corev1.ConfigMap{}, informer.Scope{FieldSelector: "metadata.namespace=" + other}); err == nil {
			t.Error("an informer of another namespace, by field selector, was made")
		}
		if _, err := f.ForObject(&corev1.ConfigMap{}, informer.Scope{FieldSelector: "metadata.namespace=" + ns}); err != nil {
			t.Errorf("an informer of the namespace by field selector: %v", err)
		}
		_, err = informer.NewFactory(ae.Config(), informer.FactoryOptions{DefaultNamespaces: []string{"Not_A_Namespace"}})
		if err == nil {
			t.Error("an invalid DefaultNamespaces was accepted")
		}
	})
}
