package controllerutil

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/client"
)

// gadget is a user's CRD type with a status, as kubebuilder would generate
// it (with a hand-written, shallow DeepCopyObject, as people write them).
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              gadgetSpec   `json:"spec"`
	Status            gadgetStatus `json:"status,omitempty"`
}

type gadgetSpec struct {
	Color string `json:"color"`
}

type gadgetStatus struct {
	State      string             `json:"state,omitempty"`
	Count      int64              `json:"count,omitempty"`
	Labels     map[string]string  `json:"labels,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	out := *g // Status.Labels and Conditions are shared: a shallow copy
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// recordingUpdater is a StatusUpdater that records its writes and bumps
// the resourceVersion as the server would.
type recordingUpdater struct {
	writes int
	err    error
}

func (r *recordingUpdater) Update(_ context.Context, obj client.Object, _ ...client.WriteOption) error {
	if r.err != nil {
		return r.err
	}
	r.writes++
	rv, _ := strconv.Atoi(obj.GetResourceVersion())
	obj.SetResourceVersion(strconv.Itoa(rv + 1))
	return nil
}

func newGadget() *gadget {
	return &gadget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g1", ResourceVersion: "1"},
		Status:     gadgetStatus{State: "ready", Labels: map[string]string{"a": "1"}},
	}
}

func unstructuredGadget() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": "ns", "name": "g1", "resourceVersion": "1"},
		"status":   map[string]any{"state": "ready", "labels": map[string]any{"a": "1"}},
	}}
	return u
}

func TestUpdateStatus(t *testing.T) {
	ctx := context.Background()
	mutateErr := errors.New("observe failed")
	type tc struct {
		desc    string
		obj     client.Object
		mutate  func(obj client.Object) error
		changed bool
		err     error // errors.Is; nil: none unless anyErr
		anyErr  bool
	}
	typed := func(f func(g *gadget)) func(client.Object) error {
		return func(o client.Object) error { f(o.(*gadget)); return nil }
	}
	unstr := func(f func(m map[string]any)) func(client.Object) error {
		return func(o client.Object) error { f(o.(*unstructured.Unstructured).Object); return nil }
	}
	for _, c := range []tc{
		{desc: "typed, same value written again", obj: newGadget(), mutate: typed(func(g *gadget) { g.Status.State = "ready" })},
		{desc: "typed, nothing done", obj: newGadget(), mutate: func(client.Object) error { return nil }},
		{desc: "typed, a field changed", obj: newGadget(), mutate: typed(func(g *gadget) { g.Status.State = "failed" }), changed: true},
		{desc: "typed, a map changed in place (shallow DeepCopyObject)", obj: newGadget(), mutate: typed(func(g *gadget) { g.Status.Labels["a"] = "2" }), changed: true},
		{desc: "typed, a condition added", obj: newGadget(), mutate: typed(func(g *gadget) {
			meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Done"})
		}), changed: true},
		{desc: "typed, empty map vs nil (same JSON)", obj: newGadget(), mutate: typed(func(g *gadget) { g.Status.Labels = map[string]string{"a": "1"} })},
		{desc: "typed, spec change only: not written", obj: newGadget(), mutate: typed(func(g *gadget) { g.Spec.Color = "blue" })},
		{desc: "typed k8s.io/api kind", obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, mutate: func(o client.Object) error {
			o.(*corev1.Pod).Status.Phase = corev1.PodRunning
			return nil
		}, changed: true},
		{desc: "typed, a quantity", obj: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, mutate: func(o client.Object) error {
			o.(*corev1.Node).Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			return nil
		}, changed: true},
		{desc: "unstructured, same", obj: unstructuredGadget(), mutate: unstr(func(m map[string]any) { m["status"].(map[string]any)["state"] = "ready" })},
		{desc: "unstructured, changed in place", obj: unstructuredGadget(), mutate: unstr(func(m map[string]any) {
			m["status"].(map[string]any)["labels"].(map[string]any)["a"] = "2"
		}), changed: true},
		{desc: "unstructured, status added", obj: func() client.Object { u := unstructuredGadget(); delete(u.Object, "status"); return u }(),
			mutate: unstr(func(m map[string]any) { m["status"] = map[string]any{"state": "new"} }), changed: true},
		{desc: "unstructured, spec change only", obj: unstructuredGadget(), mutate: unstr(func(m map[string]any) { m["spec"] = map[string]any{"color": "red"} })},
		{desc: "mutate fails: no write", obj: newGadget(), mutate: func(o client.Object) error {
			o.(*gadget).Status.State = "half"
			return mutateErr
		}, err: mutateErr},
		{desc: "mutate renames", obj: newGadget(), mutate: func(o client.Object) error {
			o.SetName("other")
			o.(*gadget).Status.State = "x"
			return nil
		}, anyErr: true},
		{desc: "no Status field", obj: &corev1.ConfigMap{}, mutate: func(client.Object) error { return nil }, anyErr: true},
		{desc: "nil object", obj: nil, mutate: func(client.Object) error { return nil }, anyErr: true},
		{desc: "nil pointer", obj: (*gadget)(nil), mutate: func(client.Object) error { return nil }, anyErr: true},
		{desc: "nil mutate", obj: newGadget(), mutate: nil, anyErr: true},
	} {
		t.Run(c.desc, func(t *testing.T) {
			w := &recordingUpdater{}
			var mutate func() error
			if c.mutate != nil {
				mutate = func() error { return c.mutate(c.obj) }
			}
			changed, err := UpdateStatus(ctx, w, c.obj, mutate)
			switch {
			case c.err != nil && !errors.Is(err, c.err):
				t.Fatalf("err = %v, want %v", err, c.err)
			case c.anyErr && err == nil:
				t.Fatal("no error")
			case c.err == nil && !c.anyErr && err != nil:
				t.Fatalf("err = %v", err)
			}
			if changed != c.changed {
				t.Errorf("changed = %v, want %v", changed, c.changed)
			}
			if want := map[bool]int{true: 1}[c.changed]; w.writes != want {
				t.Errorf("%d writes, want %d", w.writes, want)
			}
		})
	}
}

func TestUpdateStatusWriteError(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "example.com", Resource: "gadgets"}, "g1", errors.New("stale"))
	w := &recordingUpdater{err: conflict}
	g := newGadget()
	changed, err := UpdateStatus(context.Background(), w, g, func() error { g.Status.State = "new"; return nil })
	if changed || !apierrors.IsConflict(err) {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if _, err := UpdateStatus(context.Background(), nil, g, func() error { return nil }); err == nil {
		t.Fatal("nil StatusUpdater: no error")
	}
	if _, err := UpdateStatus(context.Background(), (*client.StatusWriter)(nil), g, func() error { return nil }); err == nil {
		t.Fatal("nil *StatusWriter: no error")
	}
}

var gadgetGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

func gadgetCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets.example.com"},
		"spec": map[string]any{
			"group": "example.com",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":                                 "object",
					"x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
}

// newTestClient returns a kloop client (reads and writes to the API server)
// for env's server, with gadget in its scheme.
func newTestClient(t *testing.T, env *apiservertest.Env) *client.Client {
	t.Helper()
	cfg := env.Config()
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	t.Cleanup(tr.CloseIdleConnections)
	// apiservertest created the test's namespace through client-go's
	// transport cache, which the real server outlives: close its idle
	// connections too (goleak would report them).
	if shared, err := rest.HTTPClientFor(env.Config()); err == nil {
		t.Cleanup(shared.CloseIdleConnections)
	}
	rt, err := rest.HTTPWrappersForConfig(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypeWithName(gadgetGV.WithKind("Gadget"), &gadget{})
	c, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createEventually creates obj, retrying while its kind is not served yet
// (a CRD just created).
func createEventually(ctx context.Context, t *testing.T, c *client.Client, obj client.Object) {
	t.Helper()
	for {
		err := c.Create(ctx, obj)
		if err == nil {
			return
		}
		if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			t.Fatalf("create: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("create: %v (last error %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// On both servers: a status that did not change is not written (the
// resourceVersion stays), one that did is (it moves), for a typed CRD
// struct and for an unstructured object.
func TestUpdateStatusAPIServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testUpdateStatusAPIServer)
}

func testUpdateStatusAPIServer(t *testing.T, env *apiservertest.Env) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newTestClient(t, env)
	// The CRD is cluster-scoped: on the real server, shared by the tests of
	// this binary.
	if err := c.Create(ctx, gadgetCRD()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	g := &gadget{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "g1"}, Spec: gadgetSpec{Color: "red"}}
	createEventually(ctx, t, c, g)
	set := func(state string) func() error {
		return func() error {
			g.Status.State = state
			meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Observed", ObservedGeneration: g.Generation})
			return nil
		}
	}
	rv0 := g.ResourceVersion
	changed, err := UpdateStatus(ctx, c.Status(), g, set("ready"))
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, err %v", changed, err)
	}
	rv1 := g.ResourceVersion
	if rv1 == rv0 {
		t.Fatalf("the resourceVersion did not move on a write: %s", rv1)
	}
	// The next reconcile reads the object and computes the same status.
	for i := range 3 {
		if err := c.Get(ctx, client.KeyOf(g), g); err != nil {
			t.Fatal(err)
		}
		changed, err := UpdateStatus(ctx, c.Status(), g, set("ready"))
		if err != nil || changed {
			t.Fatalf("reconcile %d: changed %v, err %v", i, changed, err)
		}
	}
	var fresh gadget
	if err := c.Get(ctx, client.KeyOf(g), &fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.ResourceVersion != rv1 || fresh.Status.State != "ready" || len(fresh.Status.Conditions) != 1 {
		t.Fatalf("after no-op reconciles: resourceVersion %s (want %s), status %+v", fresh.ResourceVersion, rv1, fresh.Status)
	}
	changed, err = UpdateStatus(ctx, c.Status(), &fresh, func() error { fresh.Status.State = "degraded"; return nil })
	if err != nil || !changed || fresh.ResourceVersion == rv1 {
		t.Fatalf("a real change: changed %v, err %v, resourceVersion %s", changed, err, fresh.ResourceVersion)
	}
	// A stale object is a Conflict, not a silent overwrite.
	changed, err = UpdateStatus(ctx, c.Status(), g, func() error { g.Status.State = "stale"; return nil })
	if changed || !apierrors.IsConflict(err) {
		t.Fatalf("stale write: changed %v, err %v", changed, err)
	}

	// The same for an unstructured object of the kind.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gadgetGV.WithKind("Gadget"))
	if err := c.Get(ctx, client.KeyOf(g), u); err != nil {
		t.Fatal(err)
	}
	rv := u.GetResourceVersion()
	changed, err = UpdateStatus(ctx, c.Status(), u, func() error {
		return unstructured.SetNestedField(u.Object, "degraded", "status", "state")
	})
	if err != nil || changed || u.GetResourceVersion() != rv {
		t.Fatalf("unstructured, same status: changed %v, err %v, resourceVersion %s (was %s)", changed, err, u.GetResourceVersion(), rv)
	}
	changed, err = UpdateStatus(ctx, c.Status(), u, func() error {
		return unstructured.SetNestedField(u.Object, int64(7), "status", "count")
	})
	if err != nil || !changed || u.GetResourceVersion() == rv {
		t.Fatalf("unstructured, new status: changed %v, err %v, resourceVersion %s", changed, err, u.GetResourceVersion())
	}
	if err := c.Get(ctx, client.KeyOf(g), &fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.Status.Count != 7 || fresh.Status.State != "degraded" {
		t.Fatalf("status on the server: %+v", fresh.Status)
	}
}

// CreateOrUpdate: created, then unchanged (no write), then updated.
func TestCreateOrUpdateAPIServer(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testCreateOrUpdateAPIServer)
}

func testCreateOrUpdateAPIServer(t *testing.T, env *apiservertest.Env) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestClient(t, env)
	ns := env.Namespace
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	color := "red"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Name(owner.Name, "color")}}
	mutate := func() error {
		cm.Data = map[string]string{"color": color}
		return SetControllerReference(owner, cm, c.Scheme())
	}
	steps := []struct {
		color string
		want  OperationResult
	}{
		{"red", OperationResultCreated},
		{"red", OperationResultNone},
		{"blue", OperationResultUpdated},
		{"blue", OperationResultNone},
	}
	var rv string
	for i, s := range steps {
		color = s.color
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Name(owner.Name, "color")}}
		got, err := CreateOrUpdate(ctx, c, cm, mutate)
		if err != nil || got != s.want {
			t.Fatalf("step %d: %q, %v; want %q", i, got, err, s.want)
		}
		if s.want == OperationResultNone && cm.ResourceVersion != rv {
			t.Fatalf("step %d: no write expected, resourceVersion %s → %s", i, rv, cm.ResourceVersion)
		}
		rv = cm.ResourceVersion
		if cm.Data["color"] != s.color || !HasControllerReference(cm) {
			t.Fatalf("step %d: %+v", i, cm)
		}
	}
	// mutate may not rename.
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Name(owner.Name, "color")}}
	if _, err := CreateOrUpdate(ctx, c, cm, func() error { cm.Name = "other"; return nil }); err == nil {
		t.Fatal("rename: no error")
	}
	if _, err := CreateOrUpdate(ctx, nil, cm, mutate); err == nil {
		t.Fatal("nil writer: no error")
	}
}

// The cost of the check itself, when nothing changed (the common case of a
// steady-state reconcile): two JSON encodings of the status, no write.
func BenchmarkUpdateStatusUnchanged(b *testing.B) {
	ctx := context.Background()
	w := &recordingUpdater{}
	g := newGadget()
	meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Done"})
	mutate := func() error { g.Status.State = "ready"; return nil }
	b.ReportAllocs()
	for b.Loop() {
		if changed, err := UpdateStatus(ctx, w, g, mutate); err != nil || changed {
			b.Fatal(changed, err)
		}
	}
}
