package client

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testutil"
)

// A field index answers cached Lists by field as the server answers the
// same field selector (spec.nodeName and spec.restartPolicy are pod fields
// the server selects on), with or without a namespace, whether it was added
// before the informer started or after.
func TestIndexField(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns, ns2 := e.Namespace, e.otherNamespace(t, ctx)
		mine := map[string]string{"kloop-test": ns}
		if err := c.IndexField(&corev1.Pod{}, "spec.nodeName", func(o Object) []string {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			ns, name, node string
			restart        corev1.RestartPolicy
		}{
			{ns, "a", "n1", corev1.RestartPolicyAlways},
			{ns, "b", "n2", corev1.RestartPolicyNever},
			{ns, "c", "n1", corev1.RestartPolicyNever},
			{ns2, "d", "n1", corev1.RestartPolicyAlways},
			{ns2, "e", "", corev1.RestartPolicyAlways},
		} {
			pod := newPod(p.ns, p.name, mine)
			pod.Spec.NodeName, pod.Spec.RestartPolicy = p.node, p.restart
			if err := c.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, "5 pods cached", func() error {
			var l corev1.PodList
			if err := c.List(ctx, &l, MatchingLabels(mine)); err != nil {
				return err
			}
			if len(l.Items) != 5 {
				return fmt.Errorf("%d cached", len(l.Items))
			}
			return nil
		})
		// Added while the informer runs: built from what it caches.
		if err := c.IndexField(&corev1.Pod{}, "spec.restartPolicy", func(o Object) []string {
			return []string{string(o.(*corev1.Pod).Spec.RestartPolicy)}
		}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			opts []ListOption
			want []string
		}{
			{"node, all namespaces", []ListOption{MatchingFields(map[string]string{"spec.nodeName": "n1"})}, []string{ns + "/a", ns + "/c", ns2 + "/d"}},
			{"node, one namespace", []ListOption{InNamespace(ns), MatchingFields(map[string]string{"spec.nodeName": "n1"})}, []string{ns + "/a", ns + "/c"}},
			{"node and name", []ListOption{MatchingFields(map[string]string{"spec.nodeName": "n1", "metadata.name": "c"})}, []string{ns + "/c"}},
			{"no such node", []ListOption{MatchingFields(map[string]string{"spec.nodeName": "n9"})}, nil},
			{"added late", []ListOption{MatchingFields(map[string]string{"spec.restartPolicy": "Never"})}, []string{ns + "/b", ns + "/c"}},
			{"two indexes", []ListOption{MatchingFields(map[string]string{"spec.restartPolicy": "Always", "spec.nodeName": "n1"})}, []string{ns + "/a", ns2 + "/d"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, r := range []Reader{c, c.Uncached()} {
					var l corev1.PodList
					if err := r.List(ctx, &l, append(tc.opts, MatchingLabels(mine))...); err != nil {
						t.Fatalf("%T: %v", r, err)
					}
					var got []string
					for _, p := range l.Items {
						got = append(got, p.Namespace+"/"+p.Name)
					}
					slices.Sort(got)
					if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(got, want) {
						t.Fatalf("%T: %q, want %q", r, got, tc.want)
					}
				}
			})
		}
		// A scoped informer (builder.WithScope) gets the indexes too.
		scoped := WithReadScopes(ctx, ReadScopes{corev1.SchemeGroupVersion.WithKind("Pod"): {Namespace: ns2}})
		var l corev1.PodList
		if err := c.List(scoped, &l, InNamespace(ns2), MatchingFields(map[string]string{"spec.nodeName": "n1"})); err != nil {
			t.Fatalf("scoped List: %v", err)
		}
		if len(l.Items) != 1 || l.Items[0].Name != "d" {
			t.Fatalf("scoped List: %d pods, want d", len(l.Items))
		}
	})
}

func TestIndexFieldErrors(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		e := newEnv(t, ae, Options{Uncached: []Object{&corev1.Secret{}}})
		none := func(Object) []string { return nil }
		if err := e.c.IndexField(&corev1.Pod{}, "spec.nodeName", none); err != nil {
			t.Fatal(err)
		}
		uncached, err := New(e.cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name    string
			err     error
			wantErr string
		}{
			{"twice", e.c.IndexField(&corev1.Pod{}, "spec.nodeName", none), "indexed already"},
			{"built in", e.c.IndexField(&corev1.Pod{}, "metadata.name", none), "built in"},
			{"no field", e.c.IndexField(&corev1.Pod{}, " ", none), "needs a field name"},
			{"nil extract", e.c.IndexField(&corev1.Pod{}, "spec.x", nil), "extract function"},
			{"uncached kind", e.c.IndexField(&corev1.Secret{}, "type", none), "not cached"},
			{"nil object", e.c.IndexField(nil, "spec.x", none), "nil object"},
			{"no cache", uncached.IndexField(&corev1.Pod{}, "spec.nodeName", none), "needs cached reads"},
		} {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want an error containing %q", tc.name, tc.err, tc.wantErr)
			}
		}
		// The same field of another kind is another index.
		if err := e.c.IndexField(&corev1.ConfigMap{}, "spec.nodeName", none); err != nil {
			t.Errorf("the same field of another kind: %v", err)
		}
		var l corev1.PodList
		if err := e.c.List(timeout(t), &l, MatchingFields(map[string]string{"spec.other": "x"})); !apierrors.IsBadRequest(err) {
			t.Errorf("List on a field without an index: %v, want BadRequest", err)
		}
	})
}

// A List selecting on two indexed fields costs what the objects of the
// first index's bucket cost, not that times the size of the second: the
// second is read once, not once per object (100 objects in each bucket, one
// in both: a bounded number of allocations more than a List of one object by
// one index — reading the second bucket per object made 300 more).
func TestIndexFieldTwoIndexesReadEachOnce(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		for _, field := range []string{"zone", "tier"} {
			if err := c.IndexField(&corev1.ConfigMap{}, "data."+field, func(o Object) []string {
				return []string{o.(*corev1.ConfigMap).Data[field]}
			}); err != nil {
				t.Fatal(err)
			}
		}
		const n = 200
		for i := range n {
			cm := &corev1.ConfigMap{Data: map[string]string{"zone": "a", "tier": "x"}}
			cm.Namespace, cm.Name = e.Namespace, fmt.Sprintf("cm-%03d", i)
			if i >= n/2 {
				cm.Data["zone"] = "b"
			}
			if i < n/2-1 {
				cm.Data["tier"] = "y"
			}
			if i == 0 {
				cm.Data["tier"] = "z" // the only one of its tier
			}
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
		in := InNamespace(e.Namespace)
		both := MatchingFields(map[string]string{"data.zone": "a", "data.tier": "x"}) // cm-099 only
		one := MatchingFields(map[string]string{"data.tier": "z"})                    // cm-000 only
		testutil.Eventually(t, "the cache", func() error {
			var l corev1.ConfigMapList
			if err := c.List(ctx, &l, in); err != nil || len(l.Items) != n+1 { // and kube-root-ca.crt
				return fmt.Errorf("%d cached, %v", len(l.Items), err)
			}
			return nil
		})
		var l corev1.ConfigMapList
		if err := c.List(ctx, &l, in, both); err != nil || len(l.Items) != 1 || l.Items[0].Name != "cm-099" {
			t.Fatalf("List by zone and tier: %d items, %v; want cm-099", len(l.Items), err)
		}
		allocs := func(opt ListOption) float64 {
			return testing.AllocsPerRun(20, func() {
				var l corev1.ConfigMapList
				if err := c.List(ctx, &l, in, opt); err != nil || len(l.Items) != 1 {
					t.Fatalf("%d items, %v", len(l.Items), err)
				}
			})
		}
		if a2, a1 := allocs(both), allocs(one); a2 > a1+50 {
			t.Fatalf("a List by two indexes of 100 objects each made %.0f allocations, one by one index %.0f", a2, a1)
		}
	})
}
