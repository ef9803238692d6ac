package client

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

// A selector that selects nothing (labels.Nothing(), which
// metav1.LabelSelectorAsSelector returns for a nil selector, and
// fields.Nothing()) lists nothing, cached or not: its String() is "", the
// empty selector that the server reads as "everything".
func TestListSelectingNothing(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		for _, n := range []string{"a", "b"} {
			if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n, Labels: map[string]string{"app": n}}}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, "3 config maps cached (a, b and kube-root-ca.crt)", func() error {
			var l corev1.ConfigMapList
			if err := c.List(ctx, &l, InNamespace(ns)); err != nil {
				return err
			}
			if len(l.Items) != 3 {
				return fmt.Errorf("%d cached", len(l.Items))
			}
			return nil
		})
		nilSelector, err := metav1.LabelSelectorAsSelector(nil)
		if err != nil {
			t.Fatal(err)
		}
		fieldsNothing := func(o *ListOptions) { o.FieldSelector = fields.Nothing() }
		for _, tc := range []struct {
			name string
			opts []ListOption
			want int
		}{
			{"labels.Everything", []ListOption{MatchingLabelsSelector(labels.Everything())}, 3},
			{"labels.Nothing", []ListOption{MatchingLabelsSelector(labels.Nothing())}, 0},
			{"nil metav1.LabelSelector", []ListOption{MatchingLabelsSelector(nilSelector)}, 0},
			{"fields.Everything", []ListOption{func(o *ListOptions) { o.FieldSelector = fields.Everything() }}, 3},
			{"fields.Nothing", []ListOption{fieldsNothing}, 0},
			{"fields.Nothing with a name", []ListOption{fieldsNothing, MatchingLabels(map[string]string{"app": "a"})}, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, r := range []Reader{c, c.Uncached()} {
					var l corev1.ConfigMapList
					if err := r.List(ctx, &l, append([]ListOption{InNamespace(ns)}, tc.opts...)...); err != nil {
						t.Fatalf("%T: %v", r, err)
					}
					if len(l.Items) != tc.want {
						t.Fatalf("%T: %d items, want %d", r, len(l.Items), tc.want)
					}
				}
			})
		}
	})
}

// The cache answers the field selectors it supports as the server does,
// including requirements that contradict each other (all must hold) and
// empty values (an empty field, not "any").
func TestCachedFieldSelectorsAsServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		for _, n := range []string{"a", "b"} {
			if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, "3 config maps cached (a, b and kube-root-ca.crt)", func() error {
			var l corev1.ConfigMapList
			if err := c.List(ctx, &l, InNamespace(ns)); err != nil {
				return err
			}
			if len(l.Items) != 3 {
				return fmt.Errorf("%d cached", len(l.Items))
			}
			return nil
		})
		for _, tc := range []struct {
			sel  string
			want []string
		}{
			{"metadata.name=a", []string{"a"}},
			{"metadata.name==b", []string{"b"}},
			{"metadata.namespace=" + ns, []string{"a", "b", "kube-root-ca.crt"}},
			{"metadata.name=a,metadata.namespace=" + ns, []string{"a"}},
			{"metadata.name=a,metadata.name=b", nil},
			{"metadata.name=b,metadata.name=a", nil},
			{"metadata.name=a,metadata.name=a", []string{"a"}},
			{"metadata.namespace=" + ns + ",metadata.namespace=other", nil},
			{"metadata.name=", nil},
			{"metadata.namespace=", nil},
		} {
			t.Run(tc.sel, func(t *testing.T) {
				sel, err := fields.ParseSelector(tc.sel)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range []Reader{c, c.Uncached()} {
					var l corev1.ConfigMapList
					if err := r.List(ctx, &l, InNamespace(ns), func(o *ListOptions) { o.FieldSelector = sel }); err != nil {
						t.Fatalf("%T: %v", r, err)
					}
					var got []string
					for _, it := range l.Items {
						got = append(got, it.Name)
					}
					slices.Sort(got)
					if !slices.Equal(got, tc.want) {
						t.Fatalf("%T: %q, want %q", r, got, tc.want)
					}
				}
			})
		}
	})
}
