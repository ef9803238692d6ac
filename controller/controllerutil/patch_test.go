package controllerutil

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
)

// CreateOrPatch creates, leaves alone, patches the object, its status, or
// both, as mutate changes them, and the server ends up as mutate wanted.
func TestCreateOrPatch(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := newTestClient(t, env)
		ns := env.Namespace
		replicas, observed := int32(1), int64(0)
		var d *appsv1.Deployment
		mutate := func() error {
			if d.CreationTimestamp.IsZero() { // what only a create sets (the server defaults the rest)
				labels := map[string]string{"app": "web"}
				d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
				d.Spec.Template.Labels = labels
				d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx"}}
			}
			d.Spec.Replicas = &replicas
			d.Status.ObservedGeneration = observed
			return nil
		}
		steps := []struct {
			name     string
			replicas int32
			observed int64
			want     OperationResult
		}{
			{"create", 1, 0, OperationResultCreated},
			{"as wanted", 1, 0, OperationResultNone},
			{"spec", 2, 0, OperationResultUpdated},
			{"status only", 2, 7, OperationResultUpdatedStatusOnly},
			{"both", 3, 8, OperationResultUpdatedStatus},
			{"as wanted again", 3, 8, OperationResultNone},
		}
		rv := ""
		for _, s := range steps {
			replicas, observed = s.replicas, s.observed
			d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
			got, err := CreateOrPatch(ctx, c, c.Status(), d, mutate)
			if err != nil || got != s.want {
				t.Fatalf("%s: %q, %v; want %q", s.name, got, err, s.want)
			}
			var stored appsv1.Deployment
			if err := c.Uncached().Get(ctx, client.KeyOf(d), &stored); err != nil {
				t.Fatal(err)
			}
			if *stored.Spec.Replicas != s.replicas {
				t.Fatalf("%s: stored replicas %d, want %d", s.name, *stored.Spec.Replicas, s.replicas)
			}
			if s.want != OperationResultCreated && stored.Status.ObservedGeneration != s.observed {
				t.Fatalf("%s: stored observedGeneration %d, want %d", s.name, stored.Status.ObservedGeneration, s.observed)
			}
			if s.want == OperationResultNone && stored.ResourceVersion != rv {
				t.Fatalf("%s: written (resourceVersion %s → %s)", s.name, rv, stored.ResourceVersion)
			}
			rv = stored.ResourceVersion
		}

		// Without a StatusPatcher, a status change is an error, not dropped.
		observed = 9
		d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		if _, err := CreateOrPatch(ctx, c, nil, d, mutate); err == nil || !strings.Contains(err.Error(), "StatusPatcher") {
			t.Fatalf("status change without a StatusPatcher: %v", err)
		}
		// A kind without status: only the object is patched.
		color := "red"
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
		setColor := func() error { cm.Data = map[string]string{"color": color}; return nil }
		for _, want := range []OperationResult{OperationResultCreated, OperationResultNone} {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
			if got, err := CreateOrPatch(ctx, c, nil, cm, setColor); err != nil || got != want {
				t.Fatalf("ConfigMap: %q, %v; want %q", got, err, want)
			}
		}
		color = "blue"
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
		if got, err := CreateOrPatch(ctx, c, nil, cm, setColor); err != nil || got != OperationResultUpdated || cm.Data["color"] != "blue" {
			t.Fatalf("ConfigMap change: %q, %v, %v", got, err, cm.Data)
		}
		// mutate may not rename the object.
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
		if _, err := CreateOrPatch(ctx, c, nil, cm, func() error { cm.Name = "other"; return nil }); err == nil {
			t.Fatal("a mutate that renamed the object was accepted")
		}
		if _, err := CreateOrPatch(ctx, nil, nil, cm, nil); err == nil {
			t.Fatal("nil ObjectPatcher accepted")
		}
		if _, err := CreateOrPatch(ctx, c, nil, nil, nil); err == nil {
			t.Fatal("nil object accepted")
		}
	})
}

// noStatusSubresource stores one unstructured object of a kind whose status
// is written with the object (a custom resource without the status
// subresource): Patch applies JSON merge patches to all of it; the status
// subresource does not exist.
type noStatusSubresource struct {
	stored  map[string]any
	patches int
}

func (f *noStatusSubresource) Get(_ context.Context, _ client.ObjectKey, obj client.Object) error {
	obj.(*unstructured.Unstructured).Object = runtime.DeepCopyJSON(f.stored)
	return nil
}

func (f *noStatusSubresource) Create(context.Context, client.Object, ...client.WriteOption) error {
	return errors.New("unexpected Create")
}

func (f *noStatusSubresource) Patch(_ context.Context, obj client.Object, p client.Patch, _ ...client.WriteOption) error {
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	cur, err := json.Marshal(f.stored)
	if err != nil {
		return err
	}
	merged, err := jsonpatch.MergePatch(cur, data)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(merged, &m); err != nil {
		return err
	}
	f.stored, f.patches = m, f.patches+1
	obj.(*unstructured.Unstructured).Object = runtime.DeepCopyJSON(m)
	return nil
}

type statusNotServed struct{}

func (statusNotServed) Patch(context.Context, client.Object, client.Patch, ...client.WriteOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "gadgets"}, "g")
}

// For a kind whose status goes with the object, one patch of the object
// writes a change of both: the status subresource is not asked for.
func TestCreateOrPatchStatusWithTheObject(t *testing.T) {
	f := &noStatusSubresource{stored: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": "ns", "name": "g"},
		"spec":     map[string]any{"size": int64(1)},
		"status":   map[string]any{"state": "old", "observed": int64(1)},
	}}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("example.com/v1")
	obj.SetKind("Gadget")
	obj.SetNamespace("ns")
	obj.SetName("g")
	got, err := CreateOrPatch(context.Background(), f, statusNotServed{}, obj, func() error {
		obj.Object["spec"] = map[string]any{"size": int64(2)}
		obj.Object["status"] = map[string]any{"state": "new", "observed": int64(2)}
		return nil
	})
	if err != nil || got != OperationResultUpdated {
		t.Fatalf("CreateOrPatch: %q, %v; want %q", got, err, OperationResultUpdated)
	}
	if f.patches != 1 || f.stored["status"].(map[string]any)["state"] != "new" {
		t.Fatalf("%d patches, stored %v", f.patches, f.stored)
	}
}
