package builder_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"kloop.dev/kloop/apiserver/apiservertest"
	"kloop.dev/kloop/builder"
	"kloop.dev/kloop/internal/testutil"
	"kloop.dev/kloop/manager"
	"kloop.dev/kloop/reconcile"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// gadgetCRD is a namespaced CRD of kind Gadget in group, of a group of its
// own per test so that the shared real server's other tests never see it.
func gadgetCRD(group string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
}

// lockedBuffer is a log sink the manager's goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// A controller started before its CRD exists waits for it (readyz and the
// log say so), reconciles once the CRD is created, and survives the CRD's
// deletion and re-creation: its informer stops, the controller waits
// again, and reconciles resume with the new CRD's objects.
func TestControllerFollowsCRD(t *testing.T) {
	apiservertest.ForEachTarget(t, apiservertest.Options{}, testControllerFollowsCRD)
}

func testControllerFollowsCRD(t *testing.T, env *apiservertest.Env) {
	ns := env.Namespace
	group := fmt.Sprintf("g%d.crdwait.example.com", time.Now().UnixNano())
	gvk := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}
	var logs lockedBuffer
	mgr, err := manager.New(env.Config(), manager.Options{
		HealthProbeBindAddress: "127.0.0.1:0",
		Logger:                 slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards seen
	seen := map[string]bool{}
	r := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		mu.Lock()
		seen[req.Name] = true
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	reconciled := func(name string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return seen[name] }
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := builder.ControllerManagedBy(mgr).For(obj).Complete(r); err != nil {
		t.Fatalf("Build of a controller whose CRD does not exist: %v", err)
	}
	start(t, mgr)
	t.Cleanup(mgr.Factory().HTTPClient().CloseIdleConnections)

	readyz := func() (int, string) {
		resp, err := http.Get("http://" + mgr.HealthProbeAddr().String() + "/readyz/controller-gadget")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	want := fmt.Sprintf("waiting for kind Gadget.%s/v1 to be served (its CRD does not exist)", group)
	waitingReported := func() bool {
		code, body := readyz()
		return code == http.StatusInternalServerError && strings.Contains(body, want)
	}
	testutil.Eventually(t, "readyz to report the wait", waitingReported)

	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds := dyn.Resource(crdGVR)
	gadgets := dyn.Resource(gvk.GroupVersion().WithResource("gadgets")).Namespace(ns)
	install := func() {
		t.Helper()
		if _, err := crds.Create(ctx, gadgetCRD(group), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createGadget := func(name string) {
		t.Helper()
		g := &unstructured.Unstructured{}
		g.SetGroupVersionKind(gvk)
		g.SetName(name)
		// Right after the CRD's creation the server may not serve it yet.
		testutil.Eventually(t, "create "+name, func() bool {
			_, err := gadgets.Create(ctx, g, metav1.CreateOptions{})
			return err == nil
		})
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), "gadgets."+group, metav1.DeleteOptions{}) })

	install()
	createGadget("g1")
	testutil.Eventually(t, "the reconcile of g1", reconciled("g1"))
	testutil.Eventually(t, "readyz to pass", func() bool { code, _ := readyz(); return code == http.StatusOK })

	// The CRD goes: its objects with it, then the kind.
	if err := crds.Delete(ctx, "gadgets."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the CRD gone", func() bool {
		_, err := crds.Get(ctx, "gadgets."+group, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	testutil.Eventually(t, "readyz to report the wait again", waitingReported)

	install()
	createGadget("g2")
	testutil.Eventually(t, "the reconcile of g2", reconciled("g2"))
	testutil.Eventually(t, "readyz to pass again", func() bool { code, _ := readyz(); return code == http.StatusOK })
	// Two waits, each logged once (not once per poll).
	if n := logs.count("waiting for kind Gadget." + group); n != 2 {
		t.Errorf("the wait was logged %d times, want 2 (once per wait):\n%s", n, logs.String())
	}
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FailOnMissingKind fails Build for a kind the server does not serve, as
// controller-runtime does.
func TestFailOnMissingKind(t *testing.T) {
	env := apiservertest.Start(t, apiservertest.Embedded, apiservertest.Options{})
	mgr := newManager(t, env)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "missing.example.com", Version: "v1", Kind: "Gadget"})
	r := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
	err := builder.ControllerManagedBy(mgr).FailOnMissingKind().For(obj).Complete(r)
	if err == nil || !strings.Contains(err.Error(), "FailOnMissingKind") {
		t.Fatalf("Build = %v, want the missing kind's error", err)
	}
	mgr.Factory().HTTPClient().CloseIdleConnections()
}
