package informer

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func sameData(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// decodedPods returns two realistic Pods decoded from JSON, as the
// reflector makes them: no string is shared between them.
func decodedPods(t *testing.T) (*corev1.Pod, *corev1.Pod) {
	t.Helper()
	var out [2]*corev1.Pod
	for i := range out {
		data, err := json.Marshal(realisticPod(i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &corev1.Pod{}
		if err := json.Unmarshal(data, out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out[0], out[1]
}

func TestInternTyped(t *testing.T) {
	a, b := decodedPods(t)
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	in := &interner{}
	in.internObject(a)
	in.internObject(b)
	if !reflect.DeepEqual(a, wantA) || !reflect.DeepEqual(b, wantB) {
		t.Fatal("interning changed the objects' content")
	}
	for name, pair := range map[string][2]string{
		"image":          {a.Spec.Containers[0].Image, b.Spec.Containers[0].Image},
		"env value":      {a.Spec.Containers[0].Env[3].Value, b.Spec.Containers[0].Env[3].Value},
		"condition type": {string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)},
		"label key":      {keyOf(a.Labels, "app"), keyOf(b.Labels, "app")},
		"owner kind":     {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"host IP":        {a.Status.HostIP, b.Status.HostIP},
	} {
		if !sameData(pair[0], pair[1]) {
			t.Errorf("%s not shared", name)
		}
	}
	if env := a.Spec.Containers[0].Env; cap(env) != len(env) {
		t.Errorf("env slice keeps spare capacity: len %d cap %d", len(env), cap(env))
	}
}

// keyOf returns the key string stored in m equal to k.
func keyOf(m map[string]string, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}

func TestInternUnstructured(t *testing.T) {
	var objs [2]*unstructured.Unstructured
	for i := range objs {
		data, err := json.Marshal(realisticPod(i))
		if err != nil {
			t.Fatal(err)
		}
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
	}
	want := objs[0].DeepCopy()
	in := &interner{}
	for _, o := range objs {
		in.internObject(o)
	}
	if !reflect.DeepEqual(objs[0].Object, want.Object) {
		t.Fatal("interning changed the object's content")
	}
	img := func(u *unstructured.Unstructured) string {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
		return cs[0].(map[string]any)["image"].(string)
	}
	if !sameData(img(objs[0]), img(objs[1])) {
		t.Error("image not shared")
	}
	specKey := func(u *unstructured.Unstructured) string {
		for k := range u.Object {
			if k == "spec" {
				return k
			}
		}
		return ""
	}
	if !sameData(specKey(objs[0]), specKey(objs[1])) {
		t.Error("map key not shared")
	}
}
