package client

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"kloop.dev/kloop/apiserver/apiservertest"
)

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
		for _, tc := range []struct {
			sel  string
			want []string
		}{
			{"metadata.name=a", []string{"a"}},
			{"metadata.name==b", []string{"b"}},
			{"metadata.namespace=" + ns, []string{"a", "b"}},
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
