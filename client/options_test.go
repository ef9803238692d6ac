package client

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// Write and list options reach the server and mean there what Kubernetes
// says: dry runs persist nothing, delete preconditions conflict, a delete
// with a grace period of 0 is immediate, and uncached lists come in pages
// with continue tokens.
func TestWriteAndListOptions(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		cm := func(name string) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": "v"}}
		}

		// Dry runs.
		dry := cm("dry")
		if err := c.Create(ctx, dry, DryRun()); err != nil {
			t.Fatal(err)
		}
		if dry.Name != "dry" || dry.Data["k"] != "v" {
			t.Fatalf("dry-run Create answered %+v", dry)
		}
		if err := c.Uncached().Get(ctx, KeyOf(dry), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get after a dry-run Create: %v, want NotFound", err)
		}
		kept := cm("kept")
		if err := c.Create(ctx, kept); err != nil {
			t.Fatal(err)
		}
		changed := kept.DeepCopy()
		changed.Data["k"] = "dry"
		if err := c.Update(ctx, changed, DryRun()); err != nil {
			t.Fatal(err)
		}
		if changed.Data["k"] != "dry" {
			t.Fatalf("dry-run Update answered %v", changed.Data)
		}
		if err := c.Delete(ctx, kept, DryRun()); err != nil {
			t.Fatal(err)
		}
		var got corev1.ConfigMap
		if err := c.Uncached().Get(ctx, KeyOf(kept), &got); err != nil || got.Data["k"] != "v" || got.ResourceVersion != kept.ResourceVersion {
			t.Fatalf("after a dry-run Update and Delete: %v %v at %s, want v at %s", err, got.Data, got.ResourceVersion, kept.ResourceVersion)
		}

		// Delete preconditions.
		if err := c.Delete(ctx, kept, Preconditions(types.UID("not-"+string(kept.UID)), "")); !apierrors.IsConflict(err) {
			t.Fatalf("Delete with another UID: %v, want Conflict", err)
		}
		stale := kept.DeepCopy()
		if err := c.Patch(ctx, kept, RawPatch(types.MergePatchType, []byte(`{"data":{"k":"w"}}`))); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, stale, Preconditions(stale.UID, stale.ResourceVersion)); !apierrors.IsConflict(err) {
			t.Fatalf("Delete with a stale resourceVersion: %v, want Conflict", err)
		}
		if err := c.Delete(ctx, kept, Preconditions(kept.UID, kept.ResourceVersion), PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		if err := c.Uncached().Get(ctx, KeyOf(kept), &got); !apierrors.IsNotFound(err) {
			t.Fatalf("Get after Delete: %v", err)
		}

		// A pod deleted with a grace period of 0 is gone at once.
		p := newPod(ns, "p", nil)
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, p, GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		if err := c.Uncached().Get(ctx, KeyOf(p), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get after a Delete with grace period 0: %v", err)
		}

		// Uncached lists in pages.
		for _, n := range []string{"a", "b", "c"} {
			if err := c.Create(ctx, cm(n)); err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		token := ""
		for page := 0; ; page++ {
			if page > 3 {
				t.Fatalf("more than 3 pages: %q", names)
			}
			var list corev1.ConfigMapList
			opts := []ListOption{InNamespace(ns), Limit(2)}
			if token != "" {
				opts = append(opts, Continue(token))
			}
			if err := c.Uncached().List(ctx, &list, opts...); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) > 2 {
				t.Fatalf("page %d has %d items, limit 2", page, len(list.Items))
			}
			for _, it := range list.Items {
				names = append(names, it.Name)
			}
			if token = list.Continue; token == "" {
				break
			}
		}
		if len(names) != 4 || names[0] != "a" || names[1] != "b" || names[2] != "c" || names[3] != "kube-root-ca.crt" {
			t.Fatalf("pages gave %q, want a, b, c, kube-root-ca.crt", names)
		}
	})
}
