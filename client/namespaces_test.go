package client

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
)

// A cache of namespaces a and b (FactoryOptions.DefaultNamespaces) holds
// their objects, not c's: one informer per namespace; a Get or List of c
// is ErrOutOfScope, naming the cache's namespaces; a List of all namespaces
// merges a's and b's; a handler of the kind's informer sees the events of a
// and b. ByObject selects ConfigMaps by label and Secrets by field, and
// transforms ConfigMaps with a transform of their own; cluster-scoped
// Namespaces are read whole.
func TestDefaultNamespaces(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		plain := newEnv(t, ae, Options{})
		a, b := plain.Namespace, plain.otherNamespace(t, ctx)
		cNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c" + b[1:]}}
		if err := plain.c.Create(ctx, cNS); err != nil {
			t.Fatal(err)
		}
		c := cNS.Name
		t.Cleanup(func() { _ = plain.c.Delete(context.Background(), cNS) })
		mine := map[string]string{"kloop-test": a}
		for _, ns := range []string{a, b, c} {
			for _, obj := range []Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: mine}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabeled"}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s", Labels: mine}, Type: "kloop.dev/scoped"},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "opaque", Labels: mine}, Type: corev1.SecretTypeOpaque},
			} {
				if err := plain.c.Create(ctx, obj); err != nil {
					t.Fatal(err)
				}
			}
		}
		mark := func(v string) func(informer.Object) (informer.Object, error) {
			return func(o informer.Object) (informer.Object, error) {
				o.SetAnnotations(map[string]string{"transform": v})
				return o, nil
			}
		}
		f, err := informer.NewFactory(ae.Config(), informer.FactoryOptions{
			HTTPClient:        plain.http,
			DefaultNamespaces: []string{b, a}, // in any order
			Transform:         mark("default"),
			ByObject: map[schema.GroupKind]informer.ObjectOptions{
				{Kind: "ConfigMap"}: {LabelSelector: "kloop-test=" + a, Transform: mark("configmap")},
				{Kind: "Secret"}:    {FieldSelector: "type=kloop.dev/scoped"},
			},
		})
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
		cl, err := New(ae.Config(), Options{Factory: f})
		if err != nil {
			t.Fatal(err)
		}

		// A handler of the kind's informer sees a's and b's ConfigMaps.
		cms, err := informer.InformerFor[*corev1.ConfigMap](f, informer.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[string]bool{}
		reg, err := cms.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{AddFunc: func(cm *corev1.ConfigMap, _ bool) {
			mu.Lock()
			defer mu.Unlock()
			seen[cm.Namespace+"/"+cm.Name] = true
		}}, informer.HandlerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cms.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		if n := f.NumInformers(); n != 2 {
			t.Errorf("%d informers for the ConfigMaps of 2 namespaces, want 2", n)
		}
		if err := plain.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "later", Labels: mine}}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the handler sees a's and b's ConfigMaps", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return seen[a+"/cm"] && seen[b+"/cm"] && seen[b+"/later"]
		})
		testutil.Eventually(t, "the handler's registration syncs", reg.HasSynced)
		mu.Lock()
		for k := range seen {
			if strings.HasPrefix(k, c+"/") || strings.HasSuffix(k, "/unlabeled") {
				t.Errorf("the handler saw %s", k)
			}
		}
		mu.Unlock()
		if got, ok := cms.Get(b, "later"); !ok || got.Name != "later" {
			t.Errorf("the informer's Get of b/later: %v %v", got, ok)
		}
		if _, ok := cms.Get(c, "cm"); ok {
			t.Error("the informer holds c/cm")
		}

		// Cached Get: a and b answer; c is out of scope, not NotFound.
		var cm corev1.ConfigMap
		for _, ns := range []string{a, b} {
			if err := cl.Get(ctx, ObjectKey{Namespace: ns, Name: "cm"}, &cm); err != nil {
				t.Fatalf("Get %s/cm: %v", ns, err)
			}
			if cm.Annotations["transform"] != "configmap" {
				t.Errorf("ConfigMap %s/cm was transformed by %q, want the ConfigMaps' transform", ns, cm.Annotations["transform"])
			}
		}
		err = cl.Get(ctx, ObjectKey{Namespace: c, Name: "cm"}, &cm)
		wantNS := `namespaces ` + strconv.Quote(min(a, b)) + `, ` + strconv.Quote(max(a, b))
		if !errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err) || apierrors.IsNotFound(err) ||
			!strings.Contains(err.Error(), `configmaps "cm" in namespace `+strconv.Quote(c)) || !strings.Contains(err.Error(), wantNS) {
			t.Fatalf("Get of c/cm: %v, want ErrOutOfScope naming the object and %s", err, wantNS)
		}
		// The label selector of ConfigMaps: an unlabeled one is not cached.
		if err := cl.Get(ctx, ObjectKey{Namespace: a, Name: "unlabeled"}, &cm); !apierrors.IsNotFound(err) {
			t.Errorf("Get of an unlabeled ConfigMap: %v, want NotFound", err)
		}

		// Cached List: all namespaces merge a's and b's; one namespace
		// reads its own; c is out of scope.
		names := func(l *corev1.ConfigMapList) (out []string) {
			for _, cm := range l.Items {
				out = append(out, cm.Namespace+"/"+cm.Name)
			}
			return out
		}
		var l corev1.ConfigMapList
		if err := cl.List(ctx, &l); err != nil {
			t.Fatal(err)
		}
		want := []string{a + "/cm", b + "/cm", b + "/later"}
		slices.Sort(want)
		if got := names(&l); !slices.Equal(got, want) {
			t.Errorf("List of all namespaces: %q, want %q", got, want)
		}
		if err := cl.List(ctx, &l, InNamespace(b)); err != nil {
			t.Fatal(err)
		}
		if got := names(&l); !slices.Equal(got, []string{b + "/cm", b + "/later"}) {
			t.Errorf("List of b: %q", got)
		}
		if err := cl.List(ctx, &l, InNamespace(c)); !errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err) {
			t.Errorf("List of c: %v, want ErrOutOfScope", err)
		}

		// The field selector of Secrets, and the factory's transform for
		// them.
		var sl corev1.SecretList
		if err := cl.List(ctx, &sl, MatchingLabels(mine)); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range sl.Items {
			got = append(got, s.Namespace+"/"+s.Name)
			if s.Annotations["transform"] != "default" {
				t.Errorf("Secret %s/%s transformed by %q, want the default", s.Namespace, s.Name, s.Annotations["transform"])
			}
		}
		want = []string{a + "/s", b + "/s"}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("Secrets: %q, want %q (type=kloop.dev/scoped in a and b)", got, want)
		}

		// Cluster-scoped kinds ignore the namespaces.
		var nsObj corev1.Namespace
		if err := cl.Get(ctx, ObjectKey{Name: c}, &nsObj); err != nil {
			t.Fatalf("Get of Namespace c: %v", err)
		}
		var nsl corev1.NamespaceList
		if err := cl.List(ctx, &nsl); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(nsl.Items, func(n corev1.Namespace) bool { return n.Name == c }) {
			t.Error("the List of Namespaces lacks c")
		}
	})
}

// FactoryOptions.DefaultNamespaces and ByObject are validated; ByObject
// namespaces for a cluster-scoped kind are refused when its informer is
// made, and [""] gives a kind all namespaces.
func TestNamespacesOptions(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		plain := newEnv(t, ae, Options{})
		for _, tt := range []struct {
			name string
			opts informer.FactoryOptions
		}{
			{"empty DefaultNamespaces", informer.FactoryOptions{DefaultNamespaces: []string{}}},
			{"all in DefaultNamespaces", informer.FactoryOptions{DefaultNamespaces: []string{""}}},
			{"a duplicate", informer.FactoryOptions{DefaultNamespaces: []string{"a", "b", "a"}}},
			{"not a name", informer.FactoryOptions{DefaultNamespaces: []string{"a", "B_"}}},
			{"no kind", informer.FactoryOptions{ByObject: map[schema.GroupKind]informer.ObjectOptions{{Group: "apps"}: {}}}},
			{"all and one", informer.FactoryOptions{ByObject: map[schema.GroupKind]informer.ObjectOptions{{Kind: "Pod"}: {Namespaces: []string{"", "a"}}}}},
			{"bad labels", informer.FactoryOptions{ByObject: map[schema.GroupKind]informer.ObjectOptions{{Kind: "Pod"}: {LabelSelector: "a in (b"}}}},
			{"bad fields", informer.FactoryOptions{ByObject: map[schema.GroupKind]informer.ObjectOptions{{Kind: "Pod"}: {FieldSelector: "a=b=c,,"}}}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tt.opts.HTTPClient = plain.http
				if _, err := informer.NewFactory(ae.Config(), tt.opts); err == nil {
					t.Error("accepted")
				}
			})
		}
		f, err := informer.NewFactory(ae.Config(), informer.FactoryOptions{
			HTTPClient:        plain.http,
			DefaultNamespaces: []string{"a", "b"},
			ByObject: map[schema.GroupKind]informer.ObjectOptions{
				{Kind: "Namespace"}: {Namespaces: []string{"a"}},
				{Kind: "Secret"}:    {Namespaces: []string{""}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.ForObject(&corev1.Namespace{}, informer.Scope{}); err == nil {
			t.Error("ByObject namespaces for Namespaces were accepted")
		}
		if nss := f.Namespaces(schema.GroupKind{Kind: "Secret"}); nss != nil {
			t.Errorf("Secrets hold %q, want all namespaces", nss)
		}
		if nss := f.Namespaces(schema.GroupKind{Kind: "ConfigMap"}); !slices.Equal(nss, []string{"a", "b"}) {
			t.Errorf("ConfigMaps hold %q, want a and b", nss)
		}
		if _, err := f.ForObject(&corev1.Secret{}, informer.Scope{Namespace: "c"}); err != nil {
			t.Errorf("a Secret informer of c: %v", err)
		}
		if _, err := f.ForObject(&corev1.ConfigMap{}, informer.Scope{Namespace: "c"}); err == nil {
			t.Error("a ConfigMap informer of c was made")
		}
	})
}
