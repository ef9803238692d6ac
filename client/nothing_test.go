package client

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"kloop.dev/kloop/apiserver/apiservertest"
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
		eventually(t, ctx, "2 config maps cached", func() error {
			var l corev1.ConfigMapList
			if err := c.List(ctx, &l, InNamespace(ns)); err != nil {
				return err
			}
			if len(l.Items) != 2 {
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
			{"labels.Everything", []ListOption{MatchingLabelsSelector(labels.Everything())}, 2},
			{"labels.Nothing", []ListOption{MatchingLabelsSelector(labels.Nothing())}, 0},
			{"nil metav1.LabelSelector", []ListOption{MatchingLabelsSelector(nilSelector)}, 0},
			{"fields.Everything", []ListOption{func(o *ListOptions) { o.FieldSelector = fields.Everything() }}, 2},
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
