package client

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/informer"
	"kloop.dev/kloop/internal/testutil"
)

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// The context plumbing: what WithReadScopes stores, ReadScopesFrom and
// readScope find, and which lists checkListScope refuses.
func TestReadScopesContext(t *testing.T) {
	teamA := informer.Scope{Namespace: "a"}
	labeled := informer.Scope{LabelSelector: "app=web"}
	byField := informer.Scope{FieldSelector: "metadata.namespace=a"}
	one := ReadScopes{configMapGVK: teamA}
	other := ReadScopes{secretGVK: labeled}
	tests := []struct {
		name      string
		ctx       context.Context
		want      ReadScopes
		configMap informer.Scope // readScope of ConfigMaps
		secret    informer.Scope // readScope of Secrets
	}{
		{"none", context.Background(), nil, informer.Scope{}, informer.Scope{}},
		{"set", WithReadScopes(context.Background(), one), one, teamA, informer.Scope{}},
		{"under other values", context.WithValue(WithReadScopes(context.Background(), one), struct{}{}, 1), one, teamA, informer.Scope{}},
		{"replaced, not merged", WithReadScopes(WithReadScopes(context.Background(), one), other), other, informer.Scope{}, labeled},
		{"removed by nil", WithReadScopes(WithReadScopes(context.Background(), one), nil), nil, informer.Scope{}, informer.Scope{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadScopesFrom(tt.ctx)
			if len(got) != len(tt.want) {
				t.Fatalf("ReadScopesFrom = %v, want %v", got, tt.want)
			}
			for gvk, s := range tt.want {
				if got[gvk] != s {
					t.Fatalf("ReadScopesFrom[%v] = %+v, want %+v", gvk, got[gvk], s)
				}
			}
			if s := readScope(tt.ctx, configMapGVK); s != tt.configMap {
				t.Fatalf("ConfigMaps read from %+v, want %+v", s, tt.configMap)
			}
			if s := readScope(tt.ctx, secretGVK); s != tt.secret {
				t.Fatalf("Secrets read from %+v, want %+v", s, tt.secret)
			}
		})
	}

	lists := []struct {
		name  string
		scope informer.Scope
		opts  ListOptions
		out   bool // refused as out of scope
	}{
		{"whole kind, any namespace", informer.Scope{}, ListOptions{Namespace: "b"}, false},
		{"label scope, any namespace", labeled, ListOptions{Namespace: "b"}, false},
		{"all namespaces of a namespace scope", teamA, ListOptions{}, false},
		{"the scope's namespace", teamA, ListOptions{Namespace: "a"}, false},
		{"another namespace", teamA, ListOptions{Namespace: "b"}, true},
		{"the scope's namespace by field", teamA, ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.namespace", "a")}, false},
		{"another namespace by field", teamA, ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.namespace", "b")}, true},
		{"another namespace by field, with the scope's", teamA, ListOptions{Namespace: "a", FieldSelector: fields.OneTermEqualSelector("metadata.namespace", "b")}, true},
		{"not another namespace", teamA, ListOptions{FieldSelector: fields.OneTermNotEqualSelector("metadata.namespace", "b")}, false},
		{"the namespace of a field scope", byField, ListOptions{Namespace: "a"}, false},
		{"another namespace than a field scope's", byField, ListOptions{Namespace: "b"}, true},
		{"another namespace than a field scope's, by field", byField, ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.namespace", "b")}, true},
		{"another namespace than a field scope's (==)", informer.Scope{FieldSelector: "metadata.namespace==a"}, ListOptions{Namespace: "b"}, true},
		{"another namespace than a field scope's (with another field)", informer.Scope{FieldSelector: "spec.x=y,metadata.namespace=a"}, ListOptions{Namespace: "b"}, true},
		{"a field scope excluding a namespace", informer.Scope{FieldSelector: "metadata.namespace!=a"}, ListOptions{Namespace: "b"}, false},
	}
	for _, tt := range lists {
		t.Run("list/"+tt.name, func(t *testing.T) {
			// As Client.List checks a scope of one namespace.
			var err error
			if ns := scopeNamespace(tt.scope); ns != "" {
				err = checkListScope(configMapMapping, []string{ns}, tt.opts)
			}
			if got := err != nil; got != tt.out {
				t.Fatalf("checkListScope = %v, want refused %v", err, tt.out)
			}
			if tt.out && (!errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err)) {
				t.Fatalf("checkListScope = %v, want ErrOutOfScope and a BadRequest", err)
			}
		})
	}

	// The namespaces of a factory (DefaultNamespaces): several allowed.
	for _, tt := range []struct {
		name string
		opts ListOptions
		out  bool
	}{
		{"all namespaces", ListOptions{}, false},
		{"one of them", ListOptions{Namespace: "b"}, false},
		{"one of them by field", ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.namespace", "a")}, false},
		{"another", ListOptions{Namespace: "c"}, true},
		{"another by field", ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.namespace", "c")}, true},
	} {
		t.Run("namespaces/"+tt.name, func(t *testing.T) {
			err := checkListScope(configMapMapping, []string{"a", "b"}, tt.opts)
			if got := err != nil; got != tt.out {
				t.Fatalf("checkListScope = %v, want refused %v", err, tt.out)
			}
			if tt.out && (!errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `namespaces "a", "b"`)) {
				t.Fatalf("checkListScope = %v, want ErrOutOfScope, a BadRequest naming the namespaces", err)
			}
		})
	}
}

// configMapMapping is the mapping of ConfigMaps.
var configMapMapping = &meta.RESTMapping{
	Resource:         schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
	GroupVersionKind: configMapGVK,
	Scope:            meta.RESTScopeNamespace,
}

// Cached reads with ReadScopes go to the informer of the scope: an object
// outside it is NotFound, lists hold only the scope, a namespace outside it
// is refused; the same reads without scopes see the whole kind (and start
// its informer only then).
func TestScopedReads(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns, ns2 := e.Namespace, e.otherNamespace(t, ctx)
		team := map[string]string{"team": "a"}
		for _, cm := range []*corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "in", Labels: team}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "in-2", Labels: team}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabeled"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "elsewhere", Labels: team}},
		} {
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
		scope := informer.Scope{Namespace: ns, LabelSelector: "team=a"}
		sctx := WithReadScopes(ctx, ReadScopes{configMapGVK: scope})

		var cm corev1.ConfigMap
		testutil.Eventually(t, "scoped Get", func() error { return c.Get(sctx, ObjectKey{Namespace: ns, Name: "in-2"}, &cm) })
		if cm.Name != "in-2" || cm.Kind != "ConfigMap" {
			t.Fatalf("scoped Get: %+v", cm)
		}
		if err := c.Get(sctx, ObjectKey{Namespace: ns, Name: "unlabeled"}, &cm); !apierrors.IsNotFound(err) {
			t.Fatalf("scoped Get of an object the selector excludes: %v, want NotFound", err)
		}
		if err := c.Get(sctx, ObjectKey{Namespace: ns2, Name: "elsewhere"}, &cm); !errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err) {
			t.Fatalf("scoped Get in another namespace: %v, want ErrOutOfScope", err)
		}
		if n := e.factory.NumInformers(); n != 1 {
			t.Fatalf("the factory holds %d informers after scoped reads, want 1 (the scope's)", n)
		}
		scoped, err := informer.InformerFor[*corev1.ConfigMap](e.factory, scope)
		if err != nil {
			t.Fatal(err)
		}
		if e.factory.NumInformers() != 1 || !scoped.HasSynced() {
			t.Fatal("the scoped reads did not use (and sync) the scope's shared informer")
		}

		for _, tc := range []struct {
			name string
			opts []ListOption
			want []string
		}{
			{"all namespaces", nil, []string{ns + "/in", ns + "/in-2"}},
			{"the scope's namespace", []ListOption{InNamespace(ns)}, []string{ns + "/in", ns + "/in-2"}},
			{"name field", []ListOption{MatchingFields(map[string]string{"metadata.name": "in"})}, []string{ns + "/in"}},
			{"name field outside the scope", []ListOption{MatchingFields(map[string]string{"metadata.name": "unlabeled"})}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var list corev1.ConfigMapList
				if err := c.List(sctx, &list, tc.opts...); err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, it := range list.Items {
					got = append(got, it.Namespace+"/"+it.Name)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("scoped List = %v, want %v", got, tc.want)
				}
			})
		}
		for _, opt := range []ListOption{InNamespace(ns2), MatchingFields(map[string]string{"metadata.namespace": ns2})} {
			var list corev1.ConfigMapList
			err := c.List(sctx, &list, opt)
			if !errors.Is(err, ErrOutOfScope) || !apierrors.IsBadRequest(err) {
				t.Fatalf("scoped List of another namespace: %v, want ErrOutOfScope, a BadRequest", err)
			}
		}

		// Another form of the kind: the informer of that form within the scope.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(configMapGVK)
		if err := c.Get(sctx, ObjectKey{Namespace: ns, Name: "in"}, u); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(sctx, ObjectKey{Namespace: ns, Name: "unlabeled"}, u); !apierrors.IsNotFound(err) {
			t.Fatalf("scoped unstructured Get outside the scope: %v, want NotFound", err)
		}
		if n := e.factory.NumInformers(); n != 2 {
			t.Fatalf("the factory holds %d informers, want 2 (the scope's, typed and unstructured)", n)
		}

		// The server, whatever the scopes.
		if err := c.Uncached().Get(sctx, ObjectKey{Namespace: ns, Name: "unlabeled"}, &cm); err != nil {
			t.Fatalf("uncached Get with scopes: %v", err)
		}
		// A scope the kind cannot have is an error, not NotFound.
		bad := WithReadScopes(ctx, ReadScopes{{Version: "v1", Kind: "Namespace"}: {Namespace: ns}})
		if err := c.Get(bad, ObjectKey{Name: ns}, &corev1.Namespace{}); err == nil || apierrors.IsNotFound(err) {
			t.Fatalf("Get of a cluster-scoped kind with a namespace scope: %v, want an error", err)
		}

		// Without scopes: the whole kind, from its own informer.
		for _, key := range []ObjectKey{{Namespace: ns, Name: "unlabeled"}, {Namespace: ns2, Name: "elsewhere"}} {
			if err := c.Get(ctx, key, &cm); err != nil {
				t.Fatalf("Get of %v without scopes: %v", key, err)
			}
		}
		var list corev1.ConfigMapList
		if err := c.List(ctx, &list, InNamespace(ns2), MatchingFields(map[string]string{"metadata.name": "elsewhere"})); err != nil || len(list.Items) != 1 {
			t.Fatalf("List of another namespace without scopes: %v, %d items, want 1", err, len(list.Items))
		}
		if n := e.factory.NumInformers(); n != 3 {
			t.Fatalf("the factory holds %d informers, want 3 (the whole kind's added)", n)
		}
	})
}
