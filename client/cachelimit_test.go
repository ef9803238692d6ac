package client

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

// A cached List cut by Limit says so with a Continue token (which the cache
// refuses with a BadRequest), as controller-runtime's cache does: a
// pagination loop written for the server must not take the first page for
// the whole list. A List that fits in the limit has no token.
func TestCachedListLimitIsNotSilent(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		for _, n := range []string{"a", "b", "c"} {
			if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); err != nil {
				t.Fatal(err)
			}
		}
		// With the namespace's kube-root-ca.crt: 4.
		testutil.Eventually(t, "4 config maps cached", func() error {
			var l corev1.ConfigMapList
			if err := c.List(ctx, &l, InNamespace(ns)); err != nil {
				return err
			}
			if len(l.Items) != 4 {
				return fmt.Errorf("%d cached", len(l.Items))
			}
			return nil
		})
		for _, tc := range []struct {
			limit     int64
			items     int
			truncated bool
		}{
			{0, 4, false},
			{1, 1, true},
			{3, 3, true},
			{4, 4, false},
			{10, 4, false},
		} {
			t.Run(fmt.Sprint("limit ", tc.limit), func(t *testing.T) {
				var l corev1.ConfigMapList
				if err := c.List(ctx, &l, InNamespace(ns), Limit(tc.limit)); err != nil {
					t.Fatal(err)
				}
				if len(l.Items) != tc.items || (l.Continue != "") != tc.truncated {
					t.Fatalf("%d items, continue %q; want %d items, a token: %v", len(l.Items), l.Continue, tc.items, tc.truncated)
				}
				if !tc.truncated {
					return
				}
				err := c.List(ctx, &l, InNamespace(ns), Limit(tc.limit), Continue(l.Continue))
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("next page from the cache: %v, want a BadRequest", err)
				}
			})
		}
	})
}
