package client

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// DeleteAllOf deletes exactly what its list options select (in the
// namespace, by labels, by fields; nothing for a dry run or a selector that
// matches nothing), with its delete options, on both servers.
func TestDeleteAllOf(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns, ns2 := e.Namespace, e.otherNamespace(t, ctx)
		mine := map[string]string{"kloop-test": ns}
		cm := func(ns, name, app string) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels: map[string]string{"app": app, "kloop-test": mine["kloop-test"]}}}
		}
		for _, o := range []*corev1.ConfigMap{
			cm(ns, "a1", "a"), cm(ns, "a2", "a"), cm(ns, "b1", "b"), cm(ns, "b2", "b"), cm(ns, "c1", "c"),
			cm(ns2, "a3", "a"), cm(ns2, "b3", "b"),
		} {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		left := func(ns string) []string {
			t.Helper()
			var l corev1.ConfigMapList
			if err := c.Uncached().List(ctx, &l, InNamespace(ns), MatchingLabels(mine)); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range l.Items {
				names = append(names, o.Name)
			}
			slices.Sort(names)
			return names
		}
		app := func(a string) ListOption { return MatchingLabels(map[string]string{"app": a}) }
		for _, tc := range []struct {
			name      string
			opts      []DeleteAllOfOption
			want, in2 []string
		}{
			{"dry run", []DeleteAllOfOption{InNamespace(ns), app("a"), DryRun()},
				[]string{"a1", "a2", "b1", "b2", "c1"}, []string{"a3", "b3"}},
			{"labels.Nothing", []DeleteAllOfOption{InNamespace(ns), MatchingLabelsSelector(labels.Nothing())},
				[]string{"a1", "a2", "b1", "b2", "c1"}, []string{"a3", "b3"}},
			{"fields.Nothing", []DeleteAllOfOption{InNamespace(ns), MatchingLabels(mine), MatchingFieldsSelector(fields.Nothing())},
				[]string{"a1", "a2", "b1", "b2", "c1"}, []string{"a3", "b3"}},
			{"label selector in a namespace", []DeleteAllOfOption{InNamespace(ns), app("a"),
				PropagationPolicy(metav1.DeletePropagationBackground), GracePeriodSeconds(0)},
				[]string{"b1", "b2", "c1"}, []string{"a3", "b3"}},
			{"field selector", []DeleteAllOfOption{InNamespace(ns), MatchingFields(map[string]string{"metadata.name": "b1"})},
				[]string{"b2", "c1"}, []string{"a3", "b3"}},
			{"labels and fields", []DeleteAllOfOption{InNamespace(ns), app("b"), MatchingFields(map[string]string{"metadata.name": "c1"})},
				[]string{"b2", "c1"}, []string{"a3", "b3"}},
			// Not Foreground or Orphan: kube-apiserver gives the objects a
			// finalizer that only a garbage collector (none runs with the
			// real target) removes.
			{"a whole namespace", []DeleteAllOfOption{InNamespace(ns2), PropagationPolicy(metav1.DeletePropagationBackground)},
				[]string{"b2", "c1"}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := c.DeleteAllOf(ctx, &corev1.ConfigMap{}, tc.opts...); err != nil {
					t.Fatal(err)
				}
				if got := left(ns); !slices.Equal(got, tc.want) {
					t.Errorf("left in %s: %v, want %v", ns, got, tc.want)
				}
				if got := left(ns2); !slices.Equal(got, tc.in2) {
					t.Errorf("left in %s: %v, want %v", ns2, got, tc.in2)
				}
			})
		}

		for _, tc := range []struct {
			name string
			opts []DeleteAllOfOption
		}{
			{"Limit", []DeleteAllOfOption{InNamespace(ns), Limit(1)}},
			{"Continue", []DeleteAllOfOption{InNamespace(ns), Continue("x")}},
			{"nil option", []DeleteAllOfOption{InNamespace(ns), nil}},
			{"bad namespace", []DeleteAllOfOption{InNamespace("a/b")}},
		} {
			t.Run("refused/"+tc.name, func(t *testing.T) {
				if err := c.DeleteAllOf(ctx, &corev1.ConfigMap{}, tc.opts...); !apierrors.IsBadRequest(err) {
					t.Fatalf("got %v, want a BadRequest", err)
				}
				if got := left(ns); !slices.Equal(got, []string{"b2", "c1"}) {
					t.Fatalf("left in %s: %v", ns, got)
				}
			})
		}
	})
}

// DeleteAllOf of a cluster-scoped kind deletes the selected objects
// cluster-wide (a namespace given is ignored, as for the other calls).
func TestDeleteAllOfClusterScoped(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		// ClusterRoles are shared by every test of the binary on the real
		// server: names and a label of this test's own.
		mine := map[string]string{"kloop-test": e.Namespace}
		for _, n := range []string{"x", "y", "z"} {
			labels := map[string]string{"kloop-test": e.Namespace, "keep": "no"}
			if n == "z" {
				labels["keep"] = "yes"
			}
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace + "-" + n, Labels: labels}}
			if err := c.Create(ctx, cr); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			_ = c.DeleteAllOf(context.Background(), &rbacv1.ClusterRole{}, MatchingLabels(mine))
		})
		if err := c.DeleteAllOf(ctx, &rbacv1.ClusterRole{}, InNamespace(e.Namespace),
			MatchingLabels(map[string]string{"kloop-test": e.Namespace, "keep": "no"})); err != nil {
			t.Fatal(err)
		}
		var l rbacv1.ClusterRoleList
		if err := c.Uncached().List(ctx, &l, MatchingLabels(mine)); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 || l.Items[0].Name != e.Namespace+"-z" {
			var names []string
			for _, o := range l.Items {
				names = append(names, o.Name)
			}
			t.Fatalf("left %v, want %s-z", names, e.Namespace)
		}
	})
}
