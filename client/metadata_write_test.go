package client

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// A metadata-only object cannot be created or replaced: its body has no
// spec, data or status, so the server would store the object without them
// (controller-runtime refuses with "did you mean to patch?"). Patch and
// Delete work, and the object on the server keeps its data.
func TestMetadataOnlyWrites(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c
		ns := e.Namespace
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{"k": "v"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		meta := func(name string) *metav1.PartialObjectMetadata {
			m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			return m
		}
		for _, tc := range []struct {
			name  string
			write func(m *metav1.PartialObjectMetadata) error
		}{
			{"Create", func(m *metav1.PartialObjectMetadata) error {
				m.Name, m.ResourceVersion, m.UID = "created", "", ""
				return c.Create(ctx, m)
			}},
			{"Update", func(m *metav1.PartialObjectMetadata) error { return c.Update(ctx, m) }},
			{"Status().Update", func(m *metav1.PartialObjectMetadata) error { return c.Status().Update(ctx, m) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				m := meta("cm")
				if err := c.Uncached().Get(ctx, KeyOf(m), m); err != nil {
					t.Fatal(err)
				}
				m.Labels = map[string]string{"l": tc.name}
				if err := tc.write(m); err == nil {
					t.Fatalf("%s of a metadata-only object: no error", tc.name)
				}
				checkData(t, ctx, c, ns)
			})
		}
		m := meta("cm")
		if err := c.Uncached().Get(ctx, KeyOf(m), m); err != nil {
			t.Fatal(err)
		}
		orig := m.DeepCopy()
		m.Labels = map[string]string{"patched": "y"}
		if err := c.Patch(ctx, m, MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		if m.Labels["patched"] != "y" || m.ResourceVersion == orig.ResourceVersion || m.Kind != "ConfigMap" {
			t.Fatalf("metadata-only Patch answered %+v", m)
		}
		checkData(t, ctx, c, ns)
		if err := c.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
	})
}

func checkData(t *testing.T, ctx context.Context, c *Client, ns string) {
	t.Helper()
	var got corev1.ConfigMap
	if err := c.Uncached().Get(ctx, ObjectKey{Namespace: ns, Name: "cm"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v" {
		t.Fatalf("the config map lost its data: %v", got.Data)
	}
}
