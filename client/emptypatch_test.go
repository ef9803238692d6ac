package client

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// A patch with an empty body is a BadRequest: the client never sends the
// object itself in its place.
func TestEmptyPatch(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{FieldOwner: "kloop-test"})
		c := e.c
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "cm"}, Data: map[string]string{"k": "v"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		for _, pt := range []types.PatchType{types.MergePatchType, types.JSONPatchType, types.StrategicMergePatchType, types.ApplyPatchType} {
			for name, data := range map[string][]byte{"nil": nil, "empty": {}} {
				t.Run(string(pt)+"/"+name, func(t *testing.T) {
					local := cm.DeepCopy()
					local.Data["k"] = "local change, never sent"
					if err := c.Patch(ctx, local, RawPatch(pt, data)); !apierrors.IsBadRequest(err) {
						t.Fatalf("empty %s patch: %v, want a BadRequest", pt, err)
					}
					if err := c.Status().Patch(ctx, local, RawPatch(pt, data)); !apierrors.IsBadRequest(err) {
						t.Fatalf("empty %s status patch: %v, want a BadRequest", pt, err)
					}
					var got corev1.ConfigMap
					if err := c.Uncached().Get(ctx, KeyOf(cm), &got); err != nil || got.Data["k"] != "v" {
						t.Fatalf("after empty patches: %v %v", err, got.Data)
					}
				})
			}
		}
	})
}
