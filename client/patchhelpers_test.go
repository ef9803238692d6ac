package client

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
)

// MergeFromWithOptimisticLock is a Conflict when the object changed since
// it was read, and applies otherwise; MergeFrom applies either way.
func TestMergeFromWithOptimisticLock(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{})
		c := e.c.Uncached()
		w := e.c
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "lock"}, Data: map[string]string{"a": "1"}}
		if err := w.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		// Unchanged since read: applies.
		orig := cm.DeepCopy()
		cm.Data["b"] = "2"
		if err := w.Patch(ctx, cm, MergeFromWithOptimisticLock(orig)); err != nil {
			t.Fatalf("patch of an unchanged object: %v", err)
		}
		if cm.Data["b"] != "2" || cm.ResourceVersion == orig.ResourceVersion {
			t.Fatalf("after the patch: %+v rv %s", cm.Data, cm.ResourceVersion)
		}
		// Changed by someone else since read: a Conflict, nothing written.
		stale := cm.DeepCopy()
		var other corev1.ConfigMap
		if err := c.Get(ctx, KeyOf(cm), &other); err != nil {
			t.Fatal(err)
		}
		other.Data["c"] = "3"
		if err := w.Update(ctx, &other); err != nil {
			t.Fatal(err)
		}
		mine := stale.DeepCopy()
		mine.Data["d"] = "4"
		if err := w.Patch(ctx, mine, MergeFromWithOptimisticLock(stale)); !apierrors.IsConflict(err) {
			t.Fatalf("patch of a changed object: %v, want a Conflict", err)
		}
		var got corev1.ConfigMap
		if err := c.Get(ctx, KeyOf(cm), &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Data["d"]; ok || got.Data["c"] != "3" {
			t.Fatalf("after the conflict: %v", got.Data)
		}
		// Without the lock the same patch applies.
		mine = stale.DeepCopy()
		mine.Data["d"] = "4"
		if err := w.Patch(ctx, mine, MergeFrom(stale)); err != nil {
			t.Fatalf("MergeFrom: %v", err)
		}
		if mine.Data["c"] != "3" || mine.Data["d"] != "4" {
			t.Fatalf("after MergeFrom: %v", mine.Data)
		}
		// No resourceVersion to lock on: an error before any request.
		noRV := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: "lock"}}
		if err := w.Patch(ctx, noRV.DeepCopy(), MergeFromWithOptimisticLock(noRV)); err == nil || !strings.Contains(err.Error(), "resourceVersion") {
			t.Fatalf("lock without a resourceVersion: %v", err)
		}
	})
}

// The patch bodies: the lock puts the original's resourceVersion in, and
// leaves the caller's objects alone.
func TestMergeFromPatchData(t *testing.T) {
	orig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "7"}, Data: map[string]string{"a": "1"}}
	mod := orig.DeepCopy()
	mod.Data["a"] = "2"
	mod.ResourceVersion = "9"
	for _, tc := range []struct {
		name string
		p    Patch
		t    types.PatchType
		want string
	}{
		{"MergeFrom", MergeFrom(orig), types.MergePatchType, `{"data":{"a":"2"},"metadata":{"resourceVersion":"9"}}`},
		{"MergeFromWithOptimisticLock", MergeFromWithOptimisticLock(orig), types.MergePatchType, `{"data":{"a":"2"},"metadata":{"resourceVersion":"7"}}`},
		{"StrategicMergeFrom", StrategicMergeFrom(orig), types.StrategicMergePatchType, `{"data":{"a":"2"},"metadata":{"resourceVersion":"9"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.p.Data(mod)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tc.want || tc.p.Type() != tc.t {
				t.Fatalf("%s %s, want %s %s", tc.p.Type(), data, tc.t, tc.want)
			}
			if orig.ResourceVersion != "7" || mod.ResourceVersion != "9" {
				t.Fatalf("objects changed: %s %s", orig.ResourceVersion, mod.ResourceVersion)
			}
		})
	}
	var nilCM *corev1.ConfigMap
	for _, p := range []Patch{MergeFromWithOptimisticLock(nilCM), StrategicMergeFrom(nilCM)} {
		if _, err := p.Data(mod); err == nil {
			t.Fatalf("%s from nil: no error", p.Type())
		}
	}
}

// StrategicMergeFrom merges a Deployment's containers by name (changing
// one keeps the other, where a merge patch would replace the list); from
// an unstructured object it is an error before any request, and a custom
// resource's server answers 415, as with controller-runtime.
func TestStrategicMergeFrom(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		testcrd.AddToScheme(scheme)
		e := newEnvScheme(t, ae, scheme)
		w, r := e.c, e.c.Uncached()
		ns := e.Namespace
		labels := map[string]string{"app": "smp"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smp"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{
						{Name: "app", Image: "app:1"},
						{Name: "sidecar", Image: "sidecar:1"},
					}},
				},
			},
		}
		if err := w.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		// The patch names the app container only: what the caller knows
		// of (say, a sidecar injected since is not in its copy).
		orig := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smp"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}}}
		mod := orig.DeepCopy()
		mod.Spec.Template.Spec.Containers[0].Image = "app:2"
		data, err := StrategicMergeFrom(orig).Data(mod)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"$setElementOrder/containers"`) {
			t.Fatalf("patch %s: not a strategic one", data)
		}
		if err := w.Patch(ctx, mod, StrategicMergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		var got appsv1.Deployment
		if err := r.Get(ctx, KeyOf(d), &got); err != nil {
			t.Fatal(err)
		}
		cs := got.Spec.Template.Spec.Containers
		if len(cs) != 2 || cs[0].Name != "app" || cs[0].Image != "app:2" || cs[1].Name != "sidecar" || cs[1].Image != "sidecar:1" {
			t.Fatalf("containers after the strategic merge patch: %+v", cs)
		}
		// A merge patch replaces the list: the contrast that makes the
		// test mean something.
		orig.Spec.Template.Spec.Containers[0].Image = "app:2"
		mod = orig.DeepCopy()
		mod.Spec.Template.Spec.Containers[0].Image = "app:3"
		if err := w.Patch(ctx, mod, MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		if err := r.Get(ctx, KeyOf(d), &got); err != nil {
			t.Fatal(err)
		}
		if cs := got.Spec.Template.Spec.Containers; len(cs) != 1 || cs[0].Image != "app:3" {
			t.Fatalf("containers after the merge patch: %+v", cs)
		}

		// Unstructured: no patch metadata, an error before any request.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		if err := r.Get(ctx, KeyOf(d), u); err != nil {
			t.Fatal(err)
		}
		um := u.DeepCopy()
		if err := unstructured.SetNestedField(um.Object, int64(2), "spec", "replicas"); err != nil {
			t.Fatal(err)
		}
		if err := w.Patch(ctx, um, StrategicMergeFrom(u)); err == nil || apierrors.ReasonForError(err) != metav1.StatusReasonUnknown {
			t.Fatalf("strategic merge patch from unstructured: %v, want a client-side error", err)
		}

		// A custom resource: the server refuses the media type.
		if err := testcrd.Install(ctx, e.cfg); err != nil {
			t.Fatal(err)
		}
		wd := &testcrd.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}, Spec: testcrd.WidgetSpec{Color: "red"}}
		testutil.Eventually(t, "the CRD served", func() error {
			err := w.Create(ctx, wd)
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				return err
			}
			if err != nil {
				t.Fatal(err)
			}
			return nil
		})
		wm := wd.DeepCopyObject().(*testcrd.Widget)
		wm.Spec.Color = "blue"
		if err := w.Patch(ctx, wm, StrategicMergeFrom(wd)); !apierrors.IsUnsupportedMediaType(err) {
			t.Fatalf("strategic merge patch of a custom resource: %v, want 415", err)
		}
		if err := w.Patch(ctx, wm, MergeFrom(wd)); err != nil || wm.Spec.Color != "blue" {
			t.Fatalf("merge patch of a custom resource: %v %+v", err, wm.Spec)
		}
	})
}
