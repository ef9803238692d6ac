package testcrd_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/internal/testcrd"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Install is idempotent (a second call finds the CRD and returns), and once
// it returns Widgets can be created and read back at once.
func TestInstall(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, func(t *testing.T, env *apiservertest.Env) {
		// Install's clients share client-go's cached transport of the
		// server: close its idle connections once done (the real server
		// outlives the test; goleak would report them).
		shared, err := rest.HTTPClientFor(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(shared.CloseIdleConnections)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := range 2 {
			start := time.Now()
			if err := testcrd.Install(ctx, env.Config()); err != nil {
				t.Fatalf("Install #%d: %v", i+1, err)
			}
			t.Logf("Install #%d returned after %v", i+1, time.Since(start))
		}
		dyn, err := dynamic.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": testcrd.GroupVersion.String(), "kind": "Widget",
			"metadata": map[string]any{"name": "w1"},
			"spec":     map[string]any{"color": "red", "size": int64(3)},
		}}
		widgets := dyn.Resource(testcrd.Resource).Namespace(env.Namespace)
		if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "red" {
			t.Fatalf("spec.color = %q, want red", color)
		}
	})
}

// Install gives up with the context.
func TestInstallHonoursContext(t *testing.T) {
	env := apiservertest.Start(t, apiservertest.Embedded, apiservertest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := testcrd.Install(ctx, env.Config()); err == nil {
		t.Fatal("Install with a cancelled context succeeded")
	}
}
