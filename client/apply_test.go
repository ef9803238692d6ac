package client

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testcrd"
	"kloop.dev/kloop/internal/testutil"
)

// managers returns the managers of obj's managedFields with their
// operations, "manager/Operation[/subresource]".
func managers(obj metav1.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	return out
}

// Apply of typed apply configurations: create, update, a conflict between
// two managers and its force, a field dropped from the configuration
// removed, the answer decoded into the configuration; on both servers.
func TestApplyTyped(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		e := newEnv(t, ae, Options{FieldOwner: "alice"})
		c, ns := e.c, e.Namespace

		cfg := corev1ac.ConfigMap("a", ns).WithLabels(map[string]string{"team": "x"}).WithData(map[string]string{"x": "1", "y": "2"})
		if err := c.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.UID == nil || cfg.ResourceVersion == nil || cfg.Data["x"] != "1" {
			t.Fatalf("answer not decoded into the configuration: %+v", cfg)
		}
		// bob sets alice's field to another value: a conflict naming her.
		err := c.Apply(ctx, corev1ac.ConfigMap("a", ns).WithData(map[string]string{"x": "other"}), FieldOwner("bob"))
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "alice"`) || !strings.Contains(err.Error(), ".data.x") {
			t.Fatalf("conflicting apply: %v, want a Conflict naming alice and .data.x", err)
		}
		if err := c.Apply(ctx, corev1ac.ConfigMap("a", ns).WithData(map[string]string{"x": "other"}), FieldOwner("bob"), ForceOwnership()); err != nil {
			t.Fatal(err)
		}
		// alice's next configuration leaves out y and the label: both go.
		cfg = corev1ac.ConfigMap("a", ns).WithData(map[string]string{"z": "3"})
		if err := c.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		var got corev1.ConfigMap
		if err := c.Uncached().Get(ctx, ObjectKey{Namespace: ns, Name: "a"}, &got); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"x": "other", "z": "3"}; !equalMaps(got.Data, want) || len(got.Labels) != 0 {
			t.Fatalf("data %v labels %v, want %v and none", got.Data, got.Labels, want)
		}
		if m := strings.Join(managers(&got), ","); m != "alice/Apply,bob/Apply" {
			t.Fatalf("managers %s", m)
		}

		// A Deployment with its status, through the status writer.
		d := appsv1ac.Deployment("d", ns).WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(2).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "d"})).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(map[string]string{"app": "d"}).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("c").WithImage("nginx")))))
		if err := c.Apply(ctx, d); err != nil {
			t.Fatal(err)
		}
		st := appsv1ac.Deployment("d", ns).WithStatus(appsv1ac.DeploymentStatus().WithReplicas(2).WithObservedGeneration(1))
		if err := c.Status().Apply(ctx, st, FieldOwner("ctrl")); err != nil {
			t.Fatal(err)
		}
		if st.Status == nil || st.Status.Replicas == nil || *st.Status.Replicas != 2 || st.Spec == nil || *st.Spec.Replicas != 2 {
			t.Fatalf("status apply answered %+v", st)
		}
		var dep appsv1.Deployment
		if err := c.Uncached().Get(ctx, ObjectKey{Namespace: ns, Name: "d"}, &dep); err != nil {
			t.Fatal(err)
		}
		if m := strings.Join(managers(&dep), ","); m != "alice/Apply,ctrl/Apply/status" {
			t.Fatalf("managers %s", m)
		}
		// A dry run changes nothing.
		if err := c.Apply(ctx, corev1ac.ConfigMap("dry", ns).WithData(map[string]string{"k": "v"}), DryRun()); err != nil {
			t.Fatal(err)
		}
		if err := c.Uncached().Get(ctx, ObjectKey{Namespace: ns, Name: "dry"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after a dry run: %v, want NotFound", err)
		}
	})
}

// Apply of unstructured objects, for a custom resource, on both servers.
func TestApplyUnstructuredCustomResource(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, ae *apiservertest.Env) {
		ctx := timeout(t)
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		testcrd.AddToScheme(scheme)
		e := newEnvScheme(t, ae, scheme)
		c, ns := e.c, e.Namespace
		if err := testcrd.Install(ctx, e.cfg); err != nil {
			t.Fatal(err)
		}
		widget := func(spec map[string]any) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": ns},
				"spec":     spec,
			}}
		}
		w := widget(map[string]any{"color": "red", "size": int64(3)})
		testutil.Eventually(t, "the CRD served", func() error {
			err := c.Apply(ctx, ApplyConfigurationFromUnstructured(w), FieldOwner("alice"))
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				return err
			}
			if err != nil {
				t.Fatal(err)
			}
			return nil
		})
		if w.GetUID() == "" || w.GetResourceVersion() == "" {
			t.Fatalf("answer not decoded: %v", w.Object)
		}
		err := c.Apply(ctx, ApplyConfigurationFromUnstructured(widget(map[string]any{"color": "blue"})), FieldOwner("bob"))
		if !apierrors.IsConflict(err) {
			t.Fatalf("conflicting apply: %v, want a Conflict", err)
		}
		if err := c.Apply(ctx, ApplyConfigurationFromUnstructured(widget(map[string]any{"image": "i"})), FieldOwner("bob")); err != nil {
			t.Fatal(err)
		}
		var got testcrd.Widget
		if err := c.Uncached().Get(ctx, ObjectKey{Namespace: ns, Name: "w"}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec != (testcrd.WidgetSpec{Color: "red", Size: 3, Image: "i"}) {
			t.Fatalf("spec %+v", got.Spec)
		}
		if m := strings.Join(managers(&got), ","); m != "alice/Apply,bob/Apply" {
			t.Fatalf("managers %s", m)
		}
	})
}

// Apply refuses what it cannot send, before any request, with errors
// that say why.
func TestApplyBadInput(t *testing.T) {
	// Nothing is sent: a server that is not there.
	c, err := New(&rest.Config{Host: "http://127.0.0.1:1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		config ApplyConfiguration
		opts   []WriteOption
		want   string
	}{
		{"nil", nil, nil, "nil apply configuration"},
		{"nil typed", (*corev1ac.ConfigMapApplyConfiguration)(nil), nil, "nil apply configuration"},
		{"nil unstructured", ApplyConfigurationFromUnstructured(nil), nil, "nil apply configuration"},
		{"no field manager", corev1ac.ConfigMap("a", "ns"), nil, "needs a field manager"},
		{"no name", corev1ac.ConfigMap("", "ns"), []WriteOption{FieldOwner("m")}, "has no name"},
		{"no kind", &corev1ac.ConfigMapApplyConfiguration{}, []WriteOption{FieldOwner("m")}, "no apiVersion or kind"},
		{"bad apiVersion", ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "a/b/c", "kind": "K", "metadata": map[string]any{"name": "n"}}}), []WriteOption{FieldOwner("m")}, "apiVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Apply(ctx, tc.config, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			var st apierrors.APIStatus
			if !errors.As(err, &st) && tc.name != "nil" && !strings.HasPrefix(tc.name, "nil ") {
				t.Errorf("%v is not a Status error", err)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
